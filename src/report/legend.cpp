#include "report/legend.h"

#include <algorithm>
#include <array>

#include "kernel/assert.h"
#include "report/glossary.h"
#include "report/html.h"

namespace inboxsim {

namespace {

// In Invariant's order; the static_assert keeps the two lists the same length.
constexpr std::array<std::string_view, kInvariantCount> kInvariantMeanings = {
    "no money invented or destroyed: at every moment the balances plus the money in flight add "
    "up to what the accounts opened with",
    "every balance equals its opening balance plus its own ledger entries",
    "each (transfer, DEBIT / CREDIT / REFUND) changed a balance at most once: no double debit, "
    "no double credit",
    "a finished transfer agrees with the ledger: COMPLETED has one DEBIT and one CREDIT, "
    "REJECTED none, FAILED one DEBIT and one REFUND",
    "every saga state change follows an arrow of the saga (REQUESTED → DEBITED → COMPLETED, "
    "REQUESTED → REJECTED, DEBITED → COMPENSATING → FAILED), never backwards or sideways",
    "no balance below zero",
    "with notifications on, every COMPLETED or FAILED transfer sent its customer exactly one "
    "notification",
    "once the faults stop, everything settles: every transfer reaches a final state, outboxes "
    "are empty, work queues drain (what waits in an error or dead-letter queue is named)",
    "with transfer.email on, every COMPLETED or FAILED transfer sent its customer exactly one "
    "email: a call to the mail API, outside every transaction",
};
static_assert(kInvariantMeanings.size() == kInvariantCount);

// The glossary's words every narration needs beside the invariants; the rest are a
// `inboxsim glossary` away (the legend's last line says so).
constexpr std::array<std::string_view, 4> kGlossaryWords = {"in flight", "quiescent",
                                                            "dedupe hit", "redelivered"};

std::vector<LegendTerm> make_terms() {
  std::vector<LegendTerm> terms;
  for (size_t i = 0; i < kInvariantCount; ++i) {
    const auto invariant = static_cast<Invariant>(i);
    terms.push_back(LegendTerm{invariant_name(invariant), invariant_meaning(invariant)});
  }
  // The other words are the glossary's (report/glossary.h), said in its words.
  for (const std::string_view word : kGlossaryWords) {
    const GlossaryEntry* entry = find_glossary_entry(word);
    INBOXSIM_ASSERT(entry != nullptr);
    terms.push_back(LegendTerm{entry->term, entry->meaning});
  }
  return terms;
}

constexpr std::string_view kMoreWords =
    "other words (tag, m-N, pass, crash point, prefetch, quorum queue, _error, .dlq, relay, "
    "...): inboxsim glossary, or inboxsim glossary TERM";

}  // namespace

std::string_view invariant_meaning(Invariant invariant) {
  const auto index = static_cast<size_t>(invariant);
  INBOXSIM_ASSERT(index < kInvariantMeanings.size());
  return kInvariantMeanings[index];
}

const std::vector<LegendTerm>& legend_terms() {
  static const std::vector<LegendTerm> terms = make_terms();
  return terms;
}

std::string legend_text(std::string_view indent,
                        const std::array<bool, kInvariantCount>* applies) {
  size_t width = 0;
  for (const LegendTerm& term : legend_terms()) width = std::max(width, term.term.size());
  std::string text;
  for (size_t i = 0; i < legend_terms().size(); ++i) {
    const LegendTerm& term = legend_terms()[i];
    if (applies != nullptr && i < kInvariantCount && !(*applies)[i]) continue;
    std::string name(term.term);
    name.append(width - name.size(), ' ');
    text += std::string(indent) + name + "  " + std::string(term.meaning) + "\n";
  }
  return text + std::string(indent) + std::string(kMoreWords) + "\n";
}

std::string legend_html() {
  std::string html = "<section class=\"legend\"><h2>Legend</h2><dl>";
  for (const LegendTerm& term : legend_terms()) {
    html += "<dt>" + escape_html(term.term) + "</dt><dd>" + escape_html(term.meaning) + "</dd>";
  }
  return html + "</dl></section>\n";
}

}  // namespace inboxsim
