#include "fuzz/matrix.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <ostream>

#include "kernel/assert.h"
#include "scenario/parse.h"
#include "fuzz/parallel.h"
#include "fuzz/progress.h"

namespace inboxsim {

namespace {

constexpr std::array<std::string_view, kDefenceCount> kDefenceNames = {
    "inbox", "ledger", "processed", "state", "stable"};
// Every defence has a name (std::array would pad a short list with empty ones).
static_assert(std::none_of(kDefenceNames.begin(), kDefenceNames.end(),
                           [](std::string_view name) { return name.empty(); }));

std::string row_tag(const std::array<bool, kDefenceCount>& defences) {
  std::string tag = "matrix-";
  for (size_t i = 0; i < kDefenceCount; ++i) {
    if (i > 0) tag += "-";
    tag += std::string(defence_names()[i]) + (defences[i] ? "-on" : "-off");
  }
  return tag;
}

}  // namespace

const std::array<std::string_view, kDefenceCount>& defence_names() { return kDefenceNames; }

Config config_with_defences(const Config& base, const std::array<bool, kDefenceCount>& defences) {
  Config config = base;
  // The inbox on: the base's own when the registry calls it a defence (a Marten story keeps
  // Marten), else the default one; off: no inbox at all.
  const bool base_defends = account_inbox_kind(base.account_inbox).is_a_defence;
  config.account_inbox = !defences[0]   ? no_account_inbox()
                         : base_defends ? base.account_inbox
                                        : default_account_inbox();
  // The per-transfer key: the ledger index and the remembered rejections (scenario 29 shows
  // why the one needs the other), so that every defence on is a correct bank.
  config.account_ledger_unique = defences[1];
  config.account_remember_rejections = defences[1];
  config.transfer_processed_unique = defences[2];
  config.transfer_state_machine = defences[3];
  config.relay_stable_message_id = defences[4];
  return config;
}

std::vector<MatrixRow> run_matrix(const MatrixOptions& options, std::ostream* progress_stream) {
  std::vector<MatrixRow> rows;
  constexpr unsigned kCombinations = 1U << kDefenceCount;
  std::optional<ProgressLine> line;
  if (progress_stream != nullptr) line.emplace(*progress_stream, "matrix");
  int64_t seeds_before = 0;  // seeds of the rows already done
  int64_t failures_before = 0;
  int64_t broken_rows = 0;
  for (unsigned off_mask = 0; off_mask < kCombinations; ++off_mask) {
    MatrixRow row;
    for (size_t i = 0; i < kDefenceCount; ++i) row.defences[i] = ((off_mask >> i) & 1U) == 0;
    row.config = config_with_defences(options.generator.config, row.defences);
    CampaignOptions campaign;
    campaign.seed_first = options.seed_first;
    campaign.seed_last = options.seed_last;
    campaign.jobs = options.jobs;
    campaign.generator = options.generator;
    campaign.generator.config = row.config;
    campaign.generator.drop_indexes = false;
    // A row without the inbox has none: the swarm draws an inbox only among the defences.
    if (!row.defences[0]) campaign.generator.pinned_keys.emplace_back("account.inbox");
    campaign.out_dir = options.out_dir.empty() ? "" : options.out_dir + "/" + row_tag(row.defences);
    campaign.shrink_max = 1;
    if (line) {
      campaign.on_progress = [&](const CampaignProgress& progress) {
        const int64_t done = seeds_before + progress.seeds_done;
        const int64_t total = progress.seeds_total * kCombinations;
        line->update(
            "row " + std::to_string(off_mask + 1) + "/" + std::to_string(kCombinations) + ", " +
                std::to_string(done) + "/" + std::to_string(total) + " seeds, " +
                std::to_string(failures_before + progress.failures) + " failing in " +
                std::to_string(broken_rows + (progress.failures > 0 ? 1 : 0)) + " row(s), " +
                std::to_string(static_cast<int64_t>(static_cast<double>(done) /
                                                    std::max(line->elapsed_seconds(), 1e-3))) +
                " seeds/s",
            (static_cast<double>(seeds_before) + progress.fraction_done() *
                 static_cast<double>(progress.seeds_total)) / static_cast<double>(total));
      };
    }
    const CampaignResult result = run_campaign(campaign, nullptr);
    seeds_before += result.seeds;
    failures_before += static_cast<int64_t>(result.failures.size());
    if (!result.failures.empty()) ++broken_rows;
    row.seeds = result.seeds;
    row.failing_seeds = static_cast<int64_t>(result.failures.size());
    row.violated = result.violated;
    if (!result.counterexamples.empty()) row.counterexample = result.counterexamples[0].path;
    row.write_errors = result.write_errors;
    rows.push_back(std::move(row));
  }
  return rows;
}

Scenario exhaustive_matrix_story() {
  static constexpr std::string_view kStory = R"({
    "name": "matrix-one-transfer",
    "title": "One transfer, every order, up to K faults",
    "description": "The exhaustive matrix's story: alice pays bob 2500 and the system runs until nothing is left to do. Every order of its events and every placement of the faults is explored once per combination of defences.",
    "accounts": {"alice": 10000, "bob": 0},
    "steps": [
      {"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
      {"run": {"until": "quiescent"}}
    ]
  })";
  ParseResult parsed = parse_scenario_text(std::string(kStory), "matrix-one-transfer.json");
  INBOXSIM_ASSERT(parsed.scenario.has_value());
  return std::move(*parsed.scenario);
}

std::string defences_off_tag(const std::array<bool, kDefenceCount>& defences) {
  std::string tag;
  for (size_t i = 0; i < kDefenceCount; ++i) {
    if (!defences[i]) tag += (tag.empty() ? "no-" : "-no-") + std::string(defence_names()[i]);
  }
  return tag.empty() ? "all-on" : tag;
}

std::vector<ExhaustiveRow> run_exhaustive_matrix(
    const Scenario& story, const ExploreSettings& settings,
    const std::function<void(size_t index, ExhaustiveRow& row)>& row_done) {
  constexpr unsigned kCombinations = 1U << kDefenceCount;
  std::vector<ExhaustiveRow> rows(kCombinations);
  for (unsigned off_mask = 0; off_mask < kCombinations; ++off_mask) {
    ExhaustiveRow& row = rows[off_mask];
    for (size_t i = 0; i < kDefenceCount; ++i) row.defences[i] = ((off_mask >> i) & 1U) == 0;
    row.story = story;
    row.story.config = config_with_defences(story.config, row.defences);
    row.story.name = story.name + "-" + defences_off_tag(row.defences);
  }
  ExploreSettings each = settings;
  int64_t row_jobs = 1;
  if (settings.dpor) {
    row_jobs = settings.jobs;
    each.jobs = 1;
  }
  std::mutex done;
  parallel_for(
      rows.size(), row_jobs,
      [&](size_t index) {
        rows[index].result = explore(rows[index].story, each);
        if (row_done) {
          const std::lock_guard<std::mutex> lock(done);
          row_done(index, rows[index]);
        }
      },
      [](size_t) { return false; });
  return rows;
}

}  // namespace inboxsim
