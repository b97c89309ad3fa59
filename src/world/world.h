// The World: one simulated bank. It owns the scheduler, the PRNG, the broker, both services,
// the fault book, the checker and the trace, and it is the ServiceHost through which the
// services reach all of them.
//
// Everything happens inside World::dispatch(), one event at a time, in (time, sequence) order:
// a delivery arrives and a service handles it, an ack reaches the broker, a relay polls, a
// crashed service restarts. The network latency of each hop is drawn from the seeded PRNG, so
// the seed decides the interleaving and nothing else does.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/broker.h"
#include "check/checker.h"
#include "domain/result.h"
#include "domain/scenario.h"
#include "kernel/rng.h"
#include "kernel/scheduler.h"
#include "kernel/trace.h"
#include "services/account_service.h"
#include "services/host.h"
#include "services/transfer_service.h"
#include "world/faults.h"
#include "world/limits.h"

namespace inboxsim {

struct WorldOptions {
  uint64_t seed = 1;
  std::string db_dir;     // empty: databases in memory
  std::string db_prefix;  // file name prefix inside db_dir
  bool keep_trace = true;
};

class World final : public ServiceHost {
 public:
  World(const Scenario& scenario, const Config& config, const WorldOptions& options);
  ~World() override;
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  // Scenario steps.
  void mark_step(std::string detail);
  void request_transfer(const TransferSpec& transfer);
  void arm_fault(const FaultSpec& fault);
  void drop_index(IndexName index);
  // Runs until nothing is pending; false if the event bound was hit first.
  bool run_until_quiescent();
  // Runs every event due in the next `ms` and moves the clock by `ms`.
  void run_for(int64_t ms);
  void advance(int64_t ms);

  // Checks the final state and returns everything the run produced.
  RunResult finish();

  Trace& trace() { return trace_; }

  // ServiceHost.
  int64_t now_ms() const override { return scheduler_.now_ms(); }
  std::string next_message_id() override;
  void crash_point(ServiceId service, CrashPoint point, const Message* message) override;
  bool publish_and_confirm(std::string_view publisher, const MessagePtr& message) override;
  void relay_publish(const MessagePtr& message, int64_t outbox_seq) override;
  void record(TraceEvent event) override;
  void committed(const CommitRecord& record) override;
  void schedule_relay_poll() override;
  void schedule_account_outbox_sweep() override;
  ExternalSeenStore& seen_store(ServiceId service) override;

 private:
  // What a scheduled job does when its time comes.
  enum class JobKind : uint8_t {
    deliver,
    ack,
    nack,
    confirm,
    confirm_timeout,
    relay_poll,
    account_sweep,
    restart,
    reconnect,
  };
  struct Job {
    JobKind kind = JobKind::deliver;
    uint32_t index = 0;  // consumer or service
    uint64_t epoch = 0;  // channel or service incarnation it belongs to
    int64_t value = 0;   // delivery id, delivery tag or outbox seq
  };
  struct ServiceState {
    bool up = true;
    uint64_t incarnation = 1;
    int64_t restart_after_ms = 1000;
  };

  void dispatch(const Job& job);
  void on_deliver(const Job& job);
  Outcome handle(const Delivery& delivery);
  void on_ack(const Job& job, bool is_nack);
  void on_confirm(const Job& job);
  void on_restart(ServiceId service);
  void on_reconnect(size_t consumer);
  void maybe_cleanup();
  void on_cleanup(int64_t tick_ms);
  void record_cleanup(std::string_view service, int64_t deleted, std::string detail);
  void send_ack(const Delivery& delivery);
  void send_nack(const Delivery& delivery, std::string reason);
  void crashed(const ServiceCrash& crash);
  void reset_connection(size_t consumer, std::string reason);
  void pump();
  void publish(std::string_view publisher, const MessagePtr& message);
  void fire_duplicate(const MessagePtr& message);
  bool step_once();
  int64_t latency_ms();
  ServiceId service_of(size_t consumer) const;
  std::string_view consumer_participant(size_t consumer) const;
  ServiceState& state(ServiceId service) { return services_state_[static_cast<size_t>(service)]; }
  // Runs `fn`; a crash inside it takes its service down.
  template <typename Fn>
  void guarded(Fn&& fn);

  Config config_;
  bool keep_trace_;
  std::map<std::string, AccountSpec> accounts_;
  Rng rng_;
  Scheduler<Job> scheduler_;
  Trace trace_;
  Stats stats_;
  Broker broker_;
  FaultBook faults_;
  Checker checker_;
  std::array<ExternalSeenStore, 2> seen_stores_;
  std::array<ServiceState, 2> services_state_;
  std::unique_ptr<AccountService> account_;
  std::unique_ptr<TransferService> transfer_;
  size_t account_consumer_ = 0;
  size_t saga_consumer_ = 0;
  std::optional<size_t> notifications_consumer_;
  std::map<int64_t, Delivery> in_flight_;           // deliveries on the wire, by id
  std::map<int64_t, MessagePtr> awaiting_confirm_;  // relay publishes by outbox seq
  int64_t next_delivery_id_ = 1;
  uint64_t next_message_number_ = 1;
  bool relay_poll_scheduled_ = false;
  bool account_sweep_scheduled_ = false;
  bool quiescent_ = true;
  int64_t next_cleanup_ms_ = kCleanupIntervalMs;
  std::vector<Delivery> dispatched_;  // scratch for pump()
  std::set<std::pair<MessageType, std::string>> published_ids_;
  // Each message's first publication, for duplicate faults armed later: all of them in order,
  // and by transfer, so that arming a fault that names a transfer does not scan the run.
  std::vector<MessagePtr> first_publications_;
  std::map<std::string, std::vector<MessagePtr>, std::less<>> first_publications_by_transfer_;
  std::map<std::string, int64_t> transfer_amounts_;
  std::map<ServiceId, int64_t> dedupe_hits_;
  std::map<std::string, std::string> envelopes_;  // by message id, when the trace is kept
};

}  // namespace inboxsim
