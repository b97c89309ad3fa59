// --show-rows: the rows each event changed, printed under the line that names their table.
#include <string>
#include <vector>

#include "domain/participants.h"
#include "kernel/assert.h"
#include "report/narrate.h"
#include "report/narrate_internal.h"

namespace inboxsim {

namespace {

// A remove names the row by its first few values: enough to recognise it.
constexpr size_t kRemovedValuesShown = 4;

std::string cell_text(const Cell& cell) { return cell ? *cell : "NULL"; }

// The value of a named column in a changed row (its new value, or its last), or "".
std::string column_value(const TableColumns& table, const RowChange& change,
                         std::string_view column) {
  const std::vector<Cell>& row = change.after.empty() ? change.before : change.after;
  for (size_t i = 0; i < table.columns.size() && i < row.size(); ++i) {
    if (table.columns[i] == column) return row[i].value_or("");
  }
  return {};
}

std::string row_change_line(const TableColumns& table, const RowChange& change) {
  std::string text = table.source + "." + table.table + " #" + std::to_string(change.key) + " ";
  const size_t columns = table.columns.size();
  if (change.op == RowOp::insert) {
    text = "+ " + text;
    for (size_t i = 0; i < columns && i < change.after.size(); ++i) {
      if (change.after[i]) text += " " + table.columns[i] + "=" + *change.after[i];
    }
  } else if (change.op == RowOp::update) {
    text = "~ " + text;
    std::string sep = " ";
    for (size_t i = 0; i < columns && i < change.after.size() && i < change.before.size(); ++i) {
      if (change.before[i] == change.after[i]) continue;
      text += sep + table.columns[i] + ": " + cell_text(change.before[i]) + " → " +
              cell_text(change.after[i]);
      sep = ", ";
    }
  } else {
    text = "- " + text + " deleted (";
    size_t shown = 0;
    for (size_t i = 0; i < columns && i < change.before.size() && shown < kRemovedValuesShown;
         ++i) {
      if (!change.before[i]) continue;
      text += (shown++ > 0 ? " " : "") + table.columns[i] + "=" + *change.before[i];
    }
    text += ")";
  }
  return text;
}

}  // namespace

std::vector<std::string> describe_row_changes(const RowHistory& history,
                                              const std::vector<RowChange>& changes) {
  std::vector<std::string> lines;
  for (const RowChange& change : changes) {
    INBOXSIM_ASSERT(change.table < history.tables.size());
    lines.push_back(row_change_line(history.tables[change.table], change));
  }
  return lines;
}

void Narrator::on_row_changes(const RowHistory& history, const std::vector<RowChange>& changes) {
  if (options_.quiet) return;
  for (const RowChange& change : changes) {
    INBOXSIM_ASSERT(change.table < history.tables.size());
    const TableColumns& table = history.tables[change.table];
    std::string line = row_change_line(table, change);
    if (group_.empty()) {
      // The opening rows, or the rows of an event already on the screen (after a pause).
      if (event_count_ == 0 || last_printed_) {
        out_ << std::string(kIndentWidth, ' ') << paint(line, kCyan) << '\n';
      }
      continue;
    }
    const size_t order = rows_seen_++;
    Entry& attributed = group_.back();
    if (table.source != participant::broker &&
        names_table(attributed.event, table.source, table.table)) {
      attributed.rows.emplace_back(order, std::move(line));
      continue;
    }
    pending_rows_.push_back(PendingRow{order, group_.size() - 1, std::move(line), table.source,
                                       table.table, column_value(table, change, "message_id"),
                                       column_value(table, change, "consumer")});
  }
}

}  // namespace inboxsim
