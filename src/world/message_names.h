// The names of the messages a run mints, for the explorer (docs/model.md, "Names whose order
// nothing reads"). An id ("m-7") says in which order the ids were minted, and where the
// services never read that order, two handlers of two messages that mint one id each reach
// the same state in either order, up to which of them got which number. The explorer then lets
// the two mints commute (each is ordered only with the other mints of its cause), and its
// canonical fingerprint reads each id as the name it has here: its cause's name and how many
// ids that cause had minted before, which is the same in either order.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "domain/config.h"
#include "domain/scenario.h"
#include "kernel/fingerprint.h"

namespace inboxsim {

class MessageNames final : public NameCanon {
 public:
  // Whether the mints and the unordered tables' inserts (services/sql.h UnorderedTable) of two
  // messages commute for an explorer of `scenario` with `config`: without a clock (the
  // retention passes delete by age, then id), with an inbox that reads orders only among one
  // message's rows (AccountInboxKind::order_read_per_message) and RabbitMQ (JetStream's
  // duplicate window is its own), and where nothing in the story names an id by its number
  // (a message published by hand, in the story or among the hand actions of `schedule`, the
  // explored run's; an account or transfer whose name holds "m-" and a digit).
  static bool commute_in(const Scenario& scenario, const Config& config, const Schedule& schedule);

  // An id was minted for a message that the handling of `cause` sends ("" for the story).
  void minted(const std::string& id, const std::string& cause);
  // The names, for a state's fingerprint: two states with the same rows and other names for
  // them are told apart, so a state the explorer saw before has the names it had then.
  void fingerprint(Hasher& hasher) const;
  // Replaces every minted id in `text` by its name ("#" and the name's hex).
  bool rename(std::string_view text, std::string& out) const override;

 private:
  Fingerprint name_of(std::string_view id) const;

  std::map<std::string, Fingerprint, std::less<>> names_;
  std::map<Fingerprint, uint64_t> minted_by_cause_;
};

}  // namespace inboxsim
