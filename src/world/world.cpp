#include "world/world.h"

#include "domain/participants.h"
#include "kernel/assert.h"

namespace inboxsim {

namespace {

std::string db_path(const WorldOptions& options, std::string_view service) {
  if (options.db_dir.empty()) return {};
  return options.db_dir + "/" + options.db_prefix + std::string(service) + ".sqlite";
}

ServiceId service_of_participant(std::string_view name) {
  return name == participant::account_service ? ServiceId::account : ServiceId::transfer;
}

TraceEvent delivery_event(inboxsim::EventKind kind, int64_t time_ms, std::string_view service,
                          std::string_view target, const Delivery& delivery) {
  TraceEvent event = event_about(kind, time_ms, service, *delivery.message);
  event.target = target;
  event.delivery_tag = delivery.delivery_tag;
  event.redelivered = delivery.redelivered;
  event.delivery_count = delivery.delivery_count;
  return event;
}

}  // namespace

World::World(const Scenario& scenario, const Config& config, const WorldOptions& options)
    : config_(config),
      keep_trace_(options.keep_trace),
      accounts_(scenario.accounts),
      rng_(options.seed),
      trace_(options.keep_trace),
      broker_([this](TraceEvent event) { record(std::move(event)); }, config.broker_prefetch,
              config.broker_delivery_limit),
      checker_(scenario.accounts, config.transfer_notifications) {
  account_ = std::make_unique<AccountService>(*this, config_,
                                              db_path(options, participant::account_service));
  transfer_ = std::make_unique<TransferService>(*this, config_,
                                                db_path(options, participant::transfer_service));
  account_->open_accounts(accounts_);
  const size_t account_queue = broker_.declare_queue("account-service", {"transfers.#"});
  const size_t transfer_queue = broker_.declare_queue("transfer-service", {"accounts.#"});
  account_consumer_ = broker_.add_consumer("account-service", account_queue);
  saga_consumer_ = broker_.add_consumer("transfer-service", transfer_queue);
  if (config_.transfer_notifications) {
    const size_t queue =
        broker_.declare_queue("transfer-service.notifications",
                              {"accounts.account.credited", "accounts.account.refunded"});
    notifications_consumer_ = broker_.add_consumer("notifications", queue);
  }
  checker_.on_violation = [this](const Violation& violation) {
    TraceEvent event;
    event.time_ms = violation.time_ms;
    event.kind = inboxsim::EventKind::violation;
    event.detail = std::string(invariant_name(violation.invariant)) + ": " + violation.detail;
    record(std::move(event));
  };
}

World::~World() = default;

std::string World::next_message_id() { return "m-" + std::to_string(next_message_number_++); }

int64_t World::latency_ms() { return rng_.between(kLatencyMsMin, kLatencyMsMax); }

ServiceId World::service_of(size_t consumer) const {
  return consumer == account_consumer_ ? ServiceId::account : ServiceId::transfer;
}

std::string_view World::consumer_participant(size_t consumer) const {
  if (consumer == account_consumer_) return participant::account_service;
  if (consumer == saga_consumer_) return participant::transfer_service;
  return participant::notifications;
}

template <typename Fn>
void World::guarded(Fn&& fn) {
  try {
    fn();
  } catch (const ServiceCrash& crash) {
    crashed(crash);
  }
}

// ---- scenario steps --------------------------------------------------------------------------

void World::mark_step(std::string detail) {
  TraceEvent event;
  event.time_ms = now_ms();
  event.kind = inboxsim::EventKind::step;
  event.detail = std::move(detail);
  record(std::move(event));
}

void World::request_transfer(const TransferSpec& transfer) {
  // A client whose request finds transfer-service down retries until it is back.
  for (int64_t waited = 0; !state(ServiceId::transfer).up; ++waited) {
    INBOXSIM_ASSERT(waited < kEventsPerRunMax);
    const bool stepped = step_once();
    INBOXSIM_ASSERT(stepped);
  }
  TraceEvent event;
  event.time_ms = now_ms();
  event.kind = inboxsim::EventKind::request;
  event.service = participant::client;
  event.target = participant::transfer_service;
  event.transfer = transfer.id;
  event.amount = transfer.amount;
  event.detail = transfer.from + " -> " + transfer.to;
  record(std::move(event));
  checker_.register_transfer(transfer.id, transfer.amount);
  transfer_amounts_[transfer.id] = transfer.amount;
  transfer_->request(transfer);
}

void World::arm_fault(const FaultSpec& fault) {
  if (fault.kind == FaultKind::drop_connection && !fault.has_match) {
    INBOXSIM_ASSERT(fault.service.has_value());
    for (size_t consumer = 0; consumer < broker_.consumer_count(); ++consumer) {
      if (service_of(consumer) == *fault.service && broker_.connected(consumer)) {
        reset_connection(consumer, "connection dropped");
      }
    }
    return;
  }
  if (fault.kind == FaultKind::duplicate) {
    // "Publish a duplicate by hand": if the message is already out there, copy it now.
    FaultSpec remaining = fault;
    const auto by_transfer = first_publications_by_transfer_.find(fault.match.transfer);
    static const std::vector<MessagePtr> kNone;
    const std::vector<MessagePtr>& candidates =
        fault.match.transfer.empty()
            ? first_publications_
            : (by_transfer == first_publications_by_transfer_.end() ? kNone : by_transfer->second);
    for (const MessagePtr& published : candidates) {
      if (!match_selects(fault.match, *published)) continue;
      if (remaining.match.occurrence == 1) {
        fire_duplicate(published);
        return;
      }
      --remaining.match.occurrence;
    }
    faults_.arm(remaining);
    return;
  }
  faults_.arm(fault);
}

void World::drop_index(IndexName index) {
  const bool on_account = account_->drop_index(index);
  const bool on_transfer = !on_account && transfer_->drop_index(index);
  INBOXSIM_ASSERT(on_account || on_transfer);
  TraceEvent event;
  event.time_ms = now_ms();
  event.kind = inboxsim::EventKind::index_dropped;
  event.service = on_account ? participant::account_service : participant::transfer_service;
  event.detail = std::string(index_name(index));
  record(std::move(event));
}

bool World::step_once() {
  if (scheduler_.empty()) return false;
  const Job job = scheduler_.pop();
  maybe_cleanup();
  dispatch(job);
  return true;
}

bool World::run_until_quiescent() {
  int64_t processed = 0;
  while (!scheduler_.empty()) {
    if (processed++ >= kEventsPerRunMax) {
      quiescent_ = false;
      return false;
    }
    step_once();
  }
  quiescent_ = true;
  return true;
}

void World::run_for(int64_t ms) {
  INBOXSIM_ASSERT(ms >= 0);
  const int64_t target = now_ms() + ms;
  int64_t processed = 0;
  while (!scheduler_.empty() && scheduler_.next_time_ms() <= target) {
    if (processed++ >= kEventsPerRunMax) {
      // A livelock inside a timed run: leave the rest for the final run, whose bound
      // reports it as a termination violation.
      quiescent_ = false;
      return;
    }
    step_once();
  }
  scheduler_.advance_to(target);
  maybe_cleanup();
}

void World::advance(int64_t ms) {
  TraceEvent event;
  event.time_ms = now_ms();
  event.kind = inboxsim::EventKind::advance;
  event.amount = ms;
  event.detail = "virtual time jumps " + std::to_string(ms) + " ms";
  record(std::move(event));
  run_for(ms);
}

// ---- the event loop --------------------------------------------------------------------------

void World::dispatch(const Job& job) {
  switch (job.kind) {
    case JobKind::deliver: on_deliver(job); return;
    case JobKind::ack: on_ack(job, false); return;
    case JobKind::nack: on_ack(job, true); return;
    case JobKind::confirm: on_confirm(job); return;
    case JobKind::confirm_timeout:
      if (state(ServiceId::transfer).incarnation == job.epoch) {
        transfer_->relay_confirm_timed_out(job.value);
      }
      return;
    case JobKind::relay_poll:
      if (state(ServiceId::transfer).incarnation != job.epoch) return;
      relay_poll_scheduled_ = false;
      guarded([&] { transfer_->relay_poll(); });
      return;
    case JobKind::account_sweep:
      if (state(ServiceId::account).incarnation != job.epoch) return;
      account_sweep_scheduled_ = false;
      guarded([&] {
        if (!account_->sweep_outbox()) {
          // A lost confirm: the delivery loop tries again after the confirm timeout.
          account_sweep_scheduled_ = true;
          scheduler_.schedule_at(now_ms() + kConfirmTimeoutMs,
                                 Job{JobKind::account_sweep, 0, job.epoch, 0});
        }
      });
      return;
    case JobKind::restart: on_restart(static_cast<ServiceId>(job.index)); return;
    case JobKind::reconnect: on_reconnect(job.index); return;
  }
  INBOXSIM_ASSERT(false);
}

void World::on_deliver(const Job& job) {
  auto found = in_flight_.find(job.value);
  INBOXSIM_ASSERT(found != in_flight_.end());
  const Delivery delivery = std::move(found->second);
  in_flight_.erase(found);
  // A delivery still on the wire when its channel closed was requeued then; this copy is void.
  if (!broker_.channel_open(delivery.consumer, delivery.channel)) return;
  const ServiceId service = service_of(delivery.consumer);
  INBOXSIM_ASSERT(state(service).up);
  const std::string_view consumer = consumer_participant(delivery.consumer);
  record(delivery_event(inboxsim::EventKind::deliver, now_ms(), participant::broker, consumer,
                        delivery));
  const Message& message = *delivery.message;
  if (faults_.take(FaultKind::drop_connection, service, message)) {
    reset_connection(delivery.consumer, "connection dropped");
    return;
  }
  if (faults_.take(FaultKind::nack, service, message)) {
    send_nack(delivery, "transient failure (database busy)");
    return;
  }
  Outcome outcome = Outcome::ack;
  try {
    outcome = handle(delivery);
  } catch (const ServiceCrash& crash) {
    crashed(crash);
    return;
  } catch (const ConsumerFault& fault) {
    TraceEvent event =
        event_about(inboxsim::EventKind::consumer_fault, now_ms(), consumer, message);
    event.detail = std::string(fault.reason) + "; rolled back";
    record(std::move(event));
    send_nack(delivery, std::string(fault.reason));
    return;
  }
  if (outcome == Outcome::ack) {
    send_ack(delivery);
  } else {
    send_nack(delivery, "handler asked for a retry");
  }
}

Outcome World::handle(const Delivery& delivery) {
  if (delivery.consumer == account_consumer_) return account_->handle(delivery);
  if (delivery.consumer == saga_consumer_) {
    return transfer_->handle(TransferConsumer::saga, delivery);
  }
  return transfer_->handle(TransferConsumer::notifications, delivery);
}

void World::send_ack(const Delivery& delivery) {
  const std::string_view consumer = consumer_participant(delivery.consumer);
  if (faults_.take(FaultKind::drop_ack, service_of(delivery.consumer), *delivery.message)) {
    TraceEvent event = delivery_event(inboxsim::EventKind::ack_lost, now_ms(), consumer,
                                      participant::broker, delivery);
    event.detail = "ack lost on the wire";
    record(std::move(event));
    reset_connection(delivery.consumer, "connection reset after a lost ack");
    return;
  }
  scheduler_.schedule_at(now_ms() + latency_ms(),
                         Job{JobKind::ack, static_cast<uint32_t>(delivery.consumer),
                             delivery.channel, delivery.delivery_tag});
}

void World::send_nack(const Delivery& delivery, std::string reason) {
  TraceEvent event =
      delivery_event(inboxsim::EventKind::nack, now_ms(), consumer_participant(delivery.consumer),
                     participant::broker, delivery);
  event.detail = std::move(reason);
  record(std::move(event));
  scheduler_.schedule_at(now_ms() + latency_ms(),
                         Job{JobKind::nack, static_cast<uint32_t>(delivery.consumer),
                             delivery.channel, delivery.delivery_tag});
}

void World::on_ack(const Job& job, bool is_nack) {
  const std::string_view consumer = consumer_participant(job.index);
  if (is_nack) {
    broker_.nack(job.index, job.epoch, job.value, now_ms());
  } else if (const auto settled = broker_.ack(job.index, job.epoch, job.value)) {
    record(delivery_event(inboxsim::EventKind::ack, now_ms(), consumer, participant::broker,
                          *settled));
  } else {
    TraceEvent event;
    event.time_ms = now_ms();
    event.kind = inboxsim::EventKind::ack_lost;
    event.service = consumer;
    event.target = participant::broker;
    event.detail = "ack for tag " + std::to_string(job.value) +
                   " arrived on a closed channel; the message was already requeued";
    record(std::move(event));
  }
  pump();
}

void World::on_confirm(const Job& job) {
  const auto found = awaiting_confirm_.find(job.value);
  if (found == awaiting_confirm_.end()) return;
  const MessagePtr message = found->second;
  awaiting_confirm_.erase(found);
  if (state(ServiceId::transfer).incarnation != job.epoch) return;
  TraceEvent event =
      event_about(inboxsim::EventKind::confirm, now_ms(), participant::broker, *message);
  event.target = participant::relay;
  event.detail = "outbox row " + std::to_string(job.value);
  record(std::move(event));
  guarded([&] { transfer_->relay_confirmed(job.value); });
}

void World::on_restart(ServiceId service) {
  ServiceState& service_state = state(service);
  INBOXSIM_ASSERT(!service_state.up);
  service_state.up = true;
  TraceEvent event;
  event.time_ms = now_ms();
  event.kind = inboxsim::EventKind::restart;
  event.service =
      service == ServiceId::account ? participant::account_service : participant::transfer_service;
  event.detail = "restarted with its committed data";
  record(std::move(event));
  for (size_t consumer = 0; consumer < broker_.consumer_count(); ++consumer) {
    if (service_of(consumer) == service && !broker_.connected(consumer)) {
      broker_.open_connection(consumer);
    }
  }
  guarded([&] {
    if (service == ServiceId::account) {
      account_->restart();
    } else {
      transfer_->restart();
    }
  });
  pump();
}

void World::on_reconnect(size_t consumer) {
  const ServiceId service = service_of(consumer);
  if (!state(service).up || broker_.connected(consumer)) return;
  broker_.open_connection(consumer);
  pump();
}

void World::maybe_cleanup() {
  if (now_ms() < next_cleanup_ms_) return;
  const int64_t ticks_passed = (now_ms() - next_cleanup_ms_) / kCleanupIntervalMs;
  const int64_t tick_ms = next_cleanup_ms_ + ticks_passed * kCleanupIntervalMs;
  next_cleanup_ms_ = tick_ms + kCleanupIntervalMs;
  on_cleanup(tick_ms);
}

void World::on_cleanup(int64_t tick_ms) {
  // A service that is down cleans nothing; the first tick after its restart catches up.
  if (state(ServiceId::account).up) {
    record_cleanup(participant::account_service, account_->cleanup_inbox(tick_ms),
                   "inbox cleanup: rows delivered more than " +
                       std::to_string(config_.account_inbox_window_ms) + " ms ago deleted");
  }
  if (state(ServiceId::transfer).up) {
    record_cleanup(participant::transfer_service, transfer_->cleanup_processed(tick_ms),
                   "TTL: processed_messages older than " +
                       std::to_string(config_.transfer_processed_ttl_ms) + " ms deleted");
  }
}

void World::record_cleanup(std::string_view service, int64_t deleted, std::string detail) {
  if (deleted == 0) return;
  TraceEvent event;
  event.time_ms = now_ms();
  event.kind = inboxsim::EventKind::cleanup;
  event.service = service;
  event.amount = deleted;
  event.detail = std::move(detail);
  record(std::move(event));
}

// ---- crashes and connections -----------------------------------------------------------------

void World::crash_point(ServiceId service, CrashPoint point, const Message* message) {
  const auto fired = faults_.take_crash(service, point, message);
  if (!fired) return;
  state(service).restart_after_ms = fired->restart_after_ms;
  TraceEvent event;
  if (message != nullptr) event = event_about(inboxsim::EventKind::crash, now_ms(), {}, *message);
  event.time_ms = now_ms();
  event.kind = inboxsim::EventKind::crash;
  event.service =
      service == ServiceId::account ? participant::account_service : participant::transfer_service;
  event.detail = std::string(crash_point_name(point));
  record(std::move(event));
  throw ServiceCrash{service, point};
}

void World::crashed(const ServiceCrash& crash) {
  ServiceState& service_state = state(crash.service);
  INBOXSIM_ASSERT(service_state.up);
  service_state.up = false;
  ++service_state.incarnation;
  if (crash.service == ServiceId::transfer) {
    transfer_->crash();
    relay_poll_scheduled_ = false;
  } else {
    account_sweep_scheduled_ = false;
  }
  for (size_t consumer = 0; consumer < broker_.consumer_count(); ++consumer) {
    if (service_of(consumer) != crash.service || !broker_.connected(consumer)) continue;
    TraceEvent event;
    event.time_ms = now_ms();
    event.kind = inboxsim::EventKind::connection_closed;
    event.service = consumer_participant(consumer);
    event.target = participant::broker;
    event.detail = "process died; unacked deliveries go back to the queue";
    record(std::move(event));
    broker_.close_connection(consumer, now_ms(), "connection closed");
  }
  scheduler_.schedule_at(
      now_ms() + service_state.restart_after_ms,
      Job{JobKind::restart, static_cast<uint32_t>(crash.service), service_state.incarnation, 0});
}

void World::reset_connection(size_t consumer, std::string reason) {
  TraceEvent event;
  event.time_ms = now_ms();
  event.kind = inboxsim::EventKind::connection_closed;
  event.service = consumer_participant(consumer);
  event.target = participant::broker;
  event.detail = std::move(reason);
  record(std::move(event));
  broker_.close_connection(consumer, now_ms(), "connection closed");
  scheduler_.schedule_at(now_ms() + kReconnectMs,
                         Job{JobKind::reconnect, static_cast<uint32_t>(consumer), 0, 0});
}

// ---- publishing ------------------------------------------------------------------------------

void World::pump() {
  dispatched_.clear();
  broker_.pump(dispatched_);
  for (Delivery& delivery : dispatched_) {
    int64_t delay_ms = latency_ms();
    if (const auto held =
            faults_.take(FaultKind::delay, service_of(delivery.consumer), *delivery.message)) {
      delay_ms += held->ms;
    }
    const int64_t id = next_delivery_id_++;
    const Job job{JobKind::deliver, static_cast<uint32_t>(delivery.consumer), delivery.channel, id};
    in_flight_.emplace(id, std::move(delivery));
    scheduler_.schedule_at(now_ms() + delay_ms, job);
  }
}

void World::publish(std::string_view publisher, const MessagePtr& message) {
  TraceEvent event = event_about(inboxsim::EventKind::publish, now_ms(), publisher, *message);
  event.target = participant::broker;
  event.detail = std::string(routing_key(message->type));
  record(std::move(event));
  if (keep_trace_) envelopes_.try_emplace(message->message_id, envelope_json(*message));
  broker_.publish(message);
  const bool first = published_ids_.insert({message->type, message->message_id}).second;
  if (first && publisher != participant::operator_) {
    first_publications_.push_back(message);
    first_publications_by_transfer_[message->transfer].push_back(message);
    const ServiceId service =
        publisher == participant::relay ? ServiceId::transfer : ServiceId::account;
    while (faults_.take(FaultKind::duplicate, service, *message)) fire_duplicate(message);
  }
  pump();
}

void World::fire_duplicate(const MessagePtr& message) {
  publish(participant::operator_, std::make_shared<Message>(*message));
}

bool World::publish_and_confirm(std::string_view publisher, const MessagePtr& message) {
  publish(publisher, message);
  if (faults_.take(FaultKind::lose_confirm, service_of_participant(publisher), *message)) {
    TraceEvent event =
        event_about(inboxsim::EventKind::confirm_lost, now_ms(), participant::broker, *message);
    event.target = publisher;
    event.detail = "publisher confirm lost; the message did reach the broker";
    record(std::move(event));
    return false;
  }
  return true;
}

void World::relay_publish(const MessagePtr& message, int64_t outbox_seq) {
  publish(participant::relay, message);
  const uint64_t incarnation = state(ServiceId::transfer).incarnation;
  if (faults_.take(FaultKind::lose_confirm, ServiceId::transfer, *message)) {
    TraceEvent event =
        event_about(inboxsim::EventKind::confirm_lost, now_ms(), participant::broker, *message);
    event.target = participant::relay;
    event.detail = "publisher confirm lost; the relay will publish again";
    record(std::move(event));
    scheduler_.schedule_at(now_ms() + kConfirmTimeoutMs,
                           Job{JobKind::confirm_timeout, 0, incarnation, outbox_seq});
    return;
  }
  awaiting_confirm_[outbox_seq] = message;
  scheduler_.schedule_at(now_ms() + latency_ms(),
                         Job{JobKind::confirm, 0, incarnation, outbox_seq});
}

void World::schedule_relay_poll() {
  const ServiceState& transfer = state(ServiceId::transfer);
  if (relay_poll_scheduled_ || !transfer.up) return;
  relay_poll_scheduled_ = true;
  scheduler_.schedule_at(now_ms() + rng_.between(kRelayPollMsMin, kRelayPollMsMax),
                         Job{JobKind::relay_poll, 0, transfer.incarnation, 0});
}

void World::schedule_account_outbox_sweep() {
  const ServiceState& account = state(ServiceId::account);
  if (account_sweep_scheduled_ || !account.up) return;
  account_sweep_scheduled_ = true;
  scheduler_.schedule_at(now_ms() + latency_ms(),
                         Job{JobKind::account_sweep, 0, account.incarnation, 0});
}

ExternalSeenStore& World::seen_store(ServiceId service) {
  return seen_stores_[static_cast<size_t>(service)];
}

// ---- observation -----------------------------------------------------------------------------

void World::record(TraceEvent event) {
  switch (event.kind) {
    case inboxsim::EventKind::publish: ++stats_.published; break;
    case inboxsim::EventKind::deliver:
      ++stats_.deliveries;
      if (event.redelivered) ++stats_.redeliveries;
      break;
    case inboxsim::EventKind::ack: ++stats_.acks; break;
    case inboxsim::EventKind::dedupe_hit:
      ++stats_.dedupe_hits;
      ++dedupe_hits_[service_of_participant(event.service)];
      break;
    case inboxsim::EventKind::effect: ++stats_.effects; break;
    case inboxsim::EventKind::crash: ++stats_.crashes; break;
    case inboxsim::EventKind::dead_letter: ++stats_.dead_lettered; break;
    default: break;
  }
  trace_.record(std::move(event));
}

void World::committed(const CommitRecord& record_in) {
  ++stats_.transactions;
  for (const TraceEvent& event : record_in.events) record(event);
  checker_.on_commit(record_in, now_ms());
  if (record_in.service == ServiceId::transfer && record_in.outbox_written) schedule_relay_poll();
}

RunResult World::finish() {
  FinalState final_state;
  final_state.balances = account_->balances();
  final_state.ledger = account_->ledger();
  final_state.sagas = transfer_->sagas();
  final_state.notifications = transfer_->notification_counts();
  final_state.queued_messages =
      static_cast<int64_t>(broker_.ready_messages() + broker_.unacked_messages());
  final_state.unsent_outbox_rows =
      account_->undelivered_outbox_rows() + transfer_->unsent_outbox_rows();
  final_state.dead_lettered = stats_.dead_lettered;
  final_state.quiescent = quiescent_;
  checker_.check_final(final_state, now_ms());

  RunResult result;
  result.config = config_to_json(config_);
  result.trace_hash = trace_.hash_hex();
  result.virtual_ms = now_ms();
  result.stats = stats_;
  result.dedupe_hits = dedupe_hits_;
  for (const auto& [type, id] : published_ids_) ++result.published_ids[type];
  for (const auto& [name, spec] : accounts_) result.opening_balances[name] = spec.balance;
  result.balances = final_state.balances;
  result.transfers = final_state.sagas;
  result.transfer_amounts = transfer_amounts_;
  result.ledger = std::move(final_state.ledger);
  for (size_t index = 0; index < kInvariantCount; ++index) {
    const auto invariant = static_cast<Invariant>(index);
    result.invariant_applies[index] = checker_.applies(invariant);
  }
  // Violations in contract order, each with the first detail found.
  for (size_t index = 0; index < kInvariantCount; ++index) {
    for (const Violation& violation : checker_.violations()) {
      if (static_cast<size_t>(violation.invariant) == index) result.violations.push_back(violation);
    }
  }
  result.unfired_faults = faults_.unfired();
  result.events = trace_.events();
  result.envelopes = envelopes_;
  return result;
}

}  // namespace inboxsim
