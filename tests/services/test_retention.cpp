// Retention: what a long run keeps per transfer is released once the transfer is
// settled and its retention has passed: the account outbox in every inbox mode, the transfer
// outbox's sent rows, the dedupe records. The business data (sagas, ledger) stays, and a late
// duplicate is still stopped by the second line of defence.
#include <SQLiteCpp/SQLiteCpp.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "support/scenarios.h"
#include "scenario/parse.h"
#include "scenario/runner.h"
#include "world/retention.h"

using namespace inboxsim;
using inboxsim::testing::parse_ok;
using inboxsim::testing::TemporaryDirectory;

namespace {

int64_t count_rows(const std::filesystem::path& file, const std::string& sql) {
  SQLite::Database db(file.string(), SQLite::OPEN_READONLY);
  return db.execAndGet(sql).getInt64();
}

// Two transfers settle, virtual time passes `advance_ms`, and a copy of t1's request is
// published again by hand.
std::string story(const std::string& inbox, int64_t advance_ms) {
  return R"({
    "name": "retention",
    "seed": 3,
    "config": { "account.inbox": ")" +
         inbox + R"(" },
    "accounts": { "alice": 10000, "bob": 0 },
    "steps": [
      { "transfer": { "id": "t1", "from": "alice", "to": "bob", "amount": 100 } },
      { "transfer": { "id": "t2", "from": "alice", "to": "bob", "amount": 200 } },
      { "run": { "until": "quiescent" } },
      { "advance": { "ms": )" +
         std::to_string(advance_ms) + R"( } },
      { "fault": { "kind": "duplicate", "match": { "type": "Transfer.Requested",
                                                   "transfer": "t1" } } },
      { "run": { "until": "quiescent" } }
    ]
  })";
}

// Whether `service` ran a cleanup that deleted rows of `what` (its dedupe records or its outbox).
bool has_cleanup(const RunResult& result, const std::string& service, CleanupOf what) {
  return std::any_of(result.events.begin(), result.events.end(), [&](const TraceEvent& e) {
    return e.kind == EventKind::cleanup && e.service == service && e.cleaned == what &&
           e.rows_deleted > 0;
  });
}

}  // namespace

TEST_CASE("retention: the account outbox is cleaned in every inbox mode, not only with rows",
          "[retention]") {
  // In these modes no inbox row is ever deleted, which once rolled the outbox delete back.
  for (const std::string inbox : {"none", "external-after", "external-before", "masstransit",
                                  "marten"}) {
    CAPTURE(inbox);
    const TemporaryDirectory dir("inboxsim-test-retention-" + inbox);
    RunOptions options;
    options.db_dir = dir.path.string();
    const RunResult result = run_scenario(parse_ok(story(inbox, 2 * 1'800'000)), options);
    REQUIRE(result.violations.empty());
    REQUIRE(result.balances.at("alice") == 9700);
    const auto file = dir.path / "retention.account-service.sqlite";
    // The duplicate's own outbox row (if it produced one) is younger than the window.
    REQUIRE(count_rows(file, "SELECT COUNT(*) FROM outbox WHERE created_ms < 3600000") == 0);
    REQUIRE(count_rows(file, "SELECT COUNT(*) FROM ledger") == 4);
    if (inbox == "none" || inbox.rfind("external", 0) == 0) {
      REQUIRE(has_cleanup(result, "account-service", CleanupOf::outbox));
    }
  }
}

TEST_CASE("retention: the transfer outbox's sent rows go with the TTL, unsent ones stay",
          "[retention]") {
  const TemporaryDirectory dir("inboxsim-test-retention-transfer");
  RunOptions options;
  options.db_dir = dir.path.string();
  std::string text = story("masstransit", 2 * 86'400'000);
  const RunResult result = run_scenario(parse_ok(text), options);
  REQUIRE(result.violations.empty());
  REQUIRE(has_cleanup(result, "transfer-service", CleanupOf::outbox));
  REQUIRE(has_cleanup(result, "transfer-service", CleanupOf::dedupe_records));
  const auto file = dir.path / "retention.transfer-service.sqlite";
  REQUIRE(count_rows(file, "SELECT COUNT(*) FROM outbox") == 0);
  REQUIRE(count_rows(file, "SELECT COUNT(*) FROM processed_messages") == 0);
  // The sagas are business data: they stay, and the late duplicate changed nothing.
  REQUIRE(count_rows(file, "SELECT COUNT(*) FROM sagas WHERE state = 'COMPLETED'") == 2);
  REQUIRE(result.balances.at("bob") == 300);

  // Within the TTL nothing of it is deleted.
  const TemporaryDirectory young("inboxsim-test-retention-transfer-young");
  options.db_dir = young.path.string();
  const RunResult kept = run_scenario(parse_ok(story("masstransit", 3'600'000)), options);
  REQUIRE_FALSE(has_cleanup(kept, "transfer-service", CleanupOf::outbox));
  REQUIRE(count_rows(young.path / "retention.transfer-service.sqlite",
                     "SELECT COUNT(*) FROM outbox WHERE sent_ms IS NOT NULL") >= 4);
}

TEST_CASE("retention: a pass is due each cleanup interval, and one pass catches up missed ticks",
          "[retention]") {
  Config config;
  Retention retention(config);
  CHECK(retention.next_tick_ms() == kCleanupIntervalMs);
  CHECK_FALSE(retention.take_due(kCleanupIntervalMs - 1));
  CHECK(retention.take_due(kCleanupIntervalMs) == std::optional<int64_t>(kCleanupIntervalMs));
  CHECK(retention.next_tick_ms() == 2 * kCleanupIntervalMs);
  CHECK_FALSE(retention.take_due(kCleanupIntervalMs));  // that tick's pass has run
  // A world paused past three ticks runs one pass, for the latest of them, and goes on from it.
  CHECK(retention.take_due(4 * kCleanupIntervalMs + 5) ==
        std::optional<int64_t>(4 * kCleanupIntervalMs));
  CHECK(retention.next_tick_ms() == 5 * kCleanupIntervalMs);
  // The TTL monitor runs on its own, coarser interval.
  CHECK(Retention::ttl_monitor_tick(kTtlMonitorIntervalMs + 3 * kCleanupIntervalMs) ==
        kTtlMonitorIntervalMs);
}

TEST_CASE("retention: a pass's words name what the inbox keeps and for how long",
          "[retention]") {
  Config config;
  config.account_inbox_window_ms = 1234;
  config.account_keep_after_handling_ms = 5678;
  config.transfer_processed_ttl_ms = 91011;
  config.account_inbox = AccountInbox::masstransit;
  const Retention retention(config);
  CHECK_THAT(retention.account_inbox_words(),
             Catch::Contains("inbox") && Catch::Contains("1234 ms"));
  CHECK_THAT(retention.account_outbox_words(),
             Catch::Contains("outbox") && Catch::Contains("1234 ms"));
  CHECK_THAT(retention.transfer_processed_words(),
             Catch::Contains("processed_messages") && Catch::Contains("91011 ms"));
  CHECK_THAT(retention.transfer_outbox_words(),
             Catch::Contains("outbox") && Catch::Contains("91011 ms"));
  // Marten's documents and Wolverine's envelopes are kept KeepAfterMessageHandling, not the
  // window.
  config.account_inbox = AccountInbox::marten;
  CHECK_THAT(Retention(config).account_inbox_words(),
             Catch::Contains("KeepAfterMessageHandling") && Catch::Contains("5678 ms") &&
                 !Catch::Contains("1234"));
  config.account_inbox = AccountInbox::wolverine;
  CHECK_THAT(Retention(config).account_inbox_words(),
             Catch::Contains("wolverine_incoming_envelopes") && Catch::Contains("5678 ms"));
}
