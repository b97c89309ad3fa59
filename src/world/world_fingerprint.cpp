// World's fingerprints: the state's identity between two events and the identities of the jobs,
// handlers and deliveries it is made of (docs/model.md, "Exploration").
#include <algorithm>
#include <variant>
#include <vector>

#include "kernel/assert.h"
#include "world/world.h"

namespace inboxsim {

// Exploration's state identity (docs/model.md, "Exploration"). Everything that decides what can
// happen next goes in; ids that only name things (delivery ids, handler ids, incarnations,
// publishing channels) go in as what they point at or as "current or stale", so that two orders
// that reach the same state by different paths meet. Sets with no order (pending events,
// running handlers) go in sorted.
Fingerprint World::canonical_fingerprint() {
  struct Restore {
    bool& flag;
    ~Restore() { flag = false; }
  } restore{canonical_only_};  // fingerprint() may throw (a database read)
  canonical_only_ = true;
  const NameCanon::Scope names(names_canonical_ ? &message_names_ : nullptr);
  return fingerprint();
}

Fingerprint World::final_fingerprint() {
  return names_canonical_ ? canonical_fingerprint() : fingerprint();
}

bool World::broker_counters_in_fingerprint() const {
  return explorer_.control().keep_broker_counters && !canonical_only_;
}

Fingerprint World::fingerprint() {
  // The rows read here are the explorer's reading, no event's.
  const SqlFootprint::Quiet quiet(sql_footprint_.get());
  Hasher hasher;
  hasher.add_signed(now_ms()).add_signed(retention_.next_tick_ms());
  bool first[2] = {true, true};
  for (const Process& instance : processes_) {
    const size_t service = static_cast<size_t>(instance.service);
    hasher.add(instance.up);
    // Each loop's flag is also implied by its pending job of this incarnation; every loop's goes
    // in, so that no loop's turn rests on that.
    for (const Loop loop : {Loop::relay, Loop::sweep, Loop::durability}) {
      hasher.add(instance.loop_pending(loop));
    }
    hasher.add_signed(instance.paused_until_ms).add_signed(instance.restart_after_ms);
    const bool canonical = canonical_only_ && names_canonical_;
    if (instance.account) instance.account->fingerprint(hasher, first[service], canonical);
    if (instance.transfer) instance.transfer->fingerprint(hasher, first[service], canonical);
    first[service] = false;
  }
  broker_->fingerprint(hasher);
  if (broker_counters_in_fingerprint()) broker_->fingerprint_counters(hasher);
  checker_.fingerprint(hasher);
  faults_.fingerprint(hasher);
  hasher.add_signed(explorer_.outcome().faults_injected);
  hasher.add_signed(explorer_.outcome().ack_wait_expiries);
  hasher.add(next_message_number_).add(static_cast<uint64_t>(processes_.next_request()));
  if (names_canonical_ && !canonical_only_) message_names_.fingerprint(hasher);
  fingerprint_keyed_by_ids(hasher);
  std::vector<Fingerprint> running;
  for (const auto& [id, handler] : handlers_) running.push_back(fingerprint_handler(id));
  std::sort(running.begin(), running.end());
  hasher.add(static_cast<uint64_t>(running.size()));
  for (const Fingerprint& print : running) hasher.add(print);
  std::vector<Fingerprint> pending;
  for (const Job& job : scheduler_.pending()) pending.push_back(fingerprint_job(job));
  std::sort(pending.begin(), pending.end());
  hasher.add(static_cast<uint64_t>(pending.size()));
  for (const Fingerprint& print : pending) hasher.add(print);
  return hasher.finish();
}

// The records kept by message id (publications, seen-sets, the relay's awaited confirms, row
// locks). Sets kept in the order of their ids' numbers: a canonical fingerprint, which renames
// the ids, reads them as sets of renamed entries, so that the order of the numbers is not read.
void World::fingerprint_keyed_by_ids(Hasher& hasher) const {
  const bool renamed = canonical_only_ && names_canonical_;
  std::vector<Fingerprint> entries;
  const auto add_entries = [&]() {
    std::sort(entries.begin(), entries.end());
    hasher.add(static_cast<uint64_t>(entries.size()));
    for (const Fingerprint& entry : entries) hasher.add(entry);
    entries.clear();
  };
  for (const auto& [type, id] : publications_.published_ids()) {
    if (renamed) {
      entries.push_back(Hasher().add(static_cast<uint64_t>(type)).add(id).finish());
    } else {
      hasher.add(static_cast<uint64_t>(type)).add(id);
    }
  }
  if (renamed) add_entries();
  for (const ServiceShared& shared : shared_) {
    const ExternalSeenStore& store = shared.seen_store;
    hasher.add(static_cast<uint64_t>(store.keys().size()));
    for (const std::string& key : store.keys()) {
      if (renamed) {
        entries.push_back(Hasher().add(key).finish());
      } else {
        hasher.add(key);
      }
    }
    if (renamed) add_entries();
  }
  for (const auto& [key, message] : confirms_.awaiting()) {
    hasher.add(static_cast<uint64_t>(key.first)).add_signed(key.second);
    fingerprint_message(hasher, *message);
  }
  for (const ServiceShared& shared : shared_) {
    const RowLocks& locks = shared.locks;
    for (const auto& [key, holders] : locks.snapshot()) {
      Hasher lock;
      Hasher& into = renamed ? lock : hasher;
      into.add(key);
      for (const uint64_t handler : holders) into.add(fingerprint_handler(handler));
      if (renamed) entries.push_back(lock.finish());
    }
    if (renamed) add_entries();
  }
}

// A consumer's channel goes in as "still open" or not, never as its number: the broker and the
// client only ever compare it with the consumer's channel now (Broker::channel_still_open), and a
// channel once closed never opens again (a reconnect opens the next one). A delivery tag names
// an unacked delivery of an open channel; on a closed one it names nothing.
void World::fingerprint_channel(Hasher& hasher, size_t consumer, uint64_t channel,
                                int64_t delivery_tag) const {
  if (broker_counters_in_fingerprint()) {
    hasher.add(channel).add_signed(delivery_tag);
    return;
  }
  const bool open = broker_->channel_still_open(consumer, channel);
  hasher.add(open);
  if (open) hasher.add_signed(delivery_tag);
}

Fingerprint World::fingerprint_delivery(const Delivery& delivery) const {
  Hasher hasher;
  fingerprint_message(hasher, *delivery.message);
  hasher.add(static_cast<uint64_t>(delivery.consumer));
  fingerprint_channel(hasher, delivery.consumer, delivery.channel, delivery.delivery_tag);
  hasher.add(delivery.redelivered);
  hasher.add_signed(delivery.delivery_count).add_signed(delivery.attempts);
  return hasher.finish();
}

Fingerprint World::fingerprint_handler(uint64_t id) const {
  const ActiveHandler* found = handlers_.find(id);
  if (found == nullptr) return Fingerprint{};
  const ActiveHandler& handler = *found;
  Hasher hasher;
  hasher.add(static_cast<uint64_t>(handler.instance)).add(static_cast<uint64_t>(handler.attempt));
  hasher.add(fingerprint_delivery(handler.delivery));
  // A handler waiting for its retry has no task yet; a running one waits where `resume` says.
  hasher.add(handler.task.valid()).add(handler.resume);
  // The wolverine inbox's handler from its table acks nothing at its end (only there is it set,
  // so no other handler's fingerprint changes).
  if (handler.from_table) hasher.add(true);
  return hasher.finish();
}

// Each kind hashes the fields it has, in the order the flat job of before did, so that every
// fingerprint (and every search's pinned count) stays as it was.
Fingerprint World::fingerprint_job(const Job& job) const {
  Hasher hasher;
  hasher.add(static_cast<uint64_t>(job.kind())).add(static_cast<uint64_t>(job.instance));
  const Process& instance = processes_.at(job.instance);
  // Voided by a crash since it was scheduled, or not; never the incarnation's number.
  hasher.add_signed(job.incarnation == 0 ? 0 : job.incarnation == instance.incarnation ? 1 : 2);
  const auto settlement = [&](size_t consumer, uint64_t channel, int64_t delivery_tag) {
    hasher.add(static_cast<uint64_t>(consumer));
    fingerprint_channel(hasher, consumer, channel, delivery_tag);
  };
  std::visit(
      job::Overloaded{
          [&](const job::Deliver& deliver) {
            const auto found = wire_.in_flight().find(deliver.delivery_id);
            INBOXSIM_ASSERT(found != wire_.in_flight().end());
            hasher.add(fingerprint_delivery(found->second));
          },
          [&](const job::Ack& ack) { settlement(ack.consumer, ack.channel, ack.delivery_tag); },
          [&](const job::Nack& nack) {
            settlement(nack.consumer, nack.channel, nack.delivery_tag);
            if (nack.term) hasher.add(true);
          },
          [&](const job::Confirm& confirm) {
            hasher.add(confirm.channel == instance.publish_channel).add_signed(confirm.outbox_seq);
          },
          [&](const job::PublishNack& nack) {
            hasher.add(nack.channel == instance.publish_channel).add_signed(nack.outbox_seq);
          },
          // Every consumer hashes as the sentinel that once meant it did, size_t(-1).
          [&](const job::Reconnect& reconnect) {
            hasher.add(static_cast<uint64_t>(reconnect.consumer.value_or(static_cast<size_t>(-1))));
          },
          [&](const job::BrokerTimer& timer) { hasher.add(static_cast<uint64_t>(timer.consumer)); },
          [&](const job::Resume& resume) { hasher.add(fingerprint_handler(resume.handler)); },
          [&](const job::Retry& retry) { hasher.add(fingerprint_handler(retry.handler)); },
          // The loops, a restart, a heartbeat's timeout and a pause's end: whose they are is all.
          [](const auto&) {},
      },
      job.payload);
  return hasher.finish();
}

}  // namespace inboxsim
