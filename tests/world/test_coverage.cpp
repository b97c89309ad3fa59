// Coverage probes (docs/contract.md §8.3, docs/coverage.md): a scenario known to reach a moment counts
// it, one that does not counts zero, the counts agree with the trace and do not depend on
// whether the trace is kept, and a campaign sums them the same way for any number of jobs.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "support/scenarios.h"
#include "fuzz/campaign.h"
#include "fuzz/generator.h"
#include "fuzz/shrink.h"
#include "report/campaign_view.h"
#include "report/json_output.h"
#include "scenario/parse.h"
#include "scenario/runner.h"

using namespace inboxsim;
using inboxsim::testing::library_files;
using inboxsim::testing::library_scenario;

namespace {

RunResult run(const Scenario& scenario, bool keep_trace = true) {
  RunOptions options;
  options.keep_trace = keep_trace;
  return run_scenario(scenario, options);
}

// The probes a run reached, by name, with their counts (zeros left out).
std::map<std::string, int64_t> reached(const RunResult& result) {
  std::map<std::string, int64_t> out;
  for (size_t index = 0; index < kProbeCount; ++index) {
    const auto probe = static_cast<Probe>(index);
    if (result.coverage[probe] > 0) out[std::string(probe_name(probe))] = result.coverage[probe];
  }
  return out;
}

// The same as one line, "name=count, ...", so that a failed comparison reads well.
std::string reached_text(const std::map<std::string, int64_t>& counts) {
  std::string text;
  for (const auto& [name, count] : counts) {
    text += (text.empty() ? "" : ", ") + name + "=" + std::to_string(count);
  }
  return text;
}

int64_t count_events(const RunResult& result, EventKind kind) {
  return std::count_if(result.events.begin(), result.events.end(),
                       [&](const TraceEvent& e) { return e.kind == kind; });
}

}  // namespace

TEST_CASE("probe names are unique and parse back", "[coverage]") {
  std::set<std::string_view> names;
  for (size_t index = 0; index < kProbeCount; ++index) {
    const auto probe = static_cast<Probe>(index);
    const std::string_view name = probe_name(probe);
    REQUIRE(names.insert(name).second);
    REQUIRE(parse_probe(name) == probe);
    REQUIRE(std::string(probe_names_text()).find(name) != std::string::npos);
  }
  REQUIRE_FALSE(parse_probe("dedupe").has_value());
  REQUIRE_FALSE(parse_probe("").has_value());
}

TEST_CASE("docs/coverage.md explains every probe", "[coverage]") {
  std::ifstream file(INBOXSIM_SOURCE_DIR "/docs/coverage.md");
  REQUIRE(file);
  std::stringstream text;
  text << file.rdbuf();
  for (size_t index = 0; index < kProbeCount; ++index) {
    const std::string row = "| `" + std::string(probe_name(static_cast<Probe>(index))) + "` |";
    INFO(row);
    REQUIRE(text.str().find(row) != std::string::npos);
  }
}

TEST_CASE("a library scenario counts the moments it is known for, and nothing else", "[coverage]") {
  using Counts = std::map<std::string, int64_t>;
  const std::vector<std::pair<std::string, Counts>> known = {
      {"01-happy-path.json", {}},
      {"03-refund-closed-account.json", {{"saga.compensation", 1}}},
      {"08-lost-ack.json", {{"ack.lost", 1}, {"dedupe.masstransit", 1}}},
      {"09-crash-after-commit.json",
       {{"redelivery.after_commit", 1}, {"dedupe.processed_messages", 1}}},
      // The crash comes before the business commit: the redelivery is a first run, no probe.
      {"10-crash-between-inbox-steps.json", {}},
      {"11-outbox-sent-not-marked.json",
       {{"dedupe.masstransit_resend", 1},
        {"dedupe.processed_messages", 1},
        {"redelivery.after_commit", 1},
        {"republish.same_id", 1}}},
      {"16-lost-confirm.json",
       {{"confirm.lost", 1}, {"republish.same_id", 1}, {"dedupe.masstransit", 1}}},
      {"28-marten-inbox.json", {{"dedupe.marten_precheck", 2}, {"redelivery.after_commit", 1}}},
      {"30-marten-backstop.json", {{"dedupe.marten_backstop", 1}}},
      // Without the document's key the race goes through: no backstop, a double debit.
      {"31-marten-without-backstop.json", {{"saga.illegal_transition", 1}}},
      // The copy gets the row between #1's send pass and its delivered pass (one outbox message
      // per pass): consumed, not delivered, nothing left to send; then the two take turns once
      // more for the remove passes.
      {"32-masstransit-row-lock.json",
       {{"masstransit.row_lock", 3}, {"dedupe.masstransit_resend", 1}}},
      {"33-masstransit-concurrent-first-delivery.json",
       {{"masstransit.inbox_key", 1}, {"consumer.retry", 1}, {"dedupe.masstransit", 1}}},
      {"35-zombie-consumer.json", {{"ack.void", 1}, {"dedupe.processed_messages", 1}}},
      {"38-redrive-heals.json",
       {{"operator.redrive", 1},
        {"publish.nacked", 1},
        {"consumer.error_queued", 1},
        {"dedupe.masstransit_resend", 1}}},
      {"39-retry-absorbs-transient.json", {{"consumer.retry", 2}}},
      {"40-poison-quorum-queue.json", {{"broker.dead_lettered", 1}, {"consumer.nack", 21}}},
      {"42-publish-nacked.json", {{"publish.nacked", 1}}},
      {"14-window-too-short.json",
       {{"retention.cleanup", 1}, {"ledger.key_rejected", 1}, {"consumer.error_queued", 1}}},
  };
  for (const auto& [file, counts] : known) {
    DYNAMIC_SECTION(file) {
      REQUIRE(reached_text(reached(run(library_scenario(file)))) == reached_text(counts));
    }
  }
}

TEST_CASE("each dedupe mode counts the duplicates it catches under its own name", "[coverage]") {
  // 05 hands account-service a duplicate Transfer.Requested, 04 transfer-service a duplicate
  // Account.Debited, each after the original was handled.
  const std::vector<std::tuple<std::string, std::string, std::string, std::string>> modes = {
      {"05-duplicate-by-hand.json", "account.inbox", "masstransit", "dedupe.masstransit"},
      {"05-duplicate-by-hand.json", "account.inbox", "marten", "dedupe.marten_precheck"},
      {"05-duplicate-by-hand.json", "account.inbox", "external-before",
       "dedupe.account_external_before"},
      {"05-duplicate-by-hand.json", "account.inbox", "external-after",
       "dedupe.account_external_after"},
      {"05-duplicate-by-hand.json", "account.inbox", "none", ""},
      {"04-two-identical-deliveries.json", "transfer.dedupe", "processed_messages",
       "dedupe.processed_messages"},
      {"04-two-identical-deliveries.json", "transfer.dedupe", "external-before",
       "dedupe.transfer_external_before"},
      {"04-two-identical-deliveries.json", "transfer.dedupe", "external-after",
       "dedupe.transfer_external_after"},
      {"04-two-identical-deliveries.json", "transfer.dedupe", "none", ""},
  };
  for (const auto& [file, key, value, expected] : modes) {
    DYNAMIC_SECTION(key << "=" << value) {
      Scenario scenario = library_scenario(file);
      REQUIRE(config_set_text(scenario.config, key, value).empty());
      const RunResult result = run(scenario);
      std::map<std::string, int64_t> dedupe;
      for (const auto& [name, count] : reached(result)) {
        if (name.rfind("dedupe.", 0) == 0) dedupe[name] = count;
      }
      REQUIRE(reached_text(dedupe) == (expected.empty() ? "" : expected + "=1"));
    }
  }
}

TEST_CASE("the counts agree with the trace and do not depend on keeping it", "[coverage]") {
  const std::vector<std::pair<EventKind, Probe>> one_to_one = {
      {EventKind::lock_wait, Probe::masstransit_row_lock},
      {EventKind::illegal_transition, Probe::saga_illegal_transition},
      {EventKind::ack_lost, Probe::ack_lost},
      {EventKind::ack_void, Probe::ack_void},
      {EventKind::confirm_lost, Probe::confirm_lost},
      {EventKind::publish_nacked, Probe::publish_nacked},
      {EventKind::retry, Probe::consumer_retry},
      {EventKind::nack, Probe::consumer_nack},
      {EventKind::error_queued, Probe::consumer_error_queued},
      {EventKind::dead_letter, Probe::broker_dead_lettered},
      {EventKind::redrive, Probe::operator_redrive},
      {EventKind::cleanup, Probe::retention_cleanup},
  };
  for (const std::string& file : library_files()) {
    DYNAMIC_SECTION(file) {
      const Scenario scenario = library_scenario(file);
      const RunResult kept = run(scenario, true);
      const RunResult unkept = run(scenario, false);
      REQUIRE(unkept.events.empty());
      REQUIRE(kept.coverage == unkept.coverage);
      for (const auto& [kind, probe] : one_to_one) {
        INFO(probe_name(probe));
        REQUIRE(kept.coverage[probe] == count_events(kept, kind));
      }
      int64_t dedupe = 0;
      for (size_t index = 0; index < kProbeCount; ++index) {
        if (is_dedupe_probe(static_cast<Probe>(index))) dedupe += kept.coverage.counts[index];
      }
      REQUIRE(dedupe == kept.stats.dedupe_hits);
      int64_t refunds = 0;
      for (const LedgerEntry& entry : kept.ledger) refunds += entry.type == EntryType::refund;
      REQUIRE(kept.coverage[Probe::saga_compensation] == refunds);
    }
  }
}

TEST_CASE("run --json lists every probe in order, zeros included", "[coverage][report]") {
  const nlohmann::ordered_json json =
      run_result_json(run(library_scenario("30-marten-backstop.json")));
  const nlohmann::ordered_json& coverage = json.at("coverage");
  REQUIRE(coverage.size() == kProbeCount);
  size_t index = 0;
  for (const auto& [name, count] : coverage.items()) {
    REQUIRE(name == probe_name(static_cast<Probe>(index++)));
    REQUIRE(count == (name == "dedupe.marten_backstop" ? 1 : 0));
  }
}

TEST_CASE("a campaign sums its seeds' coverage, the same for any number of jobs", "[coverage]") {
  CampaignOptions options;
  options.seed_first = 1;
  options.seed_last = 20;
  options.out_dir = "";
  options.generator.swarm = true;
  // MassTransit's inbox, pinned as --set account.inbox=masstransit pins it.
  options.generator.pinned_keys = {"account.inbox"};
  options.required_coverage = {Probe::dedupe_marten_backstop, Probe::dedupe_masstransit,
                               Probe::dedupe_marten_backstop};
  const CampaignResult one = run_campaign(options, nullptr);
  options.jobs = 3;
  const CampaignResult three = run_campaign(options, nullptr);
  REQUIRE(one.coverage == three.coverage);
  REQUIRE(one.coverage_seeds == three.coverage_seeds);

  Coverage sum;
  Coverage seeds;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const Coverage run_coverage =
        fuzz_run(generate_scenario(seed, options.generator).scenario).coverage;
    sum += run_coverage;
    for (size_t index = 0; index < kProbeCount; ++index) {
      seeds.counts[index] += run_coverage.counts[index] > 0 ? 1 : 0;
    }
  }
  REQUIRE(one.coverage == sum);
  REQUIRE(one.coverage_seeds == seeds);
  REQUIRE(one.coverage[Probe::dedupe_masstransit] > 0);
  // The default inbox is MassTransit's: Marten's backstop cannot fire, and is reported once.
  REQUIRE(one.coverage_missing == std::vector<Probe>{Probe::dedupe_marten_backstop});
}

TEST_CASE("the fuzz summary shows what was reached and what never was", "[coverage][report]") {
  CampaignOptions options;
  options.seed_first = 1;
  options.seed_last = 10;
  options.out_dir = "";
  options.required_coverage = {Probe::dedupe_marten_backstop};
  const CampaignResult result = run_campaign(options, nullptr);
  std::ostringstream out;
  print_campaign(out, options, result);
  const std::string text = out.str();
  INFO(text);
  REQUIRE(text.find("coverage:\n") != std::string::npos);
  // One line per probe reached, in order; then one line naming every probe never reached.
  std::vector<std::string> expected_lines;
  std::string never = "  never reached: ";
  for (size_t index = 0; index < kProbeCount; ++index) {
    const auto probe = static_cast<Probe>(index);
    const std::string name(probe_name(probe));
    if (result.coverage[probe] == 0) {
      never += (never.back() == ' ' ? "" : ", ") + name;
      continue;
    }
    const std::string counts = std::to_string(result.coverage[probe]) + " times in " +
                               std::to_string(result.coverage_seeds[probe]) + " seed(s)\n";
    const size_t at = text.find("  " + name + " ");
    REQUIRE(at != std::string::npos);
    REQUIRE(text.find(counts, at) == text.find('\n', at) + 1 - counts.size());
  }
  REQUIRE(text.find(never + "\n") != std::string::npos);
  REQUIRE(never.find("dedupe.marten_backstop") != std::string::npos);
  REQUIRE(text.find("FAIL  coverage: never reached dedupe.marten_backstop (--require-coverage)") !=
          std::string::npos);
  REQUIRE(text.find("FAIL  fuzz: 10 seeds, 0 failing") != std::string::npos);

  const nlohmann::ordered_json json = campaign_json(options, result);
  REQUIRE(json.at("coverage").size() == kProbeCount);
  REQUIRE(json.at("coverage").at("dedupe.masstransit") ==
          result.coverage[Probe::dedupe_masstransit]);
  REQUIRE(json.at("coverage_missing") == nlohmann::ordered_json::array({"dedupe.marten_backstop"}));

  options.required_coverage.clear();
  std::ostringstream passing;
  print_campaign(passing, options, run_campaign(options, nullptr));
  REQUIRE(passing.str().find("PASS  fuzz: 10 seeds, 0 failing") != std::string::npos);
}
