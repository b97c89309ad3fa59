// account-service's dedupe mechanisms (account.inbox), and what each one is: one registry row per
// mechanism, said once.
//
// The config parser, the fuzzer's generator, the shrinker, the matrix, the coverage recorder and
// the world read these rows instead of comparing AccountInbox values of their own. The code of
// each mechanism is one file under src/services/inbox/, found through that folder's factory
// table (services/inbox/inbox.h), which is indexed by the same enum. A new mechanism is a value
// here, a row in account_inbox.cpp, its file, and a line in the factory table; nothing else
// names it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "domain/coverage.h"
#include "domain/crash.h"

namespace inboxsim {

struct Config;

// In the order of the registry (account_inbox_kinds()); the config values are the rows' names.
enum class AccountInbox : uint8_t {
  masstransit,
  marten,
  none,
  external_before,
  external_after,
  external_atomic,
  wolverine
};

inline constexpr size_t kAccountInboxCount = 7;

// The framework that runs account-service's consumer around the mechanism. MassTransit's
// receive endpoint cancels a running handler when its channel closes and runs account.retry;
// Wolverine's listener (the Marten inbox) does neither: it lets a running handler finish, and
// without account.retry it keeps its own default, three attempts, then the error queue.
enum class InboxFramework : uint8_t { masstransit, wolverine };

// What the inbox cleanup deletes, and after which window: MassTransit's inbox rows delivered
// longer than account.inbox_window_ms ago, or Wolverine's handled documents (Marten) or handled
// envelopes (the durable inbox's incoming table) after account.keep_after_handling_ms.
enum class InboxRetention : uint8_t { delivered_rows, handled_documents, handled_envelopes };

// A row names its mechanism, its framework, its crash points and its retention, and whichever
// of the other fields the mechanism has; a field the row leaves out keeps its default here
// (false, none, empty), which says the mechanism lacks it.
struct AccountInboxKind {
  AccountInbox inbox;
  std::string_view name;     // the config value: "masstransit", "external-before", ...
  std::string_view summary;  // one sentence for help and the glossary
  InboxFramework framework;
  // Whether the mechanism, with the ledger key, is a correct bank's inbox: the shrinker's
  // repaired_config keeps it, and the matrix's "inbox on" rows may use it. A mechanism that can
  // lose or repeat work on its own (no inbox, an external seen-set) is not.
  bool is_a_defence = false;
  // Whether the outbox is swept after the commit by a delivery loop that resumes when the
  // process restarts (every mode but MassTransit's, whose outbox rows belong to the inbox row
  // and are sent by the passes of a delivery).
  bool swept_outbox = false;
  // Whether the ledger is an event stream per account (Marten) rather than a ledger table.
  bool event_stream_ledger = false;
  // The crash points a delivery's handler passes, in CrashPoint order.
  std::span<const CrashPoint> crash_points;
  // Whether after_mark (the external seen-set marked) comes after the business commit.
  bool mark_after_commit = false;
  // The dedupe probes the mechanism can reach when it catches a duplicate.
  std::span<const Probe> probes = {};
  // The config keys that act only with this mechanism (none act on every mechanism's row).
  std::span<const std::string_view> keys = {};
  // What the drop_index step of account.inbox_state drops in this mechanism, in words, when it
  // is not inbox_state's key itself (the Marten document's primary key); empty otherwise.
  std::string_view dropped_key_words = {};
  InboxRetention retention;
  // What the shrinker's repair changes beyond the defences every mechanism shares (Marten's
  // rich append needs ledger_conflict = fault); null when nothing.
  void (*repair)(Config& config) = nullptr;
  // Whether the listener stores the envelope and acks the broker at once, then handles it from
  // its own table, with a durability agent that recovers the envelopes of nodes that are gone
  // (Wolverine's durable inbox): the world then runs the agent's poll and lets a handler ack
  // before it ends.
  bool store_and_ack = false;
  // Whether the mechanism reads the order of its tables' rows and of message ids only among
  // one message's rows (MassTransit: a message's outbox rows by seq, its inbox rows by id; no
  // sweep across messages, no ORDER BY message_id): the explorer then lets the inserts and the
  // ids of two messages commute (docs/model.md, "Names whose order nothing reads").
  bool order_read_per_message = false;

  // Whether a delivery's handler passes `point`.
  bool has(CrashPoint point) const;
};

// Every mechanism, in AccountInbox order.
std::span<const AccountInboxKind> account_inbox_kinds();

// The row of `inbox`.
const AccountInboxKind& account_inbox_kind(AccountInbox inbox);

// The mechanism named `name` ("external-before"), if any.
std::optional<AccountInbox> parse_account_inbox(std::string_view name);

// The names of every mechanism, in registry order, separated by ", ".
std::string account_inbox_names_text();

// The mechanism a correct bank uses by default (the row the shrinker and the matrix fall back
// to), and the row that is no inbox at all (the matrix's "inbox off").
AccountInbox default_account_inbox();
AccountInbox no_account_inbox();

}  // namespace inboxsim
