// A broker a conformance script can run against: the fake (fake_driver.h) or a real RabbitMQ
// through rabbitmq-c (rabbitmq_driver.h). A driver maps each operation onto its broker and
// reports what the clients then observe, as the observation lines of script.h.
#pragma once

#include <string>
#include <vector>

#include "script.h"

namespace inboxsim::conformance {

class Driver {
 public:
  virtual ~Driver() = default;

  // Performs the step and returns what the clients observed after it. `expected` (may be null)
  // is what the observations should be: a broker that answers asynchronously uses it only to
  // know when it may stop waiting, never to decide what it saw.
  virtual std::vector<std::string> run(const Step& step,
                                       const std::vector<std::string>* expected) = 0;

  // Whatever the clients observe after the last step, when nothing more is expected.
  virtual std::vector<std::string> drain() = 0;
};

}  // namespace inboxsim::conformance
