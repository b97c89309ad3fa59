// inboxsim_conformance: runs broker conformance scripts (tests/conformance/scripts) against the
// fake broker and a real RabbitMQ and compares what each does; and the JetStream scripts
// (tests/conformance/jetstream) against the JetStream model and a real nats-server (the verbs
// jetstream, nats and nats-record: jetstream_main.h).
//
//   inboxsim_conformance fake SCRIPT...
//       The fake must produce, step by step, what the script recorded from RabbitMQ, or what
//       the script says it does instead on purpose (fake_then, with the reason).
//   inboxsim_conformance rabbitmq (--url HOST:PORT | --broker-file FILE) SCRIPT...
//       Runs each script on both brokers: RabbitMQ must still do what the script recorded, and
//       the fake must match RabbitMQ wherever no difference is declared.
//   inboxsim_conformance record (--url HOST:PORT | --broker-file FILE) SCRIPT...
//       Prints what RabbitMQ and the fake observe after each step, to write or review a script.
//
// Exit codes: 0 every script passed, 1 a script failed, 2 a bad script or usage,
// 77 skipped (no broker available: ctest shows the test as skipped).
#include <CLI/CLI.hpp>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "fake_driver.h"
#include "jetstream_main.h"
#include "script.h"
#ifdef INBOXSIM_HAVE_RABBITMQ_C
#include "rabbitmq_driver.h"
#endif

namespace inboxsim::conformance {
namespace {

constexpr int kExitPassed = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitSkipped = 77;

struct Options {
  std::vector<std::string> scripts;
  std::string url;
  std::string broker_file;
};

// What a run of a script saw: one list of observations per step, and one for after the last.
using Observations = std::vector<std::vector<std::string>>;

using ExpectationOf = std::function<const std::vector<std::string>&(const Step&)>;

Observations run_script(const Script& script, Driver& driver, const ExpectationOf& expectation) {
  Observations out;
  for (const Step& step : script.steps) out.push_back(driver.run(step, &expectation(step)));
  out.push_back(driver.drain());
  return out;
}

std::string describe(const Step& step) {
  std::string text = std::string(op_name(step.op)) + " " + step.subject;
  if (step.op == Op::ack || step.op == Op::nack || step.op == Op::reject) {
    text += " tag=" + std::to_string(step.tag);
  }
  if ((step.op == Op::nack || step.op == Op::reject) && !step.requeue) text += " requeue=false";
  return text;
}

std::string joined(const std::vector<std::string>& lines) {
  if (lines.empty()) return "(nothing)";
  std::string out;
  for (const std::string& line : lines) out += (out.empty() ? "" : " | ") + line;
  return out;
}

struct Column {
  const char* label;
  const Observations* observations;
  ExpectationOf expectation;
};

// Prints every step where a column does not see what it should; returns how many there were.
int report_mismatches(const Script& script, const std::vector<Column>& columns) {
  int mismatches = 0;
  static const std::vector<std::string> nothing;
  for (size_t index = 0; index <= script.steps.size(); ++index) {
    const bool after_last = index == script.steps.size();
    bool wrong = false;
    for (const Column& column : columns) {
      const auto& expected = after_last ? nothing : column.expectation(script.steps[index]);
      wrong = wrong || !same_observations((*column.observations)[index], expected);
    }
    if (!wrong) continue;
    ++mismatches;
    std::cout << "  "
              << (after_last ? "after the last step"
                             : script.steps[index].pointer + " " + describe(script.steps[index]))
              << "\n";
    if (!after_last)
      std::cout << "    RabbitMQ (recorded):  " << joined(script.steps[index].then) << "\n";
    if (!after_last && script.steps[index].fake_then) {
      std::cout << "    fake (declared):      " << joined(*script.steps[index].fake_then) << "\n";
    }
    for (const Column& column : columns) {
      std::cout << "    " << column.label << joined((*column.observations)[index]) << "\n";
    }
  }
  return mismatches;
}

const std::vector<std::string>& fake_expected(const Step& step) { return step.expected_of_fake(); }

std::optional<Script> load(const std::string& path) {
  std::string error;
  std::optional<Script> script = load_script(path, error);
  if (!script) std::cerr << "inboxsim_conformance: " << error << "\n";
  return script;
}

// Runs the script on the fake; returns its observations, or nothing after printing why not.
std::optional<Observations> run_fake(const Script& script) {
  try {
    FakeDriver fake(script.broker);
    return run_script(script, fake, fake_expected);
  } catch (const std::exception& error) {
    std::cout << "FAIL " << script.name << ": fake broker: " << error.what() << "\n";
    return std::nullopt;
  }
}

int check_fake(const std::vector<std::string>& paths) {
  int status = kExitPassed;
  for (const std::string& path : paths) {
    const std::optional<Script> script = load(path);
    if (!script) return kExitUsage;
    const std::optional<Observations> fake = run_fake(*script);
    if (!fake) {
      status = kExitFailed;
      continue;
    }
    std::cout << "---- " << script->name << ": " << script->steps.size() << " steps\n";
    if (report_mismatches(*script, {{"fake:                 ", &*fake, fake_expected}}) > 0) {
      std::cout << "FAIL " << script->name << ": the fake does not do what the script says\n";
      status = kExitFailed;
    } else {
      std::cout << "PASS " << script->name << "\n";
    }
  }
  return status;
}

#ifdef INBOXSIM_HAVE_RABBITMQ_C

const std::vector<std::string>& recorded(const Step& step) { return step.then; }

// The broker to use: --url HOST:PORT, or the file tests/conformance/broker.sh start writes
// ("port=N", or "unavailable: why" where no broker could be started).
std::optional<Endpoint> endpoint_of(const Options& options, std::string& skip_reason) {
  std::string address = options.url;
  if (address.empty()) {
    std::ifstream file(options.broker_file);
    std::string line;
    if (!file || !std::getline(file, line)) {
      skip_reason =
          "no broker: " + options.broker_file + " is missing (the rabbitmq_start test did not run)";
      return std::nullopt;
    }
    if (line.starts_with("unavailable:")) {
      skip_reason = line;
      return std::nullopt;
    }
    // Installed but not started (rabbitmq_start failed): that is a failure, not a skip.
    if (!line.starts_with("port=")) {
      throw std::runtime_error("no broker: " + options.broker_file + " says \"" + line +
                               "\" (see the rabbitmq_start test)");
    }
    address = "127.0.0.1:" + line.substr(5);
  }
  const size_t colon = address.rfind(':');
  Endpoint endpoint;
  endpoint.host = address.substr(0, colon);
  if (colon != std::string::npos) {
    const std::string port = address.substr(colon + 1);
    const bool digits = !port.empty() && port.size() <= 5 &&
                        port.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoi(port) > 65535) {
      throw std::invalid_argument("\"" + address + "\" is no HOST:PORT (a port from 0 to 65535)");
    }
    endpoint.port = std::stoi(port);
  }
  return endpoint;
}

int compare_with_rabbitmq(const Script& script, const Endpoint& endpoint) {
  const std::optional<Observations> fake = run_fake(script);
  if (!fake) return kExitFailed;
  Observations real;
  try {
    RabbitmqDriver rabbitmq(endpoint, script.broker, script.name + ".", /*recording=*/false);
    real = run_script(script, rabbitmq, recorded);
  } catch (const std::exception& error) {
    std::cout << "FAIL " << script.name << ": RabbitMQ: " << error.what() << "\n";
    return kExitFailed;
  }
  std::cout << "---- " << script.name << ": " << script.steps.size() << " steps\n";
  // RabbitMQ must still do what the script recorded, and the fake what the script says of it:
  // together, the fake matches RabbitMQ except where a difference is declared.
  const int mismatches =
      report_mismatches(script, {{"RabbitMQ (now):        ", &real, recorded},
                                 {"fake:                  ", &*fake, fake_expected}});
  if (mismatches > 0) {
    std::cout << "FAIL " << script.name << "\n";
    return kExitFailed;
  }
  std::cout << "PASS " << script.name << "\n";
  return kExitPassed;
}

void print_record(const Script& script, const Observations& real, const Observations& fake) {
  for (size_t index = 0; index <= script.steps.size(); ++index) {
    const bool after_last = index == script.steps.size();
    std::cout << (after_last ? std::string("after the last step")
                             : script.steps[index].pointer + " " + describe(script.steps[index]))
              << "\n    rabbitmq: [";
    for (size_t line = 0; line < real[index].size(); ++line) {
      std::cout << (line == 0 ? "" : ", ") << "\"" << real[index][line] << "\"";
    }
    std::cout << "]\n    fake:     " << joined(fake[index]) << "\n";
  }
}

int with_rabbitmq(const Options& options, bool recording) {
  std::string skip_reason;
  std::optional<Endpoint> endpoint;
  try {
    endpoint = endpoint_of(options, skip_reason);
  } catch (const std::invalid_argument& error) {
    std::cerr << "inboxsim_conformance: --url: " << error.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& error) {
    std::cout << "FAIL: " << error.what() << "\n";
    return kExitFailed;
  }
  if (!endpoint) {
    std::cout << "SKIPPED: " << skip_reason << "\n";
    return kExitSkipped;
  }
  int status = kExitPassed;
  for (const std::string& path : options.scripts) {
    const std::optional<Script> script = load(path);
    if (!script) return kExitUsage;
    if (!recording) {
      if (compare_with_rabbitmq(*script, *endpoint) != kExitPassed) status = kExitFailed;
      continue;
    }
    const std::optional<Observations> fake = run_fake(*script);
    try {
      RabbitmqDriver rabbitmq(*endpoint, script->broker, script->name + ".", /*recording=*/true);
      const Observations real = run_script(*script, rabbitmq, recorded);
      print_record(*script, real, fake ? *fake : Observations(real.size()));
    } catch (const std::exception& error) {
      std::cout << "FAIL " << script->name << ": RabbitMQ: " << error.what() << "\n";
      status = kExitFailed;
    }
  }
  return status;
}

#else

int with_rabbitmq(const Options&, bool) {
  std::cout << "SKIPPED: built without rabbitmq-c (install librabbitmq-dev and configure again)\n";
  return kExitSkipped;
}

#endif

}  // namespace
}  // namespace inboxsim::conformance

int main(int argc, char** argv) {
  using namespace inboxsim::conformance;
  CLI::App app{"Broker conformance: the fake broker checked against a real RabbitMQ"};
  app.require_subcommand(1);
  Options options;
  CLI::App* fake = app.add_subcommand("fake", "Check the fake broker against the scripts");
  fake->add_option("scripts", options.scripts, "Script files")
      ->required()
      ->check(CLI::ExistingFile);
  CLI::App* rabbitmq =
      app.add_subcommand("rabbitmq", "Run the scripts on RabbitMQ and the fake, and compare");
  CLI::App* record =
      app.add_subcommand("record", "Print what RabbitMQ and the fake observe, step by step");
  for (CLI::App* verb : {rabbitmq, record}) {
    verb->add_option("scripts", options.scripts, "Script files")
        ->required()
        ->check(CLI::ExistingFile);
    auto* url = verb->add_option("--url", options.url, "The broker's HOST:PORT");
    auto* file = verb->add_option("--broker-file", options.broker_file,
                                  "The file tests/conformance/broker.sh start wrote");
    url->excludes(file);
  }
  // The JetStream half (jetstream_main.h): the model, and nats-server through libnats.
  CLI::App* jetstream =
      app.add_subcommand("jetstream", "Check the JetStream model against the JetStream scripts");
  jetstream->add_option("scripts", options.scripts, "Script files")
      ->required()
      ->check(CLI::ExistingFile);
  CLI::App* nats =
      app.add_subcommand("nats", "Run JetStream scripts on nats-server and the model, and compare");
  CLI::App* nats_record = app.add_subcommand(
      "nats-record", "Print what nats-server and the model observe, step by step");
  for (CLI::App* verb : {nats, nats_record}) {
    verb->add_option("scripts", options.scripts, "Script files")
        ->required()
        ->check(CLI::ExistingFile);
    auto* url = verb->add_option("--url", options.url, "The server's HOST:PORT");
    auto* file = verb->add_option("--broker-file", options.broker_file,
                                  "The file tests/conformance/nats.sh start wrote");
    url->excludes(file);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? kExitPassed : kExitUsage;
  }
  if (fake->parsed()) return check_fake(options.scripts);
  if (jetstream->parsed()) return check_jetstream_model(options.scripts);
  if (options.url.empty() && options.broker_file.empty()) {
    std::cerr << "inboxsim_conformance: give the broker with --url or --broker-file\n";
    return kExitUsage;
  }
  if (nats->parsed() || nats_record->parsed()) {
    return with_nats(options.scripts, options.url, options.broker_file, nats_record->parsed());
  }
  return with_rabbitmq(options, record->parsed());
}
