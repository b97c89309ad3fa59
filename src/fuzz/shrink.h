// Shrinking a failing story to a minimal one, and saving it as a replayable scenario file.
//
// The reduction is greedy and deterministic: remove one transfer (with the faults that name
// it), one fault or step, the accounts nobody uses; lower amounts and balances; simplify fault
// parameters; fewer instances, no work time. A candidate is kept only if the same invariant
// still breaks, run with its seed or, failing that, with one of a few other seeds: a smaller
// story draws its interleaving afresh, and a race may need another seed to show again (the
// kept seed is written into the file, which therefore replays exactly). It stops when no single
// change keeps the failure, or at a bound on runs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "domain/result.h"
#include "domain/scenario.h"
#include "fuzz/generator.h"

namespace inboxsim {

// Runs a scenario the way the fuzzer does: no trace kept and none hashed (trace_hash empty).
RunResult fuzz_run(const Scenario& scenario, std::function<void(const Step&)> after_step = {});

// Returns the first invariant (in contract order) that `result` found broken, if any.
std::optional<Invariant> first_violation(const RunResult& result);

// True when running `scenario` breaks `invariant`.
bool breaks_invariant(const Scenario& scenario, Invariant invariant);

struct ShrinkResult {
  Scenario scenario;
  int64_t runs = 0;  // candidates tried
};

// Returns the smallest story found that still breaks `invariant`.
// REQUIRES: breaks_invariant(failing, invariant).
ShrinkResult shrink_scenario(const Scenario& failing, Invariant invariant);

// Returns `config` with every defence turned back on (the same inbox flavour where it was a
// correct one): the configuration a counterexample's expectations are computed under.
Config repaired_config(const Config& config);

int64_t count_transfers(const Scenario& scenario);
int64_t count_faults(const Scenario& scenario);  // fault, advance and drop_index steps

// Turns a shrunk story into a counterexample file's scenario: name, title, a description that
// names the seed and the drawn options, a lesson, and an `expect` of what should hold
// (no violation, and the balances and states of the same story with every defence on).
Scenario make_counterexample(const Scenario& shrunk, uint64_t seed, const DrawnOptions& drawn,
                             const std::string& workload, Invariant invariant);

}  // namespace inboxsim
