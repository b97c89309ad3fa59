// A ServiceHost for the services' unit tests: it records what a service does, crashes it where
// told, and never suspends a handler.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "domain/participants.h"
#include "services/host.h"
#include "services/sql.h"

namespace inboxsim::testing {

// A ServiceHost that records what a service does and crashes it where told. Its step
// boundaries never suspend, so a handler runs to its end in one resume().
struct FakeHost final : ServiceHost {
  int64_t now = 0;
  int next_id = 100;
  std::optional<CrashPoint> crash_at;
  std::vector<MessagePtr> published;
  std::vector<int64_t> relay_seqs;
  std::vector<CommitRecord> commits;
  std::vector<TraceEvent> events;
  ExternalSeenStore store;
  bool lose_next_confirm = false;
  InstanceNames instance_names{participant::account_service, participant::relay,
                               participant::notifications};
  std::vector<std::string> locks_taken;
  std::vector<std::string> steps;  // the name of each step the handler went on to
  Coverage coverage;

  int64_t now_ms() const override { return now; }
  const InstanceNames& names() const override { return instance_names; }
  std::string next_message_id(const std::string& /*cause*/) override {
    return "m-" + std::to_string(next_id++);
  }
  void crash_point(CrashPoint point, const Message*) override {
    if (crash_at == point) {
      crash_at.reset();
      throw ServiceCrash{ServiceId::account, point};
    }
  }
  Suspend between_steps(CrashPointSet points, const Message& message, uint64_t,
                        std::string next) override {
    steps.push_back(std::move(next));
    if (crash_at && points.contains(*crash_at)) crash_point(*crash_at, &message);
    return Suspend{false};
  }
  Suspend lock_row(const std::string& key, uint64_t, std::string next) override {
    steps.push_back(std::move(next));
    locks_taken.push_back(key);
    return Suspend{false};
  }
  void unlock_row(const std::string&) override {}
  Suspend sleep(int64_t ms, uint64_t, std::string next) override {
    steps.push_back(std::move(next));
    now += ms;
    return Suspend{false};
  }
  PublishResult publish_and_confirm(const MessagePtr& message) override {
    published.push_back(message);
    if (lose_next_confirm) {
      lose_next_confirm = false;
      return PublishResult::lost;
    }
    return PublishResult::confirmed;
  }
  void relay_publish(const MessagePtr& message, int64_t seq) override {
    published.push_back(message);
    relay_seqs.push_back(seq);
  }
  void record(TraceEvent event) override { events.push_back(std::move(event)); }
  void email_sent(TraceEvent event) override { events.push_back(std::move(event)); }
  void reached(Probe probe) override { ++coverage[probe]; }
  void committed(const CommitRecord& record) override {
    commits.push_back(record);
    // As the World does: what a transaction noted reaches the trace only once it committed.
    for (const TraceEvent& event : record.events) events.push_back(event);
  }
  void schedule_relay_poll() override {}
  void schedule_account_outbox_sweep() override {}
  ExternalSeenStore& seen_store() override { return store; }
  int acks_now = 0;  // ack_now calls: the store-and-ack inbox acks before it handles
  int durability_polls_asked = 0;
  void ack_now() override { ++acks_now; }
  void schedule_durability_poll() override { ++durability_polls_asked; }

  // The service's connection: the host outlives the service in every test.
  std::unique_ptr<Connection> connection;

  int64_t dedupe_hits() const {
    return std::count_if(events.begin(), events.end(),
                         [](const TraceEvent& e) { return e.kind == EventKind::dedupe_hit; });
  }
};

// Runs a handler to its end (FakeHost never suspends it) and returns its outcome, or rethrows
// what it threw.
inline Outcome run(Task<Outcome> task) {
  const bool ended = task.resume();
  REQUIRE(ended);
  return task.result();
}

// A service instance on a fresh in-memory database with its schema.
template <typename Service>
Service make_service(FakeHost& host, const Config& config) {
  SQLite::Database db(":memory:", SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  Service::create_schema(db, config);
  host.connection = std::make_unique<Connection>(std::move(db));
  return Service(host, config, *host.connection);
}

}  // namespace inboxsim::testing
