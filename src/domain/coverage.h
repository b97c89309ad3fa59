// Coverage probes (docs/contract.md §8.3): named moments that a good campaign must reach, counted per run.
//
// A fuzz campaign that passes says little if its stories never got anywhere interesting: if no
// seed ever raced two first deliveries, "the Marten backstop holds" was never tested. Each probe
// names one such moment; a run counts how often it reached each, a campaign sums the counts, and
// `fuzz --require-coverage` fails when a named probe stayed at zero. docs/coverage.md says what
// each probe means and where it is counted.
//
// The order of the enum is the order of every report (`coverage` in --json lists every probe,
// zeros included), so appending is safe (with its name in coverage.cpp, whose static_assert
// names the last probe) and reordering changes the output.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace inboxsim {

enum class Probe : uint8_t {
  // A duplicate caught, one probe per mechanism that can catch one. The dedupe probes come first
  // (is_dedupe_probe relies on it).
  dedupe_masstransit,               // MassTransit inbox: consumed and delivered, acked
  dedupe_masstransit_resend,        // MassTransit inbox: consumed, outbox not delivered: re-sent
  dedupe_marten_precheck,           // Marten: the inbox document found by the pre-check
  dedupe_marten_backstop,           // Marten: the document's primary key rejected a racing copy
  dedupe_account_external_before,   // account-service's seen-set (marked before the commit)
  dedupe_account_external_after,    // account-service's seen-set (marked after the commit)
  dedupe_account_external_atomic,   // account-service's seen-set (checked and marked in one call)
  dedupe_wolverine_incoming,        // Wolverine's incoming table: the envelope's id stored already
  dedupe_processed_messages,        // transfer-service: processed_messages' unique key
  dedupe_transfer_external_before,  // transfer-service's seen-set (marked before the commit)
  dedupe_transfer_external_after,   // transfer-service's seen-set (marked after the commit)
  dedupe_ledger_key_ack,            // the ledger key refused an entry; ledger_conflict = ack acked
  // Races between instances.
  masstransit_inbox_key,  // the inbox_state key rejected a second row: two first deliveries
  masstransit_row_lock,   // a handler waited for the inbox row lock another one held
  ledger_key_rejected,    // the ledger's (transfer_id, type) index rejected a second entry
  // The saga.
  saga_illegal_transition,  // the state machine refused a transition
  saga_compensation,        // a refund was committed (the saga compensates a failed credit)
  // What at-least-once delivery does.
  redelivery_after_commit,  // a message redelivered after its consumer died past the commit
  republish_same_id,        // a message published again with its id (outbox re-send, relay)
  ack_lost,                 // an ack never settled its delivery (lost, or on a closed channel)
  ack_void,                 // a zombie handler acked on a channel that had closed
  confirm_lost,             // a publisher confirm never arrived
  publish_nacked,           // the broker refused a publish
  inbox_recovered,          // Wolverine's durability agent took an envelope whose owner was gone
  // Fault paths.
  consumer_retry,         // account.retry ran a faulted handler again
  consumer_nack,          // a handler nacked its delivery, which the broker requeues
  consumer_error_queued,  // a message moved to account-service_error after its retries
  broker_dead_lettered,   // a quorum queue dead-lettered a message past its delivery limit
  operator_redrive,       // an operator moved a message back from an error or dead-letter queue
  retention_cleanup,      // retention cleanup deleted dedupe records (inbox window, TTL)
};

inline constexpr size_t kProbeCount = 30;

// Returns the stable name of a probe ("dedupe.marten_backstop"), as reports and flags spell it.
std::string_view probe_name(Probe probe);

// Returns the probe named `name`, if any.
std::optional<Probe> parse_probe(std::string_view name);

// Returns the names of every probe, in report order, separated by ", " (for error messages).
std::string_view probe_names_text();

// Returns the names of `probes`, in the order given, separated by ", ".
std::string probes_text(const std::vector<Probe>& probes);

// True for the probes that count a duplicate caught by a dedupe mechanism.
constexpr bool is_dedupe_probe(Probe probe) {
  return probe <= Probe::dedupe_ledger_key_ack;
}

// How often each probe was reached: in one run, or summed over a campaign.
struct Coverage {
  std::array<int64_t, kProbeCount> counts{};

  int64_t& operator[](Probe probe) { return counts[static_cast<size_t>(probe)]; }
  int64_t operator[](Probe probe) const { return counts[static_cast<size_t>(probe)]; }
  Coverage& operator+=(const Coverage& other);
  bool operator==(const Coverage&) const = default;
};

}  // namespace inboxsim
