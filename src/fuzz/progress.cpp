#include "fuzz/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ostream>

namespace inboxsim {

namespace {

constexpr auto kRedrawInterval = std::chrono::milliseconds(200);
// Too early to say: below this much of the work, or of a second, the rate means little.
constexpr double kFractionForEstimateMin = 0.001;
constexpr double kSecondsForEstimateMin = 1.0;

}  // namespace

std::string duration_text(double seconds) {
  const auto whole = static_cast<int64_t>(std::ceil(std::max(0.0, seconds)));
  char text[48];
  if (whole < 60) {
    std::snprintf(text, sizeof text, "%lld s", static_cast<long long>(whole));
  } else if (whole < 3600) {
    std::snprintf(text, sizeof text, "%lld min %02lld s", static_cast<long long>(whole / 60),
                  static_cast<long long>(whole % 60));
  } else {
    std::snprintf(text, sizeof text, "%lld h %02lld min", static_cast<long long>(whole / 3600),
                  static_cast<long long>(whole % 3600 / 60));
  }
  return text;
}

ProgressLine::ProgressLine(std::ostream& stream, std::string what)
    : stream_(stream), what_(std::move(what)) {
  const char* first_ms = std::getenv("INBOXSIM_PROGRESS_FIRST_MS");
  if (first_ms != nullptr && first_ms[0] != '\0') {
    first_draw_after_ = std::chrono::milliseconds(std::strtoll(first_ms, nullptr, 10));
  }
}

ProgressLine::~ProgressLine() {
  // Erase the line: what stays on the terminal is the command's own output.
  if (shown_) stream_ << "\r\033[K" << std::flush;
}

void ProgressLine::clear() {
  std::lock_guard lock(mutex_);
  if (shown_) stream_ << "\r\033[K" << std::flush;
  shown_ = false;
  last_ = {};
}

double ProgressLine::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void ProgressLine::update(const std::string& counters, double fraction_done) {
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < kRedrawInterval || now - start_ < first_draw_after_) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::string left = "time left: estimating";
  if (fraction_done >= 1.0) {
    left = "finishing";
  } else if (fraction_done >= kFractionForEstimateMin && elapsed >= kSecondsForEstimateMin) {
    left = duration_text(elapsed * (1.0 - fraction_done) / fraction_done) + " left";
  } else if (fraction_done < 0) {
    left = duration_text(elapsed) + " so far";
  }
  stream_ << "\r\033[K" << what_ << ": " << counters << ", " << left << std::flush;
  shown_ = true;
}

}  // namespace inboxsim
