// A real nats-server with JetStream behind the script driver, through the C client (libnats,
// Debian's libnats-dev 3.4). Each client of a script has its own connection and a pull
// subscription bound to the durable consumer, which the driver creates itself (js_AddConsumer),
// so that no client owns it and closing one never deletes it (nats.c deletes a consumer that
// js_PullSubscribe created when its subscription goes). Every name gets the script's prefix
// (streams "<script>_<name>", subjects "<script>.<subject>"), so scripts can run side by side on
// one server: two streams may not share a subject.
//
// Acks, naks, terms and in-progress replies are sent as requests (jsOptions.Wait: nats.c then
// waits for the server's reply), so the server has processed each before the next step; fetch
// is a no-wait pull request that expires after kFetchExpiresMs; advisories are read from
// $JS.EVENT.ADVISORY.CONSUMER.<kind>.<stream>.<consumer>.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jetstream_script.h"

namespace inboxsim::conformance {

// Stops libnats's own threads and frees its global state (nats_CloseAndWait), once every
// driver is gone, so that a leak checker sees nothing left at exit.
void close_nats_library();

class NatsDriver final : public JsDriver {
 public:
  // REQUIRES: a nats-server with JetStream listens on host:port.
  NatsDriver(const std::string& host, int port, const JsSettings& settings,
             const std::string& script_name);
  ~NatsDriver() override;
  NatsDriver(const NatsDriver&) = delete;
  NatsDriver& operator=(const NatsDriver&) = delete;

  std::vector<std::string> run(const JsStep& step,
                               const std::vector<std::string>* expected) override;

 private:
  struct Connection;  // a natsConnection and its jsCtx
  struct Client;

  std::unique_ptr<Connection> connect() const;
  void add_stream(const JsStep& step);
  void subscribe(const JsStep& step, bool again);
  void publish(const JsStep& step, std::vector<std::string>& observed);
  void fetch(const JsStep& step, std::vector<std::string>& observed);
  void reply(const JsStep& step);
  void info(const JsStep& step, std::vector<std::string>& observed);
  void kill(const JsStep& step);
  void read_advisories(size_t wanted, bool may_come, std::vector<std::string>& observed);
  Client& client(const JsStep& step);
  std::string real_stream(const std::string& name) const { return prefix_ + "_" + name; }

  std::string url_;
  JsSettings settings_;
  std::string prefix_;
  std::unique_ptr<Connection> admin_;
  std::vector<std::string> streams_;  // created, to delete at the end
  std::map<std::string, std::unique_ptr<Client>> clients_;
  std::map<std::pair<std::string, uint64_t>, std::string> names_;  // (stream, seq) -> message
  void* advisories_ = nullptr;                                     // natsSubscription
};

}  // namespace inboxsim::conformance
