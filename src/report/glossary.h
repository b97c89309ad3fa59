// The glossary: every word the narration, the reports and the lessons use that a student would
// not know (a delivery tag, m-N, MassTransit's passes, crash points, the queue types, ...), in
// one table. `inboxsim glossary` prints it, the legend takes its words from it
// (report/legend.h), and the HTML report can show it (glossary_html).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace inboxsim {

// One term: how the narration spells it, the other spellings a reader may type, what it means
// in plain words, and where in the library to see it.
struct GlossaryEntry {
  std::string term;
  std::vector<std::string> aliases;
  std::string meaning;
  std::string where;  // empty when it is everywhere
};

// Returns every entry, in reading order: the delivery's words first, then the services', the
// fault paths', the explorer's, and the invariants last (from the legend's table).
const std::vector<GlossaryEntry>& glossary();

// Returns the entry whose term or alias is `name` (case and the spaces around it ignored, "_"
// and "-" alike), or nullptr.
const GlossaryEntry* find_glossary_entry(std::string_view name);

// Returns the terms, comma-separated, in the glossary's order (the list an unknown term is
// answered with).
std::string glossary_terms_text();

// Returns one entry as plain text: the term (with its aliases), then its meaning and where to
// see it, wrapped at 78 columns and indented by two spaces.
std::string glossary_entry_text(const GlossaryEntry& entry);

// Returns the whole glossary as plain text, an entry per paragraph.
std::string glossary_text();

// Returns the anchor of `entry` in glossary_html(): "glossary-" and the term with every
// character that is not a letter or a digit as "-" ("glossary-m-n", "glossary-x-delivery-count").
std::string glossary_anchor(const GlossaryEntry& entry);

// Returns the glossary as an HTML fragment, escaped: a folded <details class="glossary"> with a <dl>,
// each <dt> carrying id="glossary_anchor(entry)" so a page can link a word to its meaning.
std::string glossary_html();

}  // namespace inboxsim
