#include "report/campaign_view.h"

#include <algorithm>
#include <cctype>
#include <ostream>
#include <string_view>
#include <utility>

#include "kernel/text.h"
#include "report/html.h"         // escape_html, also right for XML text and attributes
#include "report/json_output.h"  // stats_json, coverage_json

namespace inboxsim {

namespace {

constexpr size_t kFailuresPrintedMax = 20;

std::string invariants_text(const std::vector<Invariant>& invariants) {
  std::string text;
  for (const Invariant invariant : invariants) {
    if (!text.empty()) text += ", ";
    text += invariant_name(invariant);
  }
  return text;
}

nlohmann::ordered_json probes_json(const std::vector<Probe>& probes) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Probe probe : probes) out.push_back(probe_name(probe));
  return out;
}

// The coverage block of the summary: each probe reached, how often and in how many seeds, in
// the probes' order; then the probes never reached.
void print_coverage(std::ostream& out, const CampaignResult& result) {
  std::vector<Probe> unreached;
  size_t width = 0;
  for (size_t index = 0; index < kProbeCount; ++index) {
    width = std::max(width, probe_name(static_cast<Probe>(index)).size());
  }
  out << "coverage:\n";
  for (size_t index = 0; index < kProbeCount; ++index) {
    const auto probe = static_cast<Probe>(index);
    if (result.coverage[probe] == 0) {
      unreached.push_back(probe);
      continue;
    }
    out << "  " << pad(std::string(probe_name(probe)), width + 2) << result.coverage[probe]
        << " times in " << result.coverage_seeds[probe] << " seed(s)\n";
  }
  out << "  never reached: " << (unreached.empty() ? "none" : probes_text(unreached)) << "\n";
}

// Quotes `word` for a POSIX shell when it holds anything but plain characters.
std::string shell_quoted(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("@%+=:,./_-").find(c) != std::string_view::npos;
  });
  if (plain) return word;
  std::string quoted = "'";
  for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The campaign's configuration as JUnit properties: what a reader of the CI's test view needs
// to run the campaign, or one of its seeds, again.
std::string junit_properties(const CampaignOptions& options) {
  std::vector<std::pair<std::string, std::string>> properties = {
      {"inboxsim.version", INBOXSIM_VERSION},
      {"seeds", std::to_string(options.seed_first) + ".." + std::to_string(options.seed_last)},
      {"shard", std::to_string(options.shard_index) + "/" + std::to_string(options.shard_count)},
      {"workload", std::string(workload_name(options.generator.workload))},
      {"swarm", options.generator.swarm ? "true" : "false"},
      {"config", config_diff_json(options.generator.config).dump()},
  };
  if (options.generator.transfers) {
    properties.emplace_back("transfers", std::to_string(*options.generator.transfers));
  }
  if (options.generator.accounts) {
    properties.emplace_back("accounts", std::to_string(*options.generator.accounts));
  }
  if (options.generator.rate_per_second) {
    properties.emplace_back("rate", std::to_string(*options.generator.rate_per_second));
  }
  for (const std::string& set : options.sets) properties.emplace_back("set", set);
  std::string xml = "    <properties>\n";
  for (const auto& [name, value] : properties) {
    xml += "      <property name=\"" + escape_html(name) + "\" value=\"" + escape_html(value) +
           "\"/>\n";
  }
  return xml + "    </properties>\n";
}

}  // namespace

std::string replay_command(const CampaignOptions& options, uint64_t seed) {
  std::string command = "inboxsim fuzz --seeds " + std::to_string(seed) + ".." +
                        std::to_string(seed) + " --workload " +
                        std::string(workload_name(options.generator.workload));
  if (options.generator.swarm) command += " --swarm";
  if (options.generator.transfers) {
    command += " --transfers " + std::to_string(*options.generator.transfers);
  }
  if (options.generator.accounts) {
    command += " --accounts " + std::to_string(*options.generator.accounts);
  }
  if (options.generator.rate_per_second) {
    command += " --rate " + std::to_string(*options.generator.rate_per_second);
  }
  for (const std::string& set : options.sets) command += " --set " + shell_quoted(set);
  return command;
}

nlohmann::ordered_json campaign_json(const CampaignOptions& options, const CampaignResult& result) {
  nlohmann::ordered_json out;
  out["seeds"] = result.seeds;
  out["failures"] = result.failures.size();
  nlohmann::ordered_json failed = nlohmann::ordered_json::array();
  for (const SeedOutcome& outcome : result.failures) failed.push_back(outcome.seed);
  out["failed_seeds"] = failed;
  nlohmann::ordered_json paths = nlohmann::ordered_json::array();
  for (const Counterexample& cx : result.counterexamples) {
    if (!cx.path.empty()) paths.push_back(cx.path);
  }
  out["counterexamples"] = paths;
  out["stats"] = stats_json(result.stats);
  out["coverage"] = coverage_json(result.coverage);
  out["wall_ms"] = result.wall_ms;
  // Extensions: what broke, and under which options.
  nlohmann::ordered_json violated = nlohmann::ordered_json::array();
  for (const Invariant invariant : result.violated) violated.push_back(invariant_name(invariant));
  out["violated"] = violated;
  out["coverage_seeds"] = coverage_json(result.coverage_seeds);
  out["coverage_required"] = probes_json(options.required_coverage);
  out["coverage_missing"] = probes_json(result.coverage_missing);
  out["workload"] = workload_name(options.generator.workload);
  out["swarm"] = options.generator.swarm;
  out["config"] = config_diff_json(options.generator.config);
  nlohmann::ordered_json details = nlohmann::ordered_json::array();
  for (const SeedOutcome& outcome : result.failures) {
    nlohmann::ordered_json entry;
    entry["seed"] = outcome.seed;
    nlohmann::ordered_json names = nlohmann::ordered_json::array();
    for (const Invariant invariant : outcome.violated) names.push_back(invariant_name(invariant));
    entry["violated"] = names;
    entry["options"] = describe_drawn(outcome.drawn);
    entry["replay"] = replay_command(options, outcome.seed);
    details.push_back(entry);
  }
  out["failed"] = details;
  return out;
}

std::string campaign_junit(const CampaignOptions& options, const CampaignResult& result) {
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += "<testsuites>\n<testsuite name=\"inboxsim fuzz\" tests=\"" + std::to_string(result.seeds) +
         "\" failures=\"" + std::to_string(result.failures.size()) + "\" errors=\"0\" time=\"" +
         std::to_string(static_cast<double>(result.wall_ms) / 1000.0) + "\">\n";
  xml += junit_properties(options);
  const std::vector<uint64_t> seeds = shard_seeds(options);
  size_t failure = 0;
  for (size_t i = 0; i < static_cast<size_t>(result.seeds); ++i) {
    const uint64_t seed = seeds[i];
    xml += "  <testcase classname=\"inboxsim.fuzz\" name=\"seed " + std::to_string(seed) + "\"";
    if (failure < result.failures.size() && result.failures[failure].seed == seed) {
      const SeedOutcome& outcome = result.failures[failure++];
      std::string body = "options: " + describe_drawn(outcome.drawn) +
                         "\nreplay: " + replay_command(options, seed);
      for (const Counterexample& cx : result.counterexamples) {
        if (cx.seed == seed && !cx.path.empty()) body += "\nshrunk: inboxsim run " + cx.path;
      }
      xml += ">\n    <failure message=\"" + escape_html(invariants_text(outcome.violated)) + "\">" +
             escape_html(body) + "</failure>\n  </testcase>\n";
    } else {
      xml += "/>\n";
    }
  }
  xml += "</testsuite>\n</testsuites>\n";
  return xml;
}

void print_campaign(std::ostream& out, const CampaignOptions& options,
                    const CampaignResult& result) {
  for (size_t i = 0; i < result.failures.size() && i < kFailuresPrintedMax; ++i) {
    const SeedOutcome& outcome = result.failures[i];
    out << "FAIL  seed " << outcome.seed << ": " << invariants_text(outcome.violated)
        << "\n      options: " << describe_drawn(outcome.drawn)
        << "\n      replay:  " << replay_command(options, outcome.seed) << "\n";
  }
  if (result.failures.size() > kFailuresPrintedMax) {
    out << "      ... and " << result.failures.size() - kFailuresPrintedMax
        << " more failing seeds\n";
  }
  for (const Counterexample& cx : result.counterexamples) {
    out << "counterexample for seed " << cx.seed << " (" << invariant_name(cx.invariant)
        << "): " << cx.transfers << " transfer(s), " << cx.faults << " fault(s), " << cx.shrink_runs
        << " shrink runs"
        << (cx.replay_verified ? "" : "; WARNING: the written file did not replay the failure")
        << "\n";
    if (!cx.path.empty()) out << "  replay: inboxsim run " << cx.path << "\n";
  }
  print_coverage(out, result);
  if (!result.coverage_missing.empty()) {
    out << "FAIL  coverage: never reached " << probes_text(result.coverage_missing)
        << " (--require-coverage)\n";
  }
  const nlohmann::ordered_json config = config_diff_json(options.generator.config);
  const bool passed = result.failures.empty() && result.coverage_missing.empty();
  out << (passed ? "PASS" : "FAIL") << "  fuzz: " << result.seeds << " seeds, "
      << result.failures.size() << " failing (workload "
      << workload_name(options.generator.workload) << (options.generator.swarm ? ", swarm" : "")
      << ", config " << (config.empty() ? std::string("default") : config.dump()) << ")\n";
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

void add_defences_json(nlohmann::ordered_json& row,
                       const std::array<bool, kDefenceCount>& defences) {
  for (size_t i = 0; i < kDefenceCount; ++i) row[std::string(defence_names()[i])] = defences[i];
}

nlohmann::ordered_json matrix_json(const std::vector<MatrixRow>& rows) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const MatrixRow& row : rows) {
    nlohmann::ordered_json entry;
    add_defences_json(entry, row.defences);
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
