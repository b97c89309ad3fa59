#include "app/campaign_verb.h"

#include <iostream>

#include "app/cli_args.h"
#include "app/cli_common.h"
#include "fuzz/campaign.h"
#include "fuzz/matrix.h"
#include "fuzz/progress.h"
#include "kernel/text.h"
#include "report/campaign_view.h"

namespace inboxsim {

namespace {

// Fills the generator options shared by fuzz and matrix; returns an exit code on bad input.
std::optional<int> load_generator(const std::string& workload, const std::vector<std::string>& sets,
                                  GeneratorOptions& generator) {
  const auto parsed = parse_workload(workload);
  if (!parsed) return bad_input("--workload " + workload + ": expected small, standard or large");
  generator.workload = *parsed;
  // A key the campaign sets is the configuration under test: the generator leaves it alone.
  for (const std::string& assignment : sets) {
    const std::string key = assignment.substr(0, assignment.find('='));
    if (key == "account.instances" || key == "transfer.instances") generator.draw_instances = false;
    if (key == "consumer.work_ms") generator.draw_work = false;
    if (key == "broker.heartbeat_ms") generator.draw_heartbeat = false;
    if (key == "account.retry") generator.draw_retry = false;
    if (key == "broker.queue_type") generator.draw_queue_type = false;
    if (key == "broker.dead_letter") generator.draw_dead_letter = false;
    if (key == "broker.consumer_timeout_ms") generator.draw_consumer_timeout = false;
    if (key == "account.masstransit") generator.draw_masstransit = false;
    if (key == "account.database") generator.draw_database = false;
    if (key == "account.isolation") generator.draw_isolation = false;
    if (key == "account.marten_append") generator.draw_marten_append = false;
    generator.pinned_keys.push_back(key);
  }
  return apply_sets(sets, generator.config);
}

void add_campaign_options(CLI::App& verb, CampaignFlags& flags, const std::string& seeds_help,
                          const std::string& json_help) {
  verb.add_option("--seeds", flags.seeds, seeds_help);
  verb.add_option("--workload", flags.workload, "small, standard or large")
      ->check(CLI::IsMember({"small", "standard", "large"}));
  verb.add_flag("--swarm", flags.swarm, "Each seed draws its own fault mix and rates");
  verb.add_option("--set", flags.sets, kSetOptionHelp);
  verb.add_option("--jobs", flags.jobs, "Worker threads")
      ->check(CLI::Range(int64_t{1}, int64_t{256}));
  verb.add_option("--out", flags.out_dir, "Where counterexamples go (default ./counterexamples)");
  verb.add_flag("--json", flags.json, json_help);
}

}  // namespace

int fuzz_command(const FuzzCommand& command) {
  const CampaignFlags& flags = command.campaign;
  CampaignOptions options;
  if (!parse_seed_range(flags.seeds, options.seed_first, options.seed_last)) {
    return bad_input("--seeds " + flags.seeds +
                     ": expected A..B with A <= B <= " + std::to_string(kSeedMax) +
                     " and at most " + std::to_string(kSeedsPerCampaignMax) + " seeds");
  }
  if (!parse_shard(command.shard, options.shard_index, options.shard_count)) {
    return bad_input("--shard " + command.shard + ": expected K/N with 1 <= K <= N");
  }
  if (auto failed = load_generator(flags.workload, flags.sets, options.generator)) {
    return *failed;
  }
  options.generator.swarm = flags.swarm;
  options.sets = flags.sets;
  options.generator.transfers = command.transfers;
  options.generator.accounts = command.accounts;
  options.generator.rate_per_second = command.rate_per_second;
  options.jobs = flags.jobs;
  options.out_dir = flags.out_dir;
  options.shrink_max = command.shrink_max;
  options.stop_after = command.stop_after;
  options.progress = isatty(STDERR_FILENO) != 0;
  for (const std::string& name : command.require_coverage) {
    const std::optional<Probe> probe = parse_probe(name);
    if (!probe) {
      return bad_input("--require-coverage " + name + ": expected probe names separated by " +
                       "commas, from: " + std::string(probe_names_text()));
    }
    const std::vector<Probe>& required = options.required_coverage;
    if (std::find(required.begin(), required.end(), *probe) == required.end()) {
      options.required_coverage.push_back(*probe);
    }
  }
  if (!options.out_dir.empty()) {
    if (auto failed = prepare_output_dir("--out", options.out_dir)) return *failed;
  }
  const CampaignResult result = run_campaign(options, &std::cerr);
  if (flags.json) {
    std::cout << campaign_json(options, result).dump(2) << "\n";
  } else {
    print_campaign(std::cout, options, result);
  }
  if (!command.junit_path.empty() &&
      !write_file(command.junit_path, campaign_junit(options, result))) {
    return kExitBadInput;
  }
  for (const std::string& path : result.write_errors)
    std::cerr << "inboxsim: cannot write " << printable(path) << "\n";
  if (!result.write_errors.empty()) return kExitBadInput;
  if (!result.coverage_missing.empty()) {
    std::cerr << "inboxsim: --require-coverage: never reached in " << result.seeds
              << " seeds: " << probes_text(result.coverage_missing) << "\n";
  }
  return result.failures.empty() && result.coverage_missing.empty() ? kExitOk : kExitFailed;
}

int matrix_command(const MatrixCommand& command) {
  const CampaignFlags& flags = command.campaign;
  if (command.exhaustive.exhaustive) {
    if (!command.campaign_only_given.empty()) {
      return bad_input(command.campaign_only_given.front() +
                       ": expected no seeds, workload or swarm with --exhaustive (it explores "
                       "one story, --story FILE)");
    }
    ExhaustiveMatrixCommand exhaustive = command.exhaustive;
    exhaustive.jobs = flags.jobs;
    exhaustive.sets = flags.sets;
    exhaustive.json = flags.json;
    exhaustive.out_dir = flags.out_dir;
    return exhaustive_matrix_command(exhaustive);
  }
  if (!command.exhaustive_only_given.empty()) {
    return bad_input(command.exhaustive_only_given.front() + ": expected --exhaustive with it");
  }
  MatrixOptions options;
  if (!parse_seed_range(flags.seeds, options.seed_first, options.seed_last)) {
    return bad_input("--seeds " + flags.seeds +
                     ": expected A..B with A <= B <= " + std::to_string(kSeedMax) +
                     " and at most " + std::to_string(kSeedsPerCampaignMax) + " seeds");
  }
  if (auto failed = load_generator(flags.workload, flags.sets, options.generator)) {
    return *failed;
  }
  options.generator.swarm = flags.swarm;
  options.jobs = flags.jobs;
  options.out_dir = flags.out_dir;
  if (!options.out_dir.empty()) {
    if (auto failed = prepare_output_dir("--out", options.out_dir)) return *failed;
  }
  const bool tty = isatty(STDERR_FILENO) != 0;
  const std::vector<MatrixRow> rows = run_matrix(options, tty ? &std::cerr : nullptr);
  if (flags.json) {
    std::cout << matrix_json(rows).dump(2) << "\n";
  } else {
    print_matrix(std::cout, rows);
  }
  bool written = true;
  for (const MatrixRow& row : rows) {
    for (const std::string& path : row.write_errors) {
      std::cerr << "inboxsim: cannot write " << printable(path) << "\n";
      written = false;
    }
  }
  if (!written) return kExitBadInput;
  // Broken rows are the point of the table; only a failure with every defence on is a bug.
  return rows.front().violated.empty() ? kExitOk : kExitFailed;
}

CLI::App* add_fuzz_verb(CLI::App& app, FuzzCommand& command) {
  CLI::App* fuzz_app =
      app.add_subcommand("fuzz", "Fuzz: random workloads and faults, invariants, shrinking.");
  add_campaign_options(*fuzz_app, command.campaign, "Seed range A..B (default 1..1000)",
                       "Print one JSON object");
  fuzz_app->add_option("--transfers", command.transfers, "Transfers per seed")
      ->check(CLI::Range(int64_t{1}, kStoryCountMax));
  fuzz_app
      ->add_option("--rate", command.rate_per_second,
                   "Transfers arriving per virtual second, spread over virtual time (1-1000)")
      ->check(CLI::Range(int64_t{1}, kRatePerSecondMax));
  fuzz_app->add_option("--accounts", command.accounts, "Accounts per seed")
      ->check(CLI::Range(int64_t{2}, kStoryCountMax));
  fuzz_app->add_option("--shard", command.shard, "Run shard K of N (1-based) of the seed range");
  fuzz_app->add_option("--junit", command.junit_path, "Write a JUnit XML report");
  fuzz_app
      ->add_option("--shrink", command.shrink_max, "Failing seeds to shrink and save (default 3)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000}));
  fuzz_app
      ->add_option("--stop-after", command.stop_after,
                   "Stop after this many failing seeds (default 0: run them all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000}));
  fuzz_app
      ->add_option("--require-coverage", command.require_coverage,
                   "Exit 1 unless every one of these coverage probes was reached "
                   "(NAME,...; see docs/coverage.md): " +
                       std::string(probe_names_text()))
      ->delimiter(',');
  return fuzz_app;
}

CLI::App* add_matrix_verb(CLI::App& app, MatrixCommand& command) {
  CLI::App* matrix_app =
      app.add_subcommand("matrix", "Which defences are enough: a campaign per combination.");
  add_campaign_options(*matrix_app, command.campaign, "Seed range A..B per row (default 1..100)",
                       "Print the table as JSON");
  add_exhaustive_matrix_options(*matrix_app, command.exhaustive);
  return matrix_app;
}

}  // namespace inboxsim
