// The JetStream model (src/broker/jetstream/jetstream.h) behind the script driver: each operation
// becomes the model's call, on a clock that moves 1 ms per step, by each wait, and by a pull
// request's expiry when it could not be filled (kFetchExpiresMs: the server holds such a request
// that long). The model has no connections: a pull consumer's pending deliveries belong to the
// consumer, not to the client that fetched them, so `kill` and `reconnect` only change which
// client may act.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "broker/jetstream/jetstream.h"
#include "jetstream_script.h"

namespace inboxsim::conformance {

class JsFakeDriver final : public JsDriver {
 public:
  explicit JsFakeDriver(const JsSettings& settings) : settings_(settings) {}

  std::vector<std::string> run(const JsStep& step, const std::vector<std::string>*) override;

 private:
  struct Client {
    size_t consumer = 0;
    bool connected = true;
    std::vector<JetStreamDelivery> deliveries;  // every delivery it got, in order
  };

  void add_stream(const JsStep& step);
  void subscribe(const JsStep& step);
  void publish(const JsStep& step, std::vector<std::string>& observed);
  void fetch(const JsStep& step, std::vector<std::string>& observed);
  void reply(const JsStep& step);
  void info(const JsStep& step, std::vector<std::string>& observed) const;
  void advisories(std::vector<std::string>& observed);
  Client& client(const JsStep& step);

  JsSettings settings_;
  JetStream js_;
  std::map<std::string, Client> clients_;
  // What each stream sequence carries, for the advisories (which name only the sequence).
  std::map<std::pair<size_t, uint64_t>, std::string> names_;
  int64_t now_ms_ = 0;
};

}  // namespace inboxsim::conformance
