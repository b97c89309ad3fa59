#include "jetstream_main.h"

#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "jetstream_fake_driver.h"
#include "jetstream_script.h"
#include "script.h"
#ifdef INBOXSIM_HAVE_LIBNATS
#include "nats_driver.h"
#endif

namespace inboxsim::conformance {

namespace {

constexpr int kExitPassed = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitSkipped = 77;

using Observations = std::vector<std::vector<std::string>>;
using ExpectationOf = std::function<const std::vector<std::string>&(const JsStep&)>;

const std::vector<std::string>& model_expected(const JsStep& step) {
  return step.expected_of_fake();
}

Observations run_script(const JsScript& script, JsDriver& driver, const ExpectationOf& expected) {
  Observations out;
  for (const JsStep& step : script.steps) out.push_back(driver.run(step, &expected(step)));
  return out;
}

std::string describe(const JsStep& step) {
  if (step.op == JsOp::wait) return "wait " + std::to_string(step.wait_ms) + " ms";
  std::string text = std::string(js_op_name(step.op)) + " " + step.subject;
  if (!step.message.empty()) text += " " + step.message;
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

int report_mismatches(const JsScript& script, const std::vector<Column>& columns) {
  int mismatches = 0;
  for (size_t index = 0; index < script.steps.size(); ++index) {
    const JsStep& step = script.steps[index];
    bool wrong = false;
    for (const Column& column : columns) {
      wrong = wrong || !same_observations((*column.observations)[index], column.expectation(step));
    }
    if (!wrong) continue;
    ++mismatches;
    std::cout << "  " << step.pointer << " " << describe(step) << "\n"
              << "    nats-server (recorded): " << joined(step.then) << "\n";
    if (step.fake_then)
      std::cout << "    model (declared):       " << joined(*step.fake_then) << "\n";
    for (const Column& column : columns) {
      std::cout << "    " << column.label << joined((*column.observations)[index]) << "\n";
    }
  }
  return mismatches;
}

std::optional<JsScript> load(const std::string& path) {
  std::string error;
  std::optional<JsScript> script = load_jetstream_script(path, error);
  if (!script) std::cerr << "inboxsim_conformance: " << error << "\n";
  return script;
}

std::optional<Observations> run_model(const JsScript& script) {
  try {
    JsFakeDriver model(script.settings);
    return run_script(script, model, model_expected);
  } catch (const std::exception& error) {
    std::cout << "FAIL " << script.name << ": JetStream model: " << error.what() << "\n";
    return std::nullopt;
  }
}

}  // namespace

int check_jetstream_model(const std::vector<std::string>& scripts) {
  int status = kExitPassed;
  for (const std::string& path : scripts) {
    const std::optional<JsScript> script = load(path);
    if (!script) return kExitUsage;
    const std::optional<Observations> model = run_model(*script);
    if (!model) {
      status = kExitFailed;
      continue;
    }
    std::cout << "---- " << script->name << ": " << script->steps.size() << " steps\n";
    if (report_mismatches(*script, {{"model:                  ", &*model, model_expected}}) > 0) {
      std::cout << "FAIL " << script->name << ": the model does not do what the script says\n";
      status = kExitFailed;
    } else {
      std::cout << "PASS " << script->name << "\n";
    }
  }
  return status;
}

#ifdef INBOXSIM_HAVE_LIBNATS

namespace {

const std::vector<std::string>& recorded(const JsStep& step) { return step.then; }

struct Address {
  std::string host;
  int port = 0;
};

// --url HOST:PORT, or the file nats.sh start writes ("port=N", or "unavailable: why").
std::optional<Address> address_of(const std::string& url, const std::string& broker_file,
                                  std::string& skip_reason) {
  std::string address = url;
  if (address.empty()) {
    std::ifstream file(broker_file);
    std::string line;
    if (!file || !std::getline(file, line)) {
      skip_reason =
          "no nats-server: " + broker_file + " is missing (the nats_start test did not run)";
      return std::nullopt;
    }
    if (line.starts_with("unavailable:")) {
      skip_reason = line;
      return std::nullopt;
    }
    if (!line.starts_with("port=")) {
      throw std::runtime_error("no nats-server: " + broker_file + " says \"" + line +
                               "\" (see the nats_start test)");
    }
    address = "127.0.0.1:" + line.substr(5);
  }
  const size_t colon = address.rfind(':');
  const std::string port = colon == std::string::npos ? "" : address.substr(colon + 1);
  const bool digits = !port.empty() && port.size() <= 5 &&
                      port.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoi(port) > 65535) {
    throw std::invalid_argument("\"" + address + "\" is no HOST:PORT (a port from 0 to 65535)");
  }
  return Address{address.substr(0, colon), std::stoi(port)};
}

int compare(const JsScript& script, const Address& address, bool recording) {
  const std::optional<Observations> model = run_model(script);
  if (!model) return kExitFailed;
  Observations real;
  try {
    NatsDriver nats(address.host, address.port, script.settings, script.name);
    real = run_script(script, nats, recorded);
  } catch (const std::exception& error) {
    std::cout << "FAIL " << script.name << ": nats-server: " << error.what() << "\n";
    return kExitFailed;
  }
  if (recording) {
    for (size_t index = 0; index < script.steps.size(); ++index) {
      std::cout << script.steps[index].pointer << " " << describe(script.steps[index])
                << "\n    nats:  [";
      for (size_t line = 0; line < real[index].size(); ++line) {
        std::cout << (line == 0 ? "" : ", ") << "\"" << real[index][line] << "\"";
      }
      std::cout << "]\n    model: " << joined((*model)[index]) << "\n";
    }
    return kExitPassed;
  }
  std::cout << "---- " << script.name << ": " << script.steps.size() << " steps\n";
  const int mismatches =
      report_mismatches(script, {{"nats-server (now):      ", &real, recorded},
                                 {"model:                  ", &*model, model_expected}});
  std::cout << (mismatches > 0 ? "FAIL " : "PASS ") << script.name << "\n";
  return mismatches > 0 ? kExitFailed : kExitPassed;
}

}  // namespace

int with_nats(const std::vector<std::string>& scripts, const std::string& url,
              const std::string& broker_file, bool recording) {
  std::string skip_reason;
  std::optional<Address> address;
  try {
    address = address_of(url, broker_file, skip_reason);
  } catch (const std::invalid_argument& error) {
    std::cerr << "inboxsim_conformance: --url: " << error.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& error) {
    std::cout << "FAIL: " << error.what() << "\n";
    return kExitFailed;
  }
  if (!address) {
    std::cout << "SKIPPED: " << skip_reason << "\n";
    return kExitSkipped;
  }
  int status = kExitPassed;
  for (const std::string& path : scripts) {
    const std::optional<JsScript> script = load(path);
    if (!script) {
      status = kExitUsage;
      break;
    }
    if (compare(*script, *address, recording) != kExitPassed) status = kExitFailed;
  }
  close_nats_library();
  return status;
}

#else

int with_nats(const std::vector<std::string>&, const std::string&, const std::string&, bool) {
  std::cout << "SKIPPED: built without libnats (install libnats-dev and configure again)\n";
  return kExitSkipped;
}

#endif

}  // namespace inboxsim::conformance
