// The participants of a run, as they appear in traces and diagrams: the client, the services
// and their parts (the relay, the notifications consumer), the broker, the operator and the
// network (the source of a copy a story says the network made).
//
// A service with several instances (docs/contract.md §8.1) shows each instance as a participant of its
// own, `account-service#1`, `account-service#2`, ...; with one instance the names are those of
// v1. Names are string_views into static storage, so a TraceEvent can outlive its World.
#pragma once

#include <cstdint>
#include <string_view>

namespace inboxsim {

namespace participant {
inline constexpr std::string_view client = "client";
inline constexpr std::string_view transfer_service = "transfer-service";
inline constexpr std::string_view relay = "transfer-relay";
inline constexpr std::string_view broker = "broker";
inline constexpr std::string_view account_service = "account-service";
inline constexpr std::string_view notifications = "notifications";
inline constexpr std::string_view operator_ = "operator";
// The wire below the application, where a `duplicate` fault copied "by network" comes from.
inline constexpr std::string_view network = "network";
inline constexpr std::string_view cleanup = "cleanup";
}  // namespace participant

// The most instances a service may run (config keys account.instances, transfer.instances).
inline constexpr int64_t kInstancesMax = 8;

// Returns the participant name of instance `number` (1-based) of `base` (one of
// account_service, transfer_service, relay, notifications): `base` itself when the service
// runs one instance, else `base#number`.
// REQUIRES: 1 <= number <= instance_count <= kInstancesMax, and `base` is one of the four.
std::string_view instance_participant(std::string_view base, int64_t number,
                                      int64_t instance_count);

// Returns the base name of a participant: "account-service#2" -> "account-service".
std::string_view participant_base(std::string_view name);

}  // namespace inboxsim
