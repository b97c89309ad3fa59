// What happened to the bank's money, in the words of a run's last lines and the report's header:
// the money sentence, the bank's verdict and the verdict line (report/narrate.h).
#include <map>
#include <string>

#include "report/narrate.h"

namespace inboxsim {

namespace {

// Money in flight at the end: each transfer with a DEBIT and neither a CREDIT nor a REFUND.
// With `finished_only`, only such transfers whose saga is already final: money stuck there.
int64_t money_in_flight(const RunResult& result, bool finished_only = false) {
  std::map<std::string, std::array<int64_t, 3>> entries;  // DEBIT, CREDIT, REFUND counts
  for (const LedgerEntry& entry : result.ledger) {
    ++entries[entry.transfer][static_cast<size_t>(entry.type)];
  }
  int64_t in_flight = 0;
  for (const auto& [transfer, counts] : entries) {
    if (counts[0] == 0 || counts[1] > 0 || counts[2] > 0) continue;
    if (finished_only) {
      const auto state = result.transfers.find(transfer);
      if (state == result.transfers.end() || !is_terminal(state->second)) continue;
    }
    const auto amount = result.transfer_amounts.find(transfer);
    if (amount != result.transfer_amounts.end()) in_flight += amount->second;
  }
  return in_flight;
}

int64_t total_of(const std::map<std::string, int64_t>& balances) {
  int64_t total = 0;
  for (const auto& [account, balance] : balances) total += balance;
  return total;
}

const Violation* violation_of(const RunResult& result, Invariant invariant) {
  for (const Violation& violation : result.violations) {
    if (violation.invariant == invariant) return &violation;
  }
  return nullptr;
}

}  // namespace

bool money_right(const RunResult& result) {
  return violation_of(result, Invariant::conservation) == nullptr &&
         total_of(result.balances) + money_in_flight(result) == total_of(result.opening_balances) &&
         money_in_flight(result, true) == 0;
}

std::string money_sentence(const RunResult& result) {
  const int64_t opened = total_of(result.opening_balances);
  const int64_t balances = total_of(result.balances);
  const int64_t in_flight = money_in_flight(result);
  const int64_t difference = balances + in_flight - opened;
  std::string end = difference == 0  ? "right at the end"
                    : difference > 0 ? std::to_string(difference) + " invented by the end"
                                     : std::to_string(-difference) + " destroyed by the end";
  std::string text = "Money: ";
  // Where it first broke and how it ended can differ (destroyed first, invented by the end):
  // both are said.
  if (const Violation* broken = violation_of(result, Invariant::conservation)) {
    text += "first broke at " + human_duration(broken->time_ms) + " (" + broken->detail + "); ";
  }
  text += end + " (balances " + std::to_string(balances) + ", in flight " +
          std::to_string(in_flight) + ", opened with " + std::to_string(opened) + ")";
  if (const int64_t stuck = money_in_flight(result, true); stuck > 0) {
    text += ", but " + std::to_string(stuck) +
            " of it is stuck in flight: debited for transfers that are already finished, and "
            "nothing will ever credit or refund it";
  }
  if (money_right(result)) return text + ".";
  // The verdict below says whether the expectations were met; a break-it story expects this.
  const bool expected = result.passed && !result.expectations.empty();
  return text + (expected ? ". This story is meant to show it: the verdict below says it broke "
                            "exactly as expected."
                          : ".");
}

std::string bank_verdict(const RunResult& result) {
  if (result.violations.empty() && money_right(result)) return "bank correct";
  std::string text = "bank broke";
  if (!result.violations.empty()) {
    const Violation* first = &result.violations.front();
    for (const Violation& violation : result.violations) {
      if (violation.time_ms < first->time_ms) first = &violation;
    }
    text += ": " + std::string(invariant_name(first->invariant)) + " at " +
            human_duration(first->time_ms);
    if (result.violations.size() > 1) {
      text += " (and " + std::to_string(result.violations.size() - 1) + " more)";
    }
  }
  const int64_t difference =
      total_of(result.balances) + money_in_flight(result) - total_of(result.opening_balances);
  if (difference != 0) {
    text += (result.violations.empty() ? ": " : ", ") + std::to_string(std::abs(difference)) +
            (difference > 0 ? " invented" : " destroyed");
  } else if (const int64_t stuck = money_in_flight(result, true); stuck > 0) {
    text += (result.violations.empty() ? ": " : ", ") + std::to_string(stuck) + " stuck in flight";
  }
  return text;
}

std::string verdict_line(const RunResult& result) {
  std::string line = result.passed ? "PASS  " : "FAIL  ";
  line += result.name.empty() ? result.file : result.name;
  if (!result.title.empty()) line += ": " + result.title;
  const auto failed = std::count_if(result.expectations.begin(), result.expectations.end(),
                                    [](const ExpectationResult& e) { return !e.ok; });
  const std::string bank = bank_verdict(result);
  line += "  · " + bank;
  // A story that is meant to break the bank passes when it does: said, so a green PASS beside
  // a broken bank is not read as a bank that works.
  if (result.passed && bank != "bank correct" && !result.expectations.empty()) {
    line += ", as this story expects";
  }
  line += "  (";
  if (failed > 0) {
    line += std::to_string(failed) + " of " + std::to_string(result.expectations.size()) +
            " expectations failed, ";
  }
  line += "seed " + std::to_string(result.seed);
  if (!result.trace_hash.empty()) line += ", trace " + result.trace_hash;
  return line + ")";
}

}  // namespace inboxsim
