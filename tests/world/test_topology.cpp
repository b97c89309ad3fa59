// The topology's one home (domain/topology.h): the queues the world declares are the ones a
// scenario's redrive may name, and each one the parser accepts exists in the run.
#include <catch2/catch.hpp>

#include <string>

#include "domain/config.h"
#include "domain/topology.h"
#include "scenario/runner.h"
#include "support/scenarios.h"

using namespace inboxsim;
using inboxsim::testing::parse_ok;

TEST_CASE("topology: every queue a redrive may name exists in the run, with and without "
          "notifications",
          "[topology]") {
  for (const bool notifications : {false, true}) {
    CAPTURE(notifications);
    Config config;
    config.transfer_notifications = notifications;
    const std::vector<std::string> queues = redrivable_queues(config);
    CHECK(queues.size() == (notifications ? 4u : 3u));
    CHECK(queues.front() == "account-service_error");
    std::string steps = R"({"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 10}})";
    for (const std::string& queue : queues) steps += R"(, {"redrive": ")" + queue + R"("})";
    const std::string text = R"({"accounts": {"alice": 100, "bob": 0}, "config": )"
                             R"({"transfer.notifications": )" +
                             std::string(notifications ? "true" : "false") + R"(}, "steps": [)" +
                             steps + "]}";
    const RunResult result = run_scenario(parse_ok(text), RunOptions{});
    size_t redrives = 0;
    for (const TraceEvent& event : result.events) {
      CHECK(event.detail.find("does not exist in this configuration") == std::string::npos);
      if (event.kind == EventKind::step && event.detail.find("redrive") != std::string::npos) {
        ++redrives;
      }
    }
    CHECK(redrives == queues.size());
  }
}

TEST_CASE("topology: a queue's error and dead-letter queues are named after it", "[topology]") {
  CHECK(error_queue_name("account-service") == "account-service_error");
  CHECK(dead_letter_queue_name("transfer-service.notifications") ==
        "transfer-service.notifications.dlq");
  Config config;
  CHECK(declared_queues(config).size() == 2);
  config.transfer_notifications = true;
  CHECK(declared_queues(config).back()->name == "transfer-service.notifications");
}
