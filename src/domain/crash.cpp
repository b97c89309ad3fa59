#include "domain/crash.h"

#include <array>

#include "kernel/enum_names.h"

namespace inboxsim {

namespace {
constexpr std::array<std::string_view, kCrashPointCount> kCrashPointNames = {
    "before_tx",         "after_precheck", "after_dedupe", "after_effect", "after_commit",
    "after_outbox_send", "after_publish",  "after_mark",   "after_store",  "after_ack"};
static_assert(names_every(kCrashPointNames, CrashPoint::after_ack));
// In CrashPoint's order, as the names are.
constexpr std::array<std::string_view, kCrashPointCount> kCrashPointMeanings = {
    "a consumer got the delivery and has written nothing yet",
    "after a lookup and before the write that depends on it (Marten's pre-check, the seen-set's "
    "check, MassTransit's pass 1 before its commit)",
    "the dedupe step ran (MassTransit: the inbox row is committed, the consumer has not run)",
    "the business change and its outbox rows are written, not yet committed: a crash here rolls "
    "them all back",
    "committed, not yet acked: the broker still holds the message and will deliver it again",
    "account-service: an outbox message was sent, the pass that records it has not committed",
    "transfer-service's relay: a row was published, not yet marked sent",
    "account.inbox or transfer.dedupe external-*: the external seen-set was marked, apart from "
    "the database's transaction",
    "account.inbox = wolverine: the envelope is stored in the incoming table (Incoming, owned by "
    "this node), the broker not yet acked: the broker will deliver it again",
    "account.inbox = wolverine: the broker is acked, the envelope is Incoming in the table and "
    "not yet handled: only the durability agent can handle it now"};
static_assert(names_every(kCrashPointMeanings, CrashPoint::after_ack));
// The points only the wolverine inbox passes come last, so that the points drawn for the other
// mechanisms keep their order (fuzz/generator.cpp).
constexpr std::array<CrashPoint, 9> kAccountCrashPoints = {
    CrashPoint::before_tx,    CrashPoint::after_precheck, CrashPoint::after_dedupe,
    CrashPoint::after_effect, CrashPoint::after_commit,   CrashPoint::after_outbox_send,
    CrashPoint::after_mark,   CrashPoint::after_store,    CrashPoint::after_ack};
constexpr std::array<CrashPoint, 7> kTransferCrashPoints = {
    CrashPoint::before_tx,    CrashPoint::after_precheck, CrashPoint::after_dedupe,
    CrashPoint::after_effect, CrashPoint::after_commit,   CrashPoint::after_publish,
    CrashPoint::after_mark};
constexpr std::array<CrashPoint, 7> kAccountPausePoints = {
    CrashPoint::before_tx,    CrashPoint::after_precheck,    CrashPoint::after_dedupe,
    CrashPoint::after_commit, CrashPoint::after_outbox_send, CrashPoint::after_store,
    CrashPoint::after_ack};
constexpr std::array<CrashPoint, 4> kTransferPausePoints = {
    CrashPoint::before_tx, CrashPoint::after_precheck, CrashPoint::after_dedupe,
    CrashPoint::after_commit};

}  // namespace

std::span<const CrashPoint> crash_points_of(ServiceId service) {
  if (service == ServiceId::account) return kAccountCrashPoints;
  return kTransferCrashPoints;
}

std::span<const CrashPoint> pause_points_of(ServiceId service) {
  if (service == ServiceId::account) return kAccountPausePoints;
  return kTransferPausePoints;
}

std::string_view crash_point_name(CrashPoint point) { return name_of(kCrashPointNames, point); }

std::string_view crash_point_meaning(CrashPoint point) {
  return name_of(kCrashPointMeanings, point);
}

std::optional<CrashPoint> parse_crash_point(std::string_view name) {
  return parse_name<CrashPoint>(kCrashPointNames, name);
}

std::string_view service_name(ServiceId service) {
  return service == ServiceId::account ? "account-service" : "transfer-service";
}

std::optional<ServiceId> parse_service(std::string_view name) {
  if (name == "account-service") return ServiceId::account;
  if (name == "transfer-service") return ServiceId::transfer;
  return std::nullopt;
}

}  // namespace inboxsim
