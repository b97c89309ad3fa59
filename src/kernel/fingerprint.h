// A 128-bit state fingerprint, built by feeding values in a fixed order.
//
// The explorer (`inboxsim explore`) treats two states as one when their fingerprints are equal,
// so a fingerprint must tell apart every two states whose futures can differ. Two independent
// 64-bit lanes (each a multiply-xorshift mix of every word fed) make an accidental collision
// among the few million states of an exploration negligible (about n^2 / 2^129).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace inboxsim {

// FNV-1a 64 of a string: a cheap spread for hash tables and file names, not a state
// fingerprint (two strings may share it).
inline uint64_t fnv1a(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

struct Fingerprint {
  uint64_t high = 0;
  uint64_t low = 0;

  friend bool operator==(const Fingerprint&, const Fingerprint&) = default;
  friend auto operator<=>(const Fingerprint&, const Fingerprint&) = default;
};

// What a canonical fingerprint renames (World::canonical_fingerprint): while one is in force on
// a thread (NameCanon::Scope), every string a Hasher takes there is first given to it, and the
// names in it that only tell things apart by when they were made (message ids) are replaced by
// names that do not depend on that order.
class NameCanon {
 public:
  virtual ~NameCanon() = default;
  // Writes `text` with its names replaced into `out` and returns true; false: `text` as it is.
  virtual bool rename(std::string_view text, std::string& out) const = 0;

  class Scope {
   public:
    explicit Scope(const NameCanon* canon) : outer_(current()) { current() = canon; }
    ~Scope() { current() = outer_; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    const NameCanon* outer_;
  };
  static const NameCanon*& current() {
    thread_local const NameCanon* canon = nullptr;
    return canon;
  }
};

// splitmix64's finaliser: every input bit reaches every output bit.
inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

class Hasher {
 public:
  Hasher& add(uint64_t word) {
    a_ = mix64(a_ ^ word) + kStepA;
    b_ = mix64(b_ + word * kStepB) ^ (b_ >> 29);
    ++words_;
    return *this;
  }
  Hasher& add_signed(int64_t value) { return add(static_cast<uint64_t>(value)); }
  Hasher& add(bool value) { return add(static_cast<uint64_t>(value ? 1 : 0)); }
  // Strings are length-prefixed, so ("ab", "c") and ("a", "bc") differ.
  Hasher& add(std::string_view text) {
    if (const NameCanon* canon = NameCanon::current(); canon != nullptr) {
      std::string renamed;
      if (canon->rename(text, renamed)) return add_text(renamed);
    }
    return add_text(text);
  }
  Hasher& add(const char* text) { return add(std::string_view(text)); }
  Hasher& add(const Fingerprint& print) { return add(print.high).add(print.low); }

  Fingerprint finish() const {
    return Fingerprint{mix64(a_ ^ words_), mix64(b_ + (words_ << 1) + 1)};
  }

 private:
  Hasher& add_text(std::string_view text) {
    add(static_cast<uint64_t>(text.size()));
    size_t at = 0;
    for (; at + 8 <= text.size(); at += 8) {
      uint64_t word = 0;
      std::memcpy(&word, text.data() + at, 8);
      add(word);
    }
    if (at < text.size()) {
      uint64_t word = 0;
      std::memcpy(&word, text.data() + at, text.size() - at);
      add(word);
    }
    return *this;
  }

  static constexpr uint64_t kStepA = 0x9e3779b97f4a7c15ULL;
  static constexpr uint64_t kStepB = 0xd6e8feb86659fd93ULL;

  uint64_t a_ = 0x243f6a8885a308d3ULL;
  uint64_t b_ = 0x13198a2e03707344ULL;
  uint64_t words_ = 0;
};

}  // namespace inboxsim
