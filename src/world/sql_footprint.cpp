// The pre-update hook is declared only when this is defined; Debian's libsqlite3 is built with
// it (world/row_recorder.cpp uses it too).
#define SQLITE_ENABLE_PREUPDATE_HOOK 1
#include <sqlite3.h>

#include "world/sql_footprint.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include "domain/crash.h"
#include "kernel/assert.h"
#include "world/explore_driver.h"

namespace inboxsim {

namespace {

// ---- the text of a statement --------------------------------------------------------------

struct Token {
  enum class Kind : uint8_t { word, string, number, parameter, symbol };
  Kind kind = Kind::symbol;
  // A view into the statement's text: a word as written (a quoted one without its quotes), a
  // string's content with its quotes doubled, a number, a parameter or a symbol.
  std::string_view text;
};

// ASCII only, as SQL's keywords and the services' names are: the C library's classes would
// consult the locale on every character of every statement.
bool space_char(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool digit_char(char c) { return c >= '0' && c <= '9'; }
bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || digit_char(c) || c == '_';
}
char upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }

// `text` equals `word` (upper case) ignoring case.
bool same_word(std::string_view text, std::string_view word) {
  if (text.size() != word.size()) return false;
  for (size_t at = 0; at < text.size(); ++at) {
    if (upper(text[at]) != word[at]) return false;
  }
  return true;
}

// Splits `sql` into `tokens` (cleared first). The tokens view `sql`, which must outlive them.
void tokenize(std::string_view sql, std::vector<Token>& tokens) {
  tokens.clear();
  size_t at = 0;
  const auto span = [&](size_t from) { return sql.substr(from, at - from); };
  while (at < sql.size()) {
    const char c = sql[at];
    if (space_char(c)) {
      ++at;
      continue;
    }
    Token token;
    if (c == '\'' || c == '"') {
      // A string, or a quoted name: a doubled quote stands for one.
      token.kind = c == '\'' ? Token::Kind::string : Token::Kind::word;
      const size_t from = ++at;
      while (at < sql.size() && !(sql[at] == c && (at + 1 >= sql.size() || sql[at + 1] != c))) {
        at += sql[at] == c ? size_t{2} : size_t{1};
      }
      token.text = span(from);
      if (at < sql.size()) ++at;
    } else if (digit_char(c)) {
      token.kind = Token::Kind::number;
      const size_t from = at;
      while (at < sql.size() && (word_char(sql[at]) || sql[at] == '.')) ++at;
      token.text = span(from);
    } else if (word_char(c)) {
      token.kind = Token::Kind::word;
      const size_t from = at;
      while (at < sql.size() && word_char(sql[at])) ++at;
      token.text = span(from);
    } else if (c == '?' || c == ':' || c == '@' || c == '$') {
      token.kind = Token::Kind::parameter;
      const size_t from = at++;
      while (at < sql.size() && word_char(sql[at])) ++at;
      token.text = span(from);
    } else {
      token.kind = Token::Kind::symbol;
      const size_t from = at++;
      if (at < sql.size() && (c == '<' || c == '>' || c == '!' || c == '|') &&
          (sql[at] == '=' || sql[at] == '>' || sql[at] == '|')) {
        ++at;
      }
      token.text = span(from);
    }
    tokens.push_back(token);
  }
}

// A string token's value: its doubled quotes made single.
std::string unquoted(std::string_view text) {
  std::string value;
  value.reserve(text.size());
  for (size_t at = 0; at < text.size(); ++at) {
    value += text[at];
    if (text[at] == '\'' && at + 1 < text.size() && text[at + 1] == '\'') ++at;
  }
  return value;
}

bool is_word(const Token& token, std::string_view word) {
  return token.kind == Token::Kind::word && same_word(token.text, word);
}

// The parenthesis depth before each token.
void depths(const std::vector<Token>& tokens, std::vector<int>& depth) {
  depth.assign(tokens.size(), 0);
  int level = 0;
  for (size_t index = 0; index < tokens.size(); ++index) {
    if (tokens[index].kind == Token::Kind::symbol && tokens[index].text == ")") --level;
    depth[index] = level;
    if (tokens[index].kind == Token::Kind::symbol && tokens[index].text == "(") ++level;
  }
}

// A literal value at `at` (a string, a number, a signed number), as SqlFootprint keys it: its
// text. Returns the index past it, or 0 when there is none (NULL, a blob, an expression).
size_t literal_at(const std::vector<Token>& tokens, size_t at, std::string& value) {
  if (at >= tokens.size()) return 0;
  const Token& token = tokens[at];
  if (token.kind == Token::Kind::string) {
    value = unquoted(token.text);
    return at + 1;
  }
  if (token.kind == Token::Kind::number) {
    value = token.text;
    return at + 1;
  }
  if (token.kind == Token::Kind::symbol && token.text == "-" && at + 1 < tokens.size() &&
      tokens[at + 1].kind == Token::Kind::number) {
    value = "-";
    value += tokens[at + 1].text;
    return at + 2;
  }
  return 0;
}

bool ends_clause(const Token& token) {
  return is_word(token, "ORDER") || is_word(token, "GROUP") || is_word(token, "LIMIT") ||
         is_word(token, "RETURNING") || is_word(token, "HAVING");
}

// The top-level WHERE of the statement: [first, last) token indexes; false when it has none,
// or it has an OR at its top level (a conjunct then bounds nothing).
bool where_clause(const std::vector<Token>& tokens, const std::vector<int>& depth, size_t& first,
                  size_t& last) {
  first = tokens.size();
  for (size_t index = 0; index < tokens.size(); ++index) {
    if (depth[index] == 0 && is_word(tokens[index], "WHERE")) {
      first = index + 1;
      break;
    }
  }
  if (first == tokens.size()) return false;
  last = first;
  while (last < tokens.size() && !(depth[last] == 0 && ends_clause(tokens[last]))) {
    if (depth[last] == 0 && (is_word(tokens[last], "OR") || is_word(tokens[last], "BETWEEN"))) {
      return false;
    }
    ++last;
  }
  return true;
}

// Calls `found(column, value index)` for each top-level conjunct `[alias.]column = value` of
// the WHERE clause [first, last).
template <typename Found>
void equality_conjuncts(const std::vector<Token>& tokens, const std::vector<int>& depth,
                        size_t first, size_t last, Found&& found) {
  for (size_t index = first; index < last; ++index) {
    if (depth[index] != 0 || tokens[index].kind != Token::Kind::word) continue;
    if (index != first && !is_word(tokens[index - 1], "AND")) continue;
    size_t column = index;
    size_t next = index + 1;
    if (next + 1 < last && tokens[next].text == "." && tokens[next + 1].kind == Token::Kind::word) {
      column = next + 1;
      next += 2;
    }
    if (next >= last || tokens[next].kind != Token::Kind::symbol || tokens[next].text != "=") {
      continue;
    }
    const size_t value = next + 1;
    // The value ends the conjunct: an AND or the clause's end follows it.
    size_t after = value + 1;
    if (value < last && tokens[value].text == "-") ++after;
    if (after < last && !is_word(tokens[after], "AND")) continue;
    found(tokens[column].text, value);
  }
}

// ---- the tables' columns ------------------------------------------------------------------

using Tables = std::map<std::string, SqlFootprint::Table, std::less<>>;

// The first column of each unique key of `table`: its primary key and its unique indexes.
std::vector<std::string> unique_first_columns(sqlite3* handle, const SqlFootprint::Table& table) {
  std::vector<std::string> columns;
  const auto add = [&](std::string column) {
    if (std::find(columns.begin(), columns.end(), column) == columns.end()) {
      columns.push_back(std::move(column));
    }
  };
  sqlite3_stmt* indexes = nullptr;
  const std::string list = "PRAGMA index_list(\"" + table.name + "\")";
  INBOXSIM_ASSERT(sqlite3_prepare_v2(handle, list.c_str(), -1, &indexes, nullptr) == SQLITE_OK);
  while (sqlite3_step(indexes) == SQLITE_ROW) {
    if (sqlite3_column_int(indexes, 2) == 0) continue;  // not unique
    const std::string index = reinterpret_cast<const char*>(sqlite3_column_text(indexes, 1));
    sqlite3_stmt* info = nullptr;
    const std::string sql = "PRAGMA index_info(\"" + index + "\")";
    INBOXSIM_ASSERT(sqlite3_prepare_v2(handle, sql.c_str(), -1, &info, nullptr) == SQLITE_OK);
    if (sqlite3_step(info) == SQLITE_ROW) {
      add(reinterpret_cast<const char*>(sqlite3_column_text(info, 2)));
    }
    sqlite3_finalize(info);
  }
  sqlite3_finalize(indexes);
  if (table.rowid_column >= 0) add(table.columns[static_cast<size_t>(table.rowid_column)]);
  return columns;
}

Tables read_tables(sqlite3* handle) {
  Tables tables;
  sqlite3_stmt* names = nullptr;
  INBOXSIM_ASSERT(sqlite3_prepare_v2(handle,
                                     "SELECT name FROM sqlite_master WHERE type = 'table' AND name"
                                     " NOT LIKE 'sqlite_%' ORDER BY name",
                                     -1, &names, nullptr) == SQLITE_OK);
  while (sqlite3_step(names) == SQLITE_ROW) {
    SqlFootprint::Table table;
    table.name = reinterpret_cast<const char*>(sqlite3_column_text(names, 0));
    sqlite3_stmt* columns = nullptr;
    const std::string sql = "PRAGMA table_info(\"" + table.name + "\")";
    INBOXSIM_ASSERT(sqlite3_prepare_v2(handle, sql.c_str(), -1, &columns, nullptr) == SQLITE_OK);
    int integer_keys = 0;
    int key_column = -1;
    while (sqlite3_step(columns) == SQLITE_ROW) {
      const std::string type = reinterpret_cast<const char*>(sqlite3_column_text(columns, 2));
      if (sqlite3_column_int(columns, 5) > 0) {
        ++integer_keys;
        if (type == "INTEGER") key_column = static_cast<int>(table.columns.size());
      }
      table.columns.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(columns, 1)));
    }
    sqlite3_finalize(columns);
    // Only a primary key of one INTEGER column is the rowid.
    if (integer_keys == 1) table.rowid_column = key_column;
    table.unique_columns = unique_first_columns(handle, table);
    tables.emplace(table.name, std::move(table));
  }
  sqlite3_finalize(names);
  return tables;
}

// The tables of a connection, per connection and schema: read once per thread (a pooled
// connection serves one replay after another).
const Tables& tables_of(sqlite3* handle, const std::string& schema_key) {
  thread_local std::map<std::pair<const sqlite3*, std::string>, Tables> cache;
  const auto key = std::make_pair(static_cast<const sqlite3*>(handle), schema_key);
  auto found = cache.find(key);
  if (found == cache.end()) found = cache.emplace(key, read_tables(handle)).first;
  return found->second;
}

// A statement's shape, by its text: kept per thread by where SQLite keeps the text (each
// prepared statement keeps its own as long as it lives), the text compared on every hit.
const StatementShape& shape_of(const char* sql) {
  thread_local std::unordered_map<const char*, std::pair<std::string, StatementShape>> cache;
  auto& [text, shape] = cache[sql];
  if (text != sql) {
    text = sql;
    shape = statement_shape(text);
  }
  return shape;
}

}  // namespace

StatementShape statement_shape(std::string_view sql) {
  StatementShape shape;
  std::vector<Token> tokens;
  tokenize(sql, tokens);
  if (tokens.empty() || tokens.front().kind != Token::Kind::word) return shape;
  std::string verb(tokens.front().text);
  std::transform(verb.begin(), verb.end(), verb.begin(), upper);
  if (verb == "BEGIN" || verb == "COMMIT" || verb == "ROLLBACK" || verb == "END" ||
      verb == "SAVEPOINT" || verb == "RELEASE") {
    return shape;
  }
  if (verb == "CREATE" || verb == "DROP" || verb == "ALTER" || verb == "PRAGMA" ||
      verb == "VACUUM") {
    shape.kind = StatementShape::Kind::ddl;
    return shape;
  }
  for (size_t index = 0; index + 1 < tokens.size(); ++index) {
    const bool names_next = is_word(tokens[index], "FROM") || is_word(tokens[index], "JOIN") ||
                            is_word(tokens[index], "INTO") ||
                            (index == 0 && is_word(tokens[index], "UPDATE"));
    if (names_next && tokens[index + 1].kind == Token::Kind::word) {
      const std::string_view name = tokens[index + 1].text;
      if (std::find(shape.tables.begin(), shape.tables.end(), name) == shape.tables.end()) {
        shape.tables.emplace_back(name);
      }
    }
  }
  std::vector<int> depth;
  depths(tokens, depth);
  if (verb == "INSERT" || verb == "REPLACE") {
    shape.kind = StatementShape::Kind::insert;
    // INSERT [OR ...] INTO t (c, ...) VALUES (...): one row of plain columns.
    for (size_t index = 0; index + 2 < tokens.size(); ++index) {
      if (!is_word(tokens[index], "INTO")) continue;
      size_t at = index + 2;
      if (tokens[at].text != "(") break;
      for (++at; at < tokens.size() && tokens[at].text != ")"; ++at) {
        if (tokens[at].kind == Token::Kind::word) {
          shape.insert_columns.emplace_back(tokens[at].text);
        }
      }
      const bool values = at + 1 < tokens.size() && is_word(tokens[at + 1], "VALUES");
      if (!values || shape.tables.size() != 1) shape.insert_columns.clear();
      break;
    }
    return shape;
  }
  shape.kind = StatementShape::Kind::read;
  if (shape.tables.size() != 1) return shape;
  size_t first = 0;
  size_t last = 0;
  if (!where_clause(tokens, depth, first, last)) return shape;
  equality_conjuncts(tokens, depth, first, last, [&](std::string_view column, size_t value) {
    const Token& token = tokens[value];
    const bool plain = token.kind == Token::Kind::parameter ||
                       token.kind == Token::Kind::string || token.kind == Token::Kind::number;
    if (plain && shape.key_column.empty()) shape.key_column = column;
  });
  return shape;
}

bool keyed_value(std::string_view expanded_sql, std::string_view column, std::string& value) {
  thread_local std::vector<Token> tokens;
  tokenize(expanded_sql, tokens);
  thread_local std::vector<int> depth;
  depths(tokens, depth);
  size_t first = 0;
  size_t last = 0;
  if (!where_clause(tokens, depth, first, last)) return false;
  bool found = false;
  equality_conjuncts(tokens, depth, first, last, [&](std::string_view name, size_t at) {
    if (found || name != column) return;
    found = literal_at(tokens, at, value) != 0;
  });
  return found;
}

bool insert_values(std::string_view expanded_sql, std::vector<std::string>& values) {
  thread_local std::vector<Token> tokens;
  tokenize(expanded_sql, tokens);
  values.clear();
  size_t at = 0;
  while (at < tokens.size() && !is_word(tokens[at], "VALUES")) ++at;
  if (at + 1 >= tokens.size() || tokens[at + 1].text != "(") return false;
  at += 2;
  for (;;) {
    std::string value;
    const size_t next = literal_at(tokens, at, value);
    if (next == 0 || next >= tokens.size()) return false;
    values.push_back(std::move(value));
    if (tokens[next].text == ")") return next + 1 == tokens.size() || tokens[next + 1].text != ",";
    if (tokens[next].text != ",") return false;
    at = next + 1;
  }
}

// ---- the hooks ----------------------------------------------------------------------------

struct SqlFootprint::Watched {
  SqlFootprint* owner = nullptr;
  sqlite3* handle = nullptr;
  uint64_t scope = 0;
  const Tables* tables = nullptr;
  // The tables whose insertion order is read only within a group (UnorderedTable), each with
  // the column that names its group (-1: no group, nothing reads the order).
  std::map<std::string, int, std::less<>> unordered;
};

SqlFootprint::SqlFootprint(ExploreDriver& driver) : driver_(driver) {}

SqlFootprint::~SqlFootprint() {
  for (const auto& watched : watched_) {
    sqlite3_trace_v2(watched->handle, 0, nullptr, nullptr);
    sqlite3_preupdate_hook(watched->handle, nullptr, nullptr);
  }
}

void SqlFootprint::watch(sqlite3* handle, uint64_t scope, const std::string& schema_key,
                         std::span<const UnorderedTable> unordered) {
  INBOXSIM_ASSERT(sqlite3_get_autocommit(handle) != 0);
  auto watched = std::make_unique<Watched>();
  watched->owner = this;
  watched->handle = handle;
  watched->scope = scope;
  watched->tables = &tables_of(handle, schema_key);
  for (const UnorderedTable& table : unordered) {
    const auto known = watched->tables->find(std::string_view(table.name));
    if (known == watched->tables->end()) continue;
    int group = -1;
    if (table.group_column != nullptr) {
      const std::vector<std::string>& columns = known->second.columns;
      const auto at = std::find(columns.begin(), columns.end(), table.group_column);
      INBOXSIM_ASSERT(at != columns.end());
      group = static_cast<int>(at - columns.begin());
    }
    watched->unordered.emplace(table.name, group);
  }
  // The report of the races most reversed names a table's scan and next rowid.
  const std::string service(service_name(static_cast<ServiceId>(scope)));
  for (const auto& [name, table] : *watched->tables) {
    name_resource(resource_of(ResourceClass::table_scan, scope, name), service + "." + name);
    name_resource(resource_of(ResourceClass::table_insert, scope, name), service + "." + name);
  }
  sqlite3_trace_v2(handle, SQLITE_TRACE_STMT, &SqlFootprint::on_statement, watched.get());
  sqlite3_preupdate_hook(handle, &SqlFootprint::on_preupdate, watched.get());
  watched_.push_back(std::move(watched));
}

void SqlFootprint::touch(uint64_t resource, Access access) {
  if (quiet_ == 0) driver_.touch(resource, access);
}

int SqlFootprint::on_statement(unsigned type, void* context, void* statement, void* /*text*/) {
  if (type != SQLITE_TRACE_STMT) return 0;
  const auto* watched = static_cast<const Watched*>(context);
  SqlFootprint& self = *watched->owner;
  if (self.quiet_ == 0 && self.driver_.footprinting()) {
    self.statement(*watched, static_cast<sqlite3_stmt*>(statement));
  }
  return 0;
}

void SqlFootprint::on_preupdate(void* context, sqlite3* /*handle*/, int op,
                                const char* /*database*/, const char* table,
                                long long old_rowid, long long new_rowid) {
  const auto* watched = static_cast<const Watched*>(context);
  SqlFootprint& self = *watched->owner;
  if (self.quiet_ == 0 && self.driver_.footprinting()) {
    self.row_change(*watched, op, table, old_rowid, new_rowid);
  }
}

void SqlFootprint::read_whole(const Watched& watched, std::string_view table) {
  if (watched.tables->count(table) == 0) {
    // A view, or a name this parse took for a table: every table, whole.
    for (const auto& [name, known] : *watched.tables) read_whole(watched, name);
    return;
  }
  touch(resource_of(ResourceClass::table_scan, watched.scope, table), Access::query);
}

void SqlFootprint::statement(const Watched& watched, sqlite3_stmt* statement) {
  const char* sql = sqlite3_sql(statement);
  if (sql == nullptr) {
    // No text to read (not one of SQLite's prepare_v2/v3 statements): the database, whole.
    touch(resource_id(ResourceClass::database, watched.scope), Access::write);
    return;
  }
  const StatementShape& shape = shape_of(sql);
  const uint64_t schema = resource_id(ResourceClass::database, watched.scope);
  switch (shape.kind) {
    case StatementShape::Kind::none: return;
    case StatementShape::Kind::ddl: touch(schema, Access::write); return;
    case StatementShape::Kind::read:
    case StatementShape::Kind::insert: break;
  }
  // What a statement does depends on the schema (an index dropped lets a duplicate in).
  touch(schema, Access::read);
  const bool keyed = shape.kind == StatementShape::Kind::read ? !shape.key_column.empty()
                                                              : !shape.insert_columns.empty();
  if (keyed && watched.tables->count(shape.tables.front()) > 0) {
    char* expanded = sqlite3_expanded_sql(statement);
    if (expanded != nullptr) {
      const std::string_view text(expanded);
      const std::string& table = shape.tables.front();
      bool read = false;
      if (shape.kind == StatementShape::Kind::read) {
        std::string value;
        if (keyed_value(text, shape.key_column, value)) {
          touch(resource_of(ResourceClass::row_key, watched.scope, table,
                            shape.key_column + '\0' + value),
                Access::query);
          read = true;
        }
      } else {
        std::vector<std::string> values;
        if (insert_values(text, values) && values.size() == shape.insert_columns.size()) {
          const Table& known = watched.tables->find(table)->second;
          for (size_t column = 0; column < values.size(); ++column) {
            const std::string& name = shape.insert_columns[column];
            if (std::find(known.unique_columns.begin(), known.unique_columns.end(), name) ==
                known.unique_columns.end()) {
              continue;
            }
            touch(resource_of(ResourceClass::row_key, watched.scope, table,
                              name + '\0' + values[column]),
                  Access::query);
          }
          read = true;
        }
      }
      sqlite3_free(expanded);
      if (read) return;
    }
  }
  for (const std::string& table : shape.tables) read_whole(watched, table);
}

void SqlFootprint::touch_row(const Watched& watched, const Table& table, bool old_row,
                             int64_t rowid) {
  touch(resource_of(ResourceClass::row_key, watched.scope, table.name,
                    std::string("\0rowid\0", 7) + std::to_string(rowid)),
        Access::write);
  const int count = sqlite3_preupdate_count(watched.handle);
  for (int column = 0; column < count && column < static_cast<int>(table.columns.size());
       ++column) {
    std::string value;
    if (column == table.rowid_column) {
      value = std::to_string(rowid);
    } else {
      sqlite3_value* cell = nullptr;
      const int status = old_row ? sqlite3_preupdate_old(watched.handle, column, &cell)
                                 : sqlite3_preupdate_new(watched.handle, column, &cell);
      if (status != SQLITE_OK || cell == nullptr) continue;
      const int type = sqlite3_value_type(cell);
      if (type == SQLITE_NULL) continue;  // `column = value` never holds for a NULL
      if (type == SQLITE_INTEGER) {
        value = std::to_string(sqlite3_value_int64(cell));
      } else {
        const unsigned char* text = sqlite3_value_text(cell);
        value.assign(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_value_bytes(cell)));
      }
    }
    touch(resource_of(ResourceClass::row_key, watched.scope, table.name,
                      table.columns[static_cast<size_t>(column)] + '\0' + value),
          Access::change);
  }
}

// An insert or a delete moves where the table's next rowid comes from, which the state's rows
// show. In a table whose order is read only within a group, an insert writes its group's order
// instead (a new row is the last of its group in any order), and a delete nothing: a later
// insert still comes after every row there is.
void SqlFootprint::insert_order(const Watched& watched, const Table& table, int op) {
  const auto unordered = watched.unordered.find(table.name);
  if (unordered == watched.unordered.end()) {
    touch(resource_of(ResourceClass::table_insert, watched.scope, table.name), Access::write);
    return;
  }
  if (op != SQLITE_INSERT || unordered->second < 0) return;
  sqlite3_value* cell = nullptr;
  std::string group;
  if (sqlite3_preupdate_new(watched.handle, unordered->second, &cell) == SQLITE_OK &&
      cell != nullptr) {
    const unsigned char* text = sqlite3_value_text(cell);
    if (text != nullptr) {
      group.assign(reinterpret_cast<const char*>(text),
                   static_cast<size_t>(sqlite3_value_bytes(cell)));
    }
  }
  touch(resource_of(ResourceClass::table_insert, watched.scope, table.name, group), Access::write);
}

void SqlFootprint::row_change(const Watched& watched, int op, std::string_view table_name,
                              int64_t old_rowid, int64_t new_rowid) {
  const auto found = watched.tables->find(table_name);
  if (found == watched.tables->end()) {
    // A table this connection did not have when watched: the whole database.
    touch(resource_id(ResourceClass::database, watched.scope), Access::write);
    return;
  }
  const Table& table = found->second;
  touch(resource_of(ResourceClass::table_scan, watched.scope, table.name), Access::change);
  if (op != SQLITE_UPDATE) insert_order(watched, table, op);
  if (op != SQLITE_INSERT) touch_row(watched, table, true, old_rowid);
  if (op != SQLITE_DELETE) touch_row(watched, table, false, new_rowid);
}

}  // namespace inboxsim
