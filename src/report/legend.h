// The words a reader of the narration and the HTML report meets without a definition: the
// invariants' names, "in flight", "quiescent". Said once, here, so that the terminal, the demo's
// opening and the HTML report define them alike.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "domain/scenario.h"

namespace inboxsim {

// One term and its meaning, in plain words for a class.
struct LegendTerm {
  std::string_view term;
  std::string_view meaning;
};

// Returns what `invariant` checks, one sentence (docs/contract.md §4 in a student's words).
std::string_view invariant_meaning(Invariant invariant);

// Returns every term of the legend: the eight invariants in their report order, then
// "in flight", "quiescent", "dedupe hit" and "redelivered", as the glossary (report/glossary.h)
// words them.
const std::vector<LegendTerm>& legend_terms();

// Returns the legend as plain text, one "term  meaning" line per term, each line starting with
// `indent`. With `applies` (a run's invariant_applies), an invariant that does not apply to the
// run (notified, without notifications) is left out, as the run's invariant list leaves it out.
// A last line sends the reader to `inboxsim glossary` for the other words.
std::string legend_text(std::string_view indent,
                        const std::array<bool, kInvariantCount>* applies = nullptr);

// Returns the legend as an HTML fragment (a <section class="legend"> with a <dl>), escaped.
std::string legend_html();

}  // namespace inboxsim
