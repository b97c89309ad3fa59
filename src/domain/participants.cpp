#include "domain/participants.h"

#include <array>

#include "kernel/assert.h"

namespace inboxsim {

namespace {

// Every instance name, spelled out once: TraceEvent keeps string_views, so the names must live
// as long as the program does.
constexpr std::array<std::string_view, 4> kBases = {participant::account_service,
                                                    participant::transfer_service,
                                                    participant::relay, participant::notifications};
constexpr std::array<std::array<std::string_view, kInstancesMax>, 4> kInstanceNames = {{
    {"account-service#1", "account-service#2", "account-service#3", "account-service#4",
     "account-service#5", "account-service#6", "account-service#7", "account-service#8"},
    {"transfer-service#1", "transfer-service#2", "transfer-service#3", "transfer-service#4",
     "transfer-service#5", "transfer-service#6", "transfer-service#7", "transfer-service#8"},
    {"transfer-relay#1", "transfer-relay#2", "transfer-relay#3", "transfer-relay#4",
     "transfer-relay#5", "transfer-relay#6", "transfer-relay#7", "transfer-relay#8"},
    {"notifications#1", "notifications#2", "notifications#3", "notifications#4", "notifications#5",
     "notifications#6", "notifications#7", "notifications#8"},
}};

}  // namespace

std::string_view instance_participant(std::string_view base, int64_t number,
                                      int64_t instance_count) {
  INBOXSIM_ASSERT(number >= 1);
  INBOXSIM_ASSERT(number <= instance_count);
  INBOXSIM_ASSERT(instance_count <= kInstancesMax);
  for (size_t index = 0; index < kBases.size(); ++index) {
    if (kBases[index] != base) continue;
    if (instance_count == 1) return kBases[index];
    return kInstanceNames[index][static_cast<size_t>(number - 1)];
  }
  INBOXSIM_ASSERT(false);
}

std::string_view participant_base(std::string_view name) { return name.substr(0, name.find('#')); }

}  // namespace inboxsim
