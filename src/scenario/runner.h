// Runs a scenario: builds a World, plays the steps in order, runs the world to quiescence at
// the end, checks the invariants and the scenario's expectations.
#pragma once

#include <functional>
#include <string>

#include "domain/result.h"
#include "domain/scenario.h"
#include "kernel/trace.h"
#include "world/faults.h"

namespace inboxsim {

struct RunOptions {
  std::optional<uint64_t> seed;  // overrides the scenario's seed
  std::string db_dir;            // keep each service's database as a file here
  bool keep_trace = true;        // keep events in the result (views need them)
  bool hash_trace = true;        // compute RunResult::trace_hash (empty when false)
  // Called with each event as it happens (live narration), if set.
  std::function<void(const TraceEvent&)> listener;
  // Record the tables and queues event by event (RunResult::rows) for a view; costs a run
  // nothing when off.
  bool record_rows = false;
  // Called with each event's row changes as they are attributed (--show-rows), if set.
  std::function<void(const RowHistory&, const std::vector<RowChange>&)> row_listener;
  // Called after each step has run (the --step pause, progress), if set.
  std::function<void(const Step&)> after_step;
  // Keep the services' databases in temporary files, whose pages SQLite keeps in a bounded
  // cache, instead of in memory: for stories too long for their databases to fit in memory.
  // The run is the same either way.
  bool spill_databases = false;
  // With spill_databases: how many armed faults that name a transfer stay in memory before
  // they go to the temporary database too (a test sets 0 to spill every fault at once).
  size_t faults_in_memory_max = FaultBook::kFaultsInMemoryMax;
  // Put the ledger, the sagas, each transfer's amount, the unfired faults and the parked
  // messages in the result (`expect`'s `transfers` and `effects`, the views); off, a run reports
  // them only through its verdict.
  bool keep_final_tables = true;
};

class World;

// Plays one step of a scenario in `world`.
void play_step(World& world, const Step& step);

// The story's end in a run that follows a schedule: the schedule's hand actions due there
// (Schedule::actions), each followed by a run until quiescent.
void play_story_end(World& world);

// Plays `scenario` and returns what happened, expectations evaluated.
RunResult run_scenario(const Scenario& scenario, const RunOptions& options);

// Plays a story whose steps come one at a time from `next_step` (nothing: the story has ended)
// after `scenario`'s own, which are not played: a long generated story need not be held whole.
RunResult run_story(const Scenario& scenario, const std::function<std::optional<Step>()>& next_step,
                    const RunOptions& options);

// Why a story cannot run without a clock (explored, or replayed from a `schedule`): where in
// the file (a JSON pointer) and what is expected there. Nothing when it can.
struct Refusal {
  std::string pointer;
  std::string expected;
};
std::optional<Refusal> clockless_refusal(const Scenario& scenario);

// What `scenario` asks that has no meaning on its broker (broker.kind): a RabbitMQ key set on
// JetStream or the other way round (broker_key_refusal), a publish to JetStream's missing
// default exchange. The parser refuses it (exit 2).
std::optional<Refusal> broker_refusal(const Scenario& scenario);

// Returns one line describing a step ("transfer t1: alice -> bob 2500").
std::string describe_step(const Step& step);

// The same, as the story's configuration makes it: in the Marten inbox the index
// account.inbox_state names is the inbox document's primary key (MassTransit's inbox_state table
// is not in that story), and the step says so.
std::string describe_step_in(const Step& step, const Config& config);

// An index's name as a story's configuration makes it (see describe_step_in).
std::string index_words(IndexName index, const Config& config);

// Compares a finished run with the scenario's `expect`; fills result.expectations and
// result.passed.
void evaluate_expectations(const Expect& expect, RunResult& result);

}  // namespace inboxsim
