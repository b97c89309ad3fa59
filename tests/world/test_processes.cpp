// The processes' liveness bookkeeping (world/processes.h): crashes and restarts, pauses and the
// heartbeat that notices them, the loops' flags, whose each broker consumer is, the round robin.
#include <catch2/catch.hpp>
#include <vector>

#include "world/processes.h"

using namespace inboxsim;

namespace {

// One account-service instance (0) and two transfer-service ones (1 and 2), no service objects.
Processes three_processes(int64_t heartbeat_ms = 60'000) {
  Config config;
  config.transfer_instances = 2;
  config.broker_heartbeat_ms = heartbeat_ms;
  Processes processes(config);
  processes.add(ServiceId::account, 1, InstanceNames{"account-service", "", ""});
  processes.add(ServiceId::transfer, 1, InstanceNames{"transfer-service#1", "relay#1", ""});
  processes.add(ServiceId::transfer, 2, InstanceNames{"transfer-service#2", "relay#2", ""});
  return processes;
}

}  // namespace

TEST_CASE("processes: requests take turns among the instances up and not paused", "[processes]") {
  Processes processes = three_processes();
  CHECK(processes.first(ServiceId::transfer).names.service == "transfer-service#1");
  CHECK(processes.available(ServiceId::transfer, 0) == 1);
  CHECK(processes.available(ServiceId::transfer, 0) == 2);
  CHECK(processes.available(ServiceId::transfer, 0) == 1);
  CHECK(processes.next_request() == 2);
  CHECK(processes.pause(2, 10, 100) == 110);
  CHECK(processes.at(2).paused(109));
  CHECK_FALSE(processes.at(2).paused(110));
  CHECK(processes.available(ServiceId::transfer, 50) == 1);  // 2 is paused: 1 again
  CHECK(processes.available(ServiceId::transfer, 110) == 2);
  processes.crash(1);
  processes.crash(2);
  CHECK_FALSE(processes.available(ServiceId::transfer, 200).has_value());
  CHECK(processes.available(ServiceId::account, 200) == 0);
}

TEST_CASE("processes: each broker consumer is one instance's, in its role", "[processes]") {
  Processes processes = three_processes();
  processes.add_consumer(0, 0, QueueConsumer::account, "account-service");
  processes.add_consumer(1, 1, QueueConsumer::saga, "transfer-service#1");
  processes.add_consumer(1, 2, QueueConsumer::notifications, "notifications#1");
  CHECK(processes.consumer_count() == 3);
  CHECK(processes.consumer(2).instance == 1);
  CHECK(processes.consumer(2).role == QueueConsumer::notifications);
  CHECK(processes.consumer(2).participant == "notifications#1");
  CHECK(processes.at(1).consumers == std::vector<size_t>{1, 2});
  CHECK(processes.at(2).consumers.empty());
}

TEST_CASE("processes: a crash is a new incarnation with nothing pending, restarted later",
          "[processes]") {
  Processes processes = three_processes();
  CHECK(processes.loop_scheduled(1, InstanceLoop::relay) == 1);
  processes.pause(1, 0, 500);
  processes.restart_after(1, 2500);
  const Processes::Crash crash = processes.crash(1);
  CHECK(crash.incarnation == 2);
  CHECK(crash.restart_after_ms == 2500);
  const Process& process = processes.at(1);
  CHECK_FALSE(process.up);
  CHECK_FALSE(process.paused(0));
  CHECK_FALSE(process.loop_pending(InstanceLoop::relay));
  CHECK(process.publish_channel == 2);
  // The turn scheduled before the crash is void; the restart's connection is a new phase.
  CHECK_FALSE(processes.loop_turn(1, InstanceLoop::relay, 1));
  processes.restart(1, 3000);
  CHECK(process.up);
  CHECK(process.connected_ms == 3000);
  CHECK(processes.loop_scheduled(1, InstanceLoop::relay) == 2);
  CHECK(processes.loop_turn(1, InstanceLoop::relay, 2));
  CHECK_FALSE(process.loop_pending(InstanceLoop::relay));
}

TEST_CASE("processes: the heartbeat closes a paused connection at the second silent check",
          "[processes]") {
  Processes processes = three_processes(1000);
  // Checks at 1000, 2000, ... from the connection's opening at 0.
  processes.pause(0, 0, 10'000);
  CHECK(processes.heartbeat_close_ms(0) == 3000);
  processes.pause(0, 1000, 10'000);  // a check at the pause's start still sees the last frame
  CHECK(processes.heartbeat_close_ms(0) == 3000);
  processes.pause(0, 1001, 10'000);
  CHECK(processes.heartbeat_close_ms(0) == 4000);
  processes.connected(0, 1500);  // a new connection: checks at 2500, 3500, ...
  processes.pause(0, 1600, 10'000);
  CHECK(processes.heartbeat_close_ms(0) == 4500);
}
