#include "domain/coverage.h"

#include <algorithm>
#include <string>

#include "kernel/enum_names.h"

namespace inboxsim {

namespace {

// The names a dedupe probe carries are the config values of the mode that catches it
// (account.inbox, transfer.dedupe), so a reader can go from one to the other.
constexpr std::array<std::string_view, kProbeCount> kProbeNames = {
    "dedupe.masstransit",
    "dedupe.masstransit_resend",
    "dedupe.marten_precheck",
    "dedupe.marten_backstop",
    "dedupe.account_external_before",
    "dedupe.account_external_after",
    "dedupe.account_external_atomic",
    "dedupe.wolverine_incoming",
    "dedupe.processed_messages",
    "dedupe.transfer_external_before",
    "dedupe.transfer_external_after",
    "dedupe.ledger_key_ack",
    "masstransit.inbox_key",
    "masstransit.row_lock",
    "ledger.key_rejected",
    "saga.illegal_transition",
    "saga.compensation",
    "redelivery.after_commit",
    "republish.same_id",
    "ack.lost",
    "ack.void",
    "confirm.lost",
    "publish.nacked",
    "inbox.recovered",
    "consumer.retry",
    "consumer.nack",
    "consumer.error_queued",
    "broker.dead_lettered",
    "operator.redrive",
    "retention.cleanup",
};
static_assert(names_every(kProbeNames, Probe::retention_cleanup));

// The count names the last probe, and every probe has a name (std::array would pad a short
// list with empty ones).
static_assert(static_cast<size_t>(Probe::retention_cleanup) + 1 == kProbeCount);
static_assert(std::none_of(kProbeNames.begin(), kProbeNames.end(),
                           [](std::string_view name) { return name.empty(); }));

}  // namespace

std::string_view probe_name(Probe probe) { return name_of(kProbeNames, probe); }

std::optional<Probe> parse_probe(std::string_view name) {
  return parse_name<Probe>(kProbeNames, name);
}

std::string_view probe_names_text() {
  static const std::string text = [] {
    std::vector<Probe> every;
    for (size_t index = 0; index < kProbeCount; ++index) every.push_back(static_cast<Probe>(index));
    return probes_text(every);
  }();
  return text;
}

std::string probes_text(const std::vector<Probe>& probes) {
  std::string text;
  for (const Probe probe : probes) {
    if (!text.empty()) text += ", ";
    text += probe_name(probe);
  }
  return text;
}

Coverage& Coverage::operator+=(const Coverage& other) {
  for (size_t index = 0; index < kProbeCount; ++index) counts[index] += other.counts[index];
  return *this;
}

}  // namespace inboxsim
