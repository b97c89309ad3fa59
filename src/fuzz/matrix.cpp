#include "fuzz/matrix.h"

#include <algorithm>
#include <ostream>

namespace inboxsim {

namespace {

std::string row_tag(const std::array<bool, kDefenceCount>& defences) {
  std::string tag = "matrix-";
  for (size_t i = 0; i < kDefenceCount; ++i) {
    if (i > 0) tag += "-";
    tag += std::string(defence_names()[i]) + (defences[i] ? "-on" : "-off");
  }
  return tag;
}

std::string pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

}  // namespace

const std::array<std::string_view, kDefenceCount>& defence_names() {
  static constexpr std::array<std::string_view, kDefenceCount> kNames = {
      "inbox", "ledger", "processed", "state", "stable"};
  return kNames;
}

Config config_with_defences(const Config& base, const std::array<bool, kDefenceCount>& defences) {
  Config config = base;
  config.account_inbox = defences[0] ? AccountInbox::masstransit : AccountInbox::none;
  config.account_ledger_unique = defences[1];
  config.transfer_processed_unique = defences[2];
  config.transfer_state_machine = defences[3];
  config.relay_stable_message_id = defences[4];
  return config;
}

std::vector<MatrixRow> run_matrix(const MatrixOptions& options, std::ostream* progress_stream) {
  std::vector<MatrixRow> rows;
  constexpr unsigned kCombinations = 1U << kDefenceCount;
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
    campaign.out_dir = options.out_dir.empty() ? "" : options.out_dir + "/" + row_tag(row.defences);
    campaign.shrink_max = 1;
    const CampaignResult result = run_campaign(campaign, nullptr);
    row.seeds = result.seeds;
    row.failing_seeds = static_cast<int64_t>(result.failures.size());
    row.violated = result.violated;
    if (!result.counterexamples.empty()) row.counterexample = result.counterexamples[0].path;
    if (progress_stream != nullptr) {
      *progress_stream << "\rmatrix: " << off_mask + 1 << "/" << kCombinations << " rows"
                       << std::flush;
    }
    rows.push_back(std::move(row));
  }
  if (progress_stream != nullptr) *progress_stream << "\n";
  return rows;
}

void print_matrix(std::ostream& out, const std::vector<MatrixRow>& rows) {
  for (const std::string_view name : defence_names()) out << pad(std::string(name), 10);
  out << pad("failing", 10) << "broken invariants / counterexample\n";
  for (const MatrixRow& row : rows) {
    for (const bool on : row.defences) out << pad(on ? "on" : "-", 10);
    out << pad(std::to_string(row.failing_seeds) + "/" + std::to_string(row.seeds), 10);
    if (row.violated.empty()) {
      out << "none";
    } else {
      for (size_t i = 0; i < row.violated.size(); ++i) {
        out << (i > 0 ? ", " : "") << invariant_name(row.violated[i]);
      }
    }
    out << "\n";
    if (!row.counterexample.empty()) {
      out << pad("", 10 * (kDefenceCount + 1)) << "inboxsim run " << row.counterexample << "\n";
    }
  }
}

nlohmann::ordered_json matrix_json(const std::vector<MatrixRow>& rows) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const MatrixRow& row : rows) {
    nlohmann::ordered_json entry;
    for (size_t i = 0; i < kDefenceCount; ++i)
      entry[std::string(defence_names()[i])] = row.defences[i];
    entry["seeds"] = row.seeds;
    entry["failing_seeds"] = row.failing_seeds;
    nlohmann::ordered_json violated = nlohmann::ordered_json::array();
    for (const Invariant invariant : row.violated) violated.push_back(invariant_name(invariant));
    entry["violated"] = violated;
    entry["counterexample"] = row.counterexample;
    out.push_back(entry);
  }
  return out;
}

}  // namespace inboxsim
