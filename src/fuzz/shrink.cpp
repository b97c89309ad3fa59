#include "fuzz/shrink.h"

#include <algorithm>
#include <functional>
#include <set>
#include <vector>

#include "kernel/assert.h"
#include "scenario/runner.h"

namespace inboxsim {

namespace {

// A bound on the simulations one shrink may run.
constexpr int64_t kShrinkRunsMax = 4'000;
// Seeds a candidate may try besides its own. A smaller story draws its latencies and work times
// afresh, so a race that needed one interleaving may need another seed to show again; the
// counterexample records the seed that does, and replays exactly.
// Only a story with concurrency needs this: without it, latencies alone rarely decide a failure.
constexpr uint64_t kReseedsPerCandidate = 16;
constexpr int64_t kAmountFloor = 100;

using Edit = std::function<bool(Scenario&)>;  // false: the edit does not apply

// Removes transfer `id` and every fault that names it; with `rewrite`, a fault that also names
// a message type keeps the type and forgets the transfer instead.
void remove_transfer(Scenario& scenario, const std::string& id, bool rewrite) {
  std::vector<Step> kept;
  for (Step& step : scenario.steps) {
    if (step.kind == StepKind::transfer && step.transfer.id == id) continue;
    if (step.kind == StepKind::fault && step.fault.has_match && step.fault.match.transfer == id) {
      if (!rewrite || !step.fault.match.type) continue;
      step.fault.match.transfer.clear();
    }
    kept.push_back(std::move(step));
  }
  scenario.steps = std::move(kept);
}

void remove_unused_accounts(Scenario& scenario) {
  std::set<std::string> used;
  for (const Step& step : scenario.steps) {
    if (step.kind != StepKind::transfer) continue;
    used.insert(step.transfer.from);
    used.insert(step.transfer.to);
  }
  std::erase_if(scenario.accounts, [&](const auto& entry) { return !used.contains(entry.first); });
}

// The story's ending: the trailing rounds of "run until quiescent, redrive". Removing a round
// would leave a parked message behind and turn any failure into that one.
bool part_of_the_ending(const Scenario& scenario, size_t index) {
  const std::vector<Step>& steps = scenario.steps;
  size_t start = steps.size();
  while (start > 0 &&
         (steps[start - 1].kind == StepKind::redrive ||
          (steps[start - 1].kind == StepKind::run && steps[start - 1].until_quiescent &&
           start < steps.size() && steps[start].kind == StepKind::redrive))) {
    --start;
  }
  return index >= start;
}

// The highest instance of a service that a fault names (1 when none does).
int64_t max_instance_named(const Scenario& scenario, bool account) {
  int64_t highest = 1;
  for (const Step& step : scenario.steps) {
    if (step.kind != StepKind::fault || !step.fault.service || !step.fault.instance) continue;
    if ((*step.fault.service == ServiceId::account) != account) continue;
    highest = std::max(highest, *step.fault.instance);
  }
  return highest;
}

// Lower values to try for an amount or a balance, smallest first.
std::vector<int64_t> lower_values(int64_t value, int64_t floor) {
  std::vector<int64_t> out;
  for (const int64_t candidate : {floor, value / 2 / kAmountFloor * kAmountFloor, value / 2}) {
    if (candidate >= floor && candidate < value &&
        std::find(out.begin(), out.end(), candidate) == out.end()) {
      out.push_back(candidate);
    }
  }
  return out;
}

// Fewer instances, no work time, the default heartbeat and JetStream timers: a counterexample
// that needs no concurrency should not show any. An instance a fault names keeps its instance count.
void add_concurrency_edits(const Scenario& scenario, std::vector<Edit>& edits) {
  const Config& config = scenario.config;
  for (const bool account : {true, false}) {
    const int64_t named = max_instance_named(scenario, account);
    if (config.instances(account) > named) {
      edits.push_back([account, named](Scenario& s) {
        (account ? s.config.account_instances : s.config.transfer_instances) = named;
        return true;
      });
    }
  }
  if (config.work_ms_max > 0) {
    edits.push_back([](Scenario& s) {
      s.config.work_ms_min = 0;
      s.config.work_ms_max = 0;
      return true;
    });
  }
  if (config.broker_heartbeat_ms != Config{}.broker_heartbeat_ms) {
    edits.push_back([](Scenario& s) {
      s.config.broker_heartbeat_ms = Config{}.broker_heartbeat_ms;
      return true;
    });
  }
  // JetStream's keys that the swarm draws, back to nats-server's defaults: a counterexample
  // that needs no short ack wait, dedupe window or nak delay, and no +WPI, shows none.
  for (int64_t Config::*key : {&Config::broker_ack_wait_ms, &Config::broker_dedupe_window_ms,
                               &Config::consumer_nak_delay_ms}) {
    if (config.*key == Config{}.*key) continue;
    edits.push_back([key](Scenario& s) {
      s.config.*key = Config{}.*key;
      return true;
    });
  }
  if (config.consumer_in_progress) {
    edits.push_back([](Scenario& s) {
      s.config.consumer_in_progress = false;
      return true;
    });
  }
}

// Removing each transfer, last first (with its typed faults rewritten rather than removed, as
// a second edit, where that differs), then each step that is not a transfer or the ending.
void add_removal_edits(const Scenario& scenario, std::vector<Edit>& edits) {
  for (size_t i = scenario.steps.size(); i-- > 0;) {
    const Step& step = scenario.steps[i];
    if (step.kind != StepKind::transfer) continue;
    const std::string id = step.transfer.id;
    edits.push_back([id](Scenario& s) {
      remove_transfer(s, id, false);
      return true;
    });
    // Rewriting only differs from removing when a fault names this transfer and a type.
    const bool typed_fault =
        std::any_of(scenario.steps.begin(), scenario.steps.end(), [&](const Step& s) {
          return s.kind == StepKind::fault && s.fault.match.transfer == id && s.fault.match.type;
        });
    if (typed_fault) {
      edits.push_back([id](Scenario& s) {
        remove_transfer(s, id, true);
        return true;
      });
    }
  }
  for (size_t i = scenario.steps.size(); i-- > 0;) {
    // The operator's redrive is the story's ending, not a fault: without it a parked message
    // would hold its transfer by design, and any termination failure would shrink to that.
    if (scenario.steps[i].kind == StepKind::transfer) continue;
    if (part_of_the_ending(scenario, i)) continue;
    edits.push_back([i](Scenario& s) {
      s.steps.erase(s.steps.begin() + static_cast<ptrdiff_t>(i));
      return true;
    });
  }
}

// Each fault made to fire once, at its first occurrence, with the default restart; each
// transfer's amount lowered.
void add_fault_and_amount_edits(const Scenario& scenario, std::vector<Edit>& edits) {
  for (size_t i = 0; i < scenario.steps.size(); ++i) {
    const Step& step = scenario.steps[i];
    if (step.kind == StepKind::fault) {
      const FaultSpec& fault = step.fault;
      if (fault.match.occurrence > 1) {
        edits.push_back([i](Scenario& s) {
          s.steps[i].fault.match.occurrence = 1;
          return true;
        });
      }
      if (fault.times > 1) {
        edits.push_back([i](Scenario& s) {
          s.steps[i].fault.times = 1;
          return true;
        });
      }
      if (fault.restart_after_ms != FaultSpec{}.restart_after_ms) {
        edits.push_back([i](Scenario& s) {
          s.steps[i].fault.restart_after_ms = FaultSpec{}.restart_after_ms;
          return true;
        });
      }
    }
    if (step.kind == StepKind::transfer) {
      for (const int64_t amount : lower_values(step.transfer.amount, 1)) {
        edits.push_back([i, amount](Scenario& s) {
          s.steps[i].transfer.amount = amount;
          return true;
        });
      }
    }
  }
}

// Each account's opening balance lowered.
void add_balance_edits(const Scenario& scenario, std::vector<Edit>& edits) {
  for (const auto& [name, account] : scenario.accounts) {
    for (const int64_t balance : lower_values(account.balance, 0)) {
      const std::string account_name = name;
      edits.push_back([account_name, balance](Scenario& s) {
        s.accounts.at(account_name).balance = balance;
        return true;
      });
    }
  }
}

// Every single change worth trying on `scenario`, most shrinking first.
std::vector<Edit> candidate_edits(const Scenario& scenario) {
  std::vector<Edit> edits;
  add_removal_edits(scenario, edits);
  edits.push_back([](Scenario& s) {
    const size_t before = s.accounts.size();
    remove_unused_accounts(s);
    return s.accounts.size() < before;
  });
  add_concurrency_edits(scenario, edits);
  add_fault_and_amount_edits(scenario, edits);
  add_balance_edits(scenario, edits);
  return edits;
}

// Renames the transfers t1, t2, ... in the order they are requested, faults following them.
Scenario renumbered(const Scenario& scenario) {
  std::map<std::string, std::string> names;
  for (const Step& step : scenario.steps) {
    if (step.kind == StepKind::transfer) {
      names[step.transfer.id] = "t" + std::to_string(names.size() + 1);
    }
  }
  Scenario out = scenario;
  for (Step& step : out.steps) {
    if (step.kind == StepKind::transfer) step.transfer.id = names.at(step.transfer.id);
    if (step.kind == StepKind::fault && !step.fault.match.transfer.empty()) {
      step.fault.match.transfer = names.at(step.fault.match.transfer);
    }
  }
  return out;
}

std::string config_text(const Config& config) {
  const nlohmann::ordered_json diff = config_diff_json(config);
  if (diff.empty()) return "the default configuration";
  std::string text;
  for (const auto& [key, value] : diff.items()) {
    if (!text.empty()) text += ", ";
    text += key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return text;
}

std::string_view invariant_lesson(Invariant invariant) {
  switch (invariant) {
    case Invariant::conservation:
      return "Money was invented or destroyed: a duplicate or a crash got past every defence "
             "left on. Dedupe belongs in the same transaction as the effect, with a unique index "
             "behind it.";
    case Invariant::ledger_balance:
      return "A balance moved without its ledger entry or the other way round: the effect and "
             "its record must commit together.";
    case Invariant::single_effect:
      return "One transfer changed a balance twice: at-least-once delivery makes duplicates "
             "normal, so each effect needs a dedupe record or a unique key in its own transaction.";
    case Invariant::saga_ledger:
      return "The saga's final state disagrees with the ledger: a duplicate or a lost message "
             "was handled outside the transaction that records it.";
    case Invariant::legal_transitions:
      return "The saga took a step its state machine forbids: without the state machine, a "
             "duplicate event drives the saga a second time.";
    case Invariant::no_overdraft:
      return "A balance went below zero: a debit was applied twice, or without its check.";
    case Invariant::notified:
      return "A finished transfer got no notification, or two: two consumers that share one "
             "dedupe table must key it by message id and consumer.";
    case Invariant::termination:
      return "The bank did not settle once the faults stopped: work was marked done before it "
             "was, or a message was lost.";
    case Invariant::emailed:
      return "A customer got two emails, or none: the inbox protects exactly what is inside its "
             "transaction, and a call to the mail API is not.";
  }
  INBOXSIM_ASSERT(false);
}

}  // namespace

RunResult fuzz_run(const Scenario& scenario, std::function<void(const Step&)> after_step) {
  RunOptions options;
  options.keep_trace = false;
  // Campaigns and the shrinker judge a run by its violations; no one reads its trace hash,
  // and hashing every event was a twentieth of a small seed's time.
  options.hash_trace = false;
  options.after_step = std::move(after_step);
  return run_scenario(scenario, options);
}

std::optional<Invariant> first_violation(const RunResult& result) {
  if (result.violations.empty()) return std::nullopt;
  Invariant first = result.violations.front().invariant;
  for (const Violation& violation : result.violations) first = std::min(first, violation.invariant);
  return first;
}

bool breaks_invariant(const Scenario& scenario, Invariant invariant) {
  const RunResult result = fuzz_run(scenario);
  return std::any_of(result.violations.begin(), result.violations.end(),
                     [&](const Violation& v) { return v.invariant == invariant; });
}

namespace {

// True when `candidate` breaks `invariant` with its own seed or one of a few others (then its
// seed is set to the first that does). Counts each run in `runs`.
bool has_concurrency(const Scenario& scenario) {
  const Config& config = scenario.config;
  if (config.account_instances > 1 || config.transfer_instances > 1) return true;
  if (config.work_ms_max > 0) return true;
  return std::any_of(scenario.steps.begin(), scenario.steps.end(), [](const Step& step) {
    return step.kind == StepKind::fault && step.fault.kind == FaultKind::pause;
  });
}

bool still_fails(Scenario& candidate, Invariant invariant, int64_t& runs) {
  const uint64_t own = candidate.seed;
  const uint64_t attempts = has_concurrency(candidate) ? kReseedsPerCandidate : 0;
  for (uint64_t attempt = 0; attempt <= attempts && runs < kShrinkRunsMax; ++attempt) {
    // Seeds stay within what a scenario file may carry (parse accepts 0 to 2^53).
    candidate.seed = attempt == 0 ? own : (own + attempt * 7919) % (uint64_t{1} << 53);
    ++runs;
    if (breaks_invariant(candidate, invariant)) return true;
  }
  candidate.seed = own;
  return false;
}

}  // namespace

ShrinkResult shrink_scenario(const Scenario& failing, Invariant invariant) {
  ShrinkResult out;
  out.scenario = failing;
  out.scenario.expect = Expect{};
  INBOXSIM_ASSERT(breaks_invariant(out.scenario, invariant));
  bool changed = true;
  while (changed && out.runs < kShrinkRunsMax) {
    changed = false;
    // Edits are recomputed after every accepted change, since indexes shift.
    const std::vector<Edit> edits = candidate_edits(out.scenario);
    for (const Edit& edit : edits) {
      if (out.runs >= kShrinkRunsMax) break;
      Scenario candidate = out.scenario;
      if (!edit(candidate)) continue;
      if (still_fails(candidate, invariant, out.runs)) {
        out.scenario = std::move(candidate);
        changed = true;
        break;
      }
    }
  }
  remove_unused_accounts(out.scenario);
  if (!breaks_invariant(out.scenario, invariant)) out.scenario = failing;
  const Scenario tidy = renumbered(out.scenario);
  ++out.runs;
  if (breaks_invariant(tidy, invariant)) out.scenario = tidy;
  return out;
}

Config repaired_config(const Config& config) {
  const Config defaults;
  Config out = config;
  // An inbox that is no defence on its own (registry: is_a_defence) becomes the default one.
  if (!account_inbox_kind(out.account_inbox).is_a_defence) {
    out.account_inbox = default_account_inbox();
  }
  out.account_ledger_unique = true;
  out.account_remember_rejections = true;
  out.account_inbox_unique = true;
  out.account_inbox_window_ms = defaults.account_inbox_window_ms;
  out.account_keep_after_handling_ms = defaults.account_keep_after_handling_ms;
  out.transfer_dedupe = defaults.transfer_dedupe;
  out.transfer_processed_unique = true;
  out.transfer_processed_ttl_ms = defaults.transfer_processed_ttl_ms;
  out.transfer_state_machine = true;
  out.relay_stable_message_id = true;
  if (out.transfer_notifications) out.transfer_dedupe_key = DedupeKey::message_id_and_consumer;
  // A call outside the transaction has no safe place in the handler (before the commit it is
  // made again by every copy, after it a crash loses it): the repair takes the email out.
  out.transfer_email = EmailSend::none;
  // What the inbox kept needs of its own (Marten's rich append: ledger_conflict = fault).
  const AccountInboxKind& inbox = account_inbox_kind(out.account_inbox);
  if (inbox.repair != nullptr) inbox.repair(out);
  return out;
}

int64_t count_transfers(const Scenario& scenario) {
  return std::count_if(scenario.steps.begin(), scenario.steps.end(),
                       [](const Step& s) { return s.kind == StepKind::transfer; });
}

int64_t count_faults(const Scenario& scenario) {
  return std::count_if(scenario.steps.begin(), scenario.steps.end(), [](const Step& s) {
    return s.kind == StepKind::fault || s.kind == StepKind::advance ||
           s.kind == StepKind::drop_index;
  });
}

Scenario make_counterexample(const Scenario& shrunk, uint64_t seed, const DrawnOptions& drawn,
                             const std::string& workload, Invariant invariant) {
  Scenario out = shrunk;
  out.name = "fuzz-seed-" + std::to_string(seed);
  out.title = "Fuzz seed " + std::to_string(seed) + ": " + std::string(invariant_name(invariant)) +
              " breaks";
  out.description = "Found by `inboxsim fuzz` at seed " + std::to_string(seed) + " (workload " +
                    workload + ", drawn options: " + describe_drawn(drawn) + ") under " +
                    config_text(shrunk.config) + ", then shrunk to " +
                    std::to_string(count_transfers(shrunk)) + " transfer(s) and " +
                    std::to_string(count_faults(shrunk)) + " fault(s)" +
                    (shrunk.seed == seed ? std::string()
                                         : ", replayed with seed " + std::to_string(shrunk.seed)) +
                    ". The expectations are what a correct bank does with the same "
                    "story (every defence on): replaying this file fails until the bug is fixed.";
  out.lesson = std::string(invariant_lesson(invariant));
  Scenario reference = shrunk;
  reference.config = repaired_config(shrunk.config);
  const RunResult correct = fuzz_run(reference);
  out.expect = Expect{};
  if (correct.violations.empty()) {
    out.expect.balances = correct.balances;
    out.expect.transfers = correct.transfers;
  }
  return out;
}

}  // namespace inboxsim
