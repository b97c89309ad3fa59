#include "domain/crash.h"

#include <array>

#include "kernel/enum_names.h"

namespace inboxsim {

namespace {
constexpr std::array<std::string_view, kCrashPointCount> kCrashPointNames = {
    "before_tx",    "after_precheck",    "after_dedupe",  "after_effect",
    "after_commit", "after_outbox_send", "after_publish", "after_mark"};
constexpr std::array<CrashPoint, 7> kAccountCrashPoints = {
    CrashPoint::before_tx,    CrashPoint::after_precheck, CrashPoint::after_dedupe,
    CrashPoint::after_effect, CrashPoint::after_commit,   CrashPoint::after_outbox_send,
    CrashPoint::after_mark};
constexpr std::array<CrashPoint, 7> kTransferCrashPoints = {
    CrashPoint::before_tx,    CrashPoint::after_precheck, CrashPoint::after_dedupe,
    CrashPoint::after_effect, CrashPoint::after_commit,   CrashPoint::after_publish,
    CrashPoint::after_mark};
constexpr std::array<CrashPoint, 5> kAccountPausePoints = {
    CrashPoint::before_tx, CrashPoint::after_precheck, CrashPoint::after_dedupe,
    CrashPoint::after_commit, CrashPoint::after_outbox_send};
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
