// The JetStream verbs of inboxsim_conformance (main.cpp):
//
//   inboxsim_conformance jetstream SCRIPT...
//       The JetStream model must produce, step by step, what the script recorded from
//       nats-server, or what the script says it does instead on purpose (fake_then).
//   inboxsim_conformance nats (--url HOST:PORT | --broker-file FILE) SCRIPT...
//       Runs each script on both: nats-server must still do what the script recorded, and the
//       model must match it wherever no difference is declared.
//   inboxsim_conformance nats-record (--url HOST:PORT | --broker-file FILE) SCRIPT...
//       Prints what nats-server and the model observe after each step, to write a script.
//
// The same exit codes as the RabbitMQ verbs: 0 passed, 1 failed, 2 bad script or usage,
// 77 skipped (no nats-server, or built without libnats).
#pragma once

#include <string>
#include <vector>

namespace inboxsim::conformance {

int check_jetstream_model(const std::vector<std::string>& scripts);

// `url` or else `broker_file` (what tests/conformance/nats.sh start writes).
int with_nats(const std::vector<std::string>& scripts, const std::string& url,
              const std::string& broker_file, bool recording);

}  // namespace inboxsim::conformance
