#include "report/mermaid.h"

#include <algorithm>
#include <cctype>

#include "domain/participants.h"
#include "report/narrate.h"

namespace inboxsim {

namespace {

// Step groups alternate between two pale colours so that consecutive steps stay apart.
constexpr std::string_view kStepColours[] = {"rgb(232, 240, 252)", "rgb(240, 246, 234)"};

// Mermaid's lexer ends a message at `;`, `#` and a newline, and treats `<`/`>` as markup, so
// they become entity codes (Mermaid decodes `#NN;` before drawing).
std::string escape_label(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case ';': out += "#59;"; break;
      case '#': out += "#35;"; break;
      case '<': out += "#60;"; break;
      case '>': out += "#62;"; break;
      case '\n':
      case '\r': out += ' '; break;
      default: out.push_back(c);
    }
  }
  return out;
}

// "transfer-service" becomes "TransferService": an identifier that cannot collide with a
// Mermaid keyword (they are all lower case) and contains no `-`, which the lexer reads as an
// arrow.
std::string participant_id(std::string_view name) {
  std::string id;
  bool upper = true;
  for (const char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) {
      upper = true;
      continue;
    }
    id.push_back(upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c);
    upper = false;
  }
  return id.empty() ? "Unknown" : id;
}

std::string message_label(const TraceEvent& event) {
  std::string label(event.type);
  if (!event.transfer.empty()) label += " " + event.transfer;
  return label;
}

std::string arrow_label(const TraceEvent& event, bool jetstream) {
  const std::string tag = " " + delivery_id_text(event.delivery_tag, jetstream);
  const std::string counted = delivery_count_text(event, jetstream);
  switch (event.kind) {
    case EventKind::request:
      return "request " + event.transfer + " " + event.detail + " " + std::to_string(event.amount);
    case EventKind::publish:
      return "publish " + message_label(event) + " (" + event.message_id + ")" +
             (event.service == participant::operator_ ? " copy by hand"
              : event.service == participant::broker  ? " copy made by the broker"
              : event.service == participant::network ? " copy from the network"
                                                      : "");
    case EventKind::deliver:
      return "deliver " + message_label(event) + " (" + event.message_id + ")" + tag +
             (!event.redelivered ? ""
              // A classic queue counts nothing: its redeliveries carry no x-delivery-count.
              : counted.empty() ? " REDELIVERED"
                                : " REDELIVERED (" + counted + ")");
    case EventKind::ack: return "ack" + tag;
    case EventKind::ack_lost: return "ack" + tag + " LOST";
    case EventKind::in_progress: return "in progress" + tag + " (+WPI)";
    case EventKind::term: return "term" + tag + " (+TERM)";
    case EventKind::ack_void: return "ack" + tag + " on a closed channel, ignored";
    case EventKind::publish_nacked: return "nack of publish " + event.message_id;
    case EventKind::redrive:
      return "redrive " + message_label(event) + " (" + event.message_id + ")";
    case EventKind::nack:
      return (jetstream ? "nak" : "nack") + tag + (event.detail.empty() ? "" : ": " + event.detail);
    // A publisher confirm is JetStream's publish ack.
    case EventKind::confirm: return (jetstream ? "publish ack " : "confirm ") + event.message_id;
    case EventKind::confirm_lost:
      return (jetstream ? "publish ack " : "confirm ") + event.message_id + " LOST";
    default: return {};
  }
}

// Solid arrows carry work, dashed ones answer it; a cross marks what never arrived.
std::string_view arrow_shape(EventKind kind) {
  switch (kind) {
    case EventKind::ack:
    case EventKind::in_progress:
    case EventKind::confirm: return "-->>";
    case EventKind::ack_lost:
    case EventKind::ack_void:
    case EventKind::publish_nacked:
    case EventKind::confirm_lost: return "--x";
    case EventKind::nack:
    case EventKind::term: return "-x";
    default: return "->>";
  }
}

// What a `Note over` says for an event that happens inside one participant.
std::string note_text(const TraceEvent& event, bool jetstream) {
  switch (event.kind) {
    case EventKind::effect:
      return event.account + " " + (event.amount > 0 ? "+" : "") + std::to_string(event.amount) +
             " (" + event.detail + " " + event.transfer + ")";
    case EventKind::dedupe_hit:
      return "dedupe hit " + event.message_id + ": " + event.detail + ", acked without effect";
    case EventKind::crash:
      return "CRASH at " + event.detail +
             (event.type.empty() ? "" : " handling " + message_label(event));
    case EventKind::restart: return "restart with committed data";
    case EventKind::dead_letter:
      return "DEAD-LETTERED " + message_label(event) + " (" + event.message_id + ")";
    case EventKind::dropped:
      return "DROPPED " + message_label(event) + " (" + event.message_id + ")";
    case EventKind::violation: return "VIOLATION " + event.detail;
    case EventKind::requeue:
      return (jetstream ? "redeliver " : "requeue ") + event.message_id + ": " + event.detail;
    case EventKind::connection_closed: return "connection to broker closed: " + event.detail;
    case EventKind::saga: return "saga " + event.transfer + ": " + event.detail;
    case EventKind::paused: return "PAUSE " + event.detail;
    case EventKind::resumed: return "resume: " + event.detail;
    case EventKind::lock_wait: return "waits: " + event.detail;
    case EventKind::lock_granted: return event.detail;
    case EventKind::retry: return "RETRY " + event.detail;
    case EventKind::error_queued: return "ERROR QUEUE " + event.detail;
    default: return describe_event(event, jetstream);
  }
}

class MermaidWriter {
 public:
  explicit MermaidWriter(const RunResult& result)
      : result_(result),
        participants_(diagram_participants(result)),
        jetstream_(ran_on_jetstream(result)) {}

  std::string render() {
    out_ += "sequenceDiagram\n";
    if (!result_.title.empty()) out_ += "    title " + escape_label(result_.title) + "\n";
    for (const std::string& name : participants_) {
      out_ += "    participant " + participant_id(name) + " as " + escape_label(name) + "\n";
    }
    for (const TraceEvent& event : result_.events) write_event(event);
    close_step();
    return std::move(out_);
  }

 private:
  void write_event(const TraceEvent& event) {
    if (event.kind == EventKind::step) {
      open_step(event);
    } else if (is_message_event(event.kind)) {
      line(participant_id(event.service) + std::string(arrow_shape(event.kind)) +
           participant_id(event.target) + ": " +
           escape_label(arrow_label(event, jetstream_)));
    } else {
      line("Note " + note_place(event) + ": " +
           escape_label(note_text(event, jetstream_)));
    }
  }

  // Events about the whole run span the diagram; the rest sit on their own participant.
  std::string note_place(const TraceEvent& event) const {
    const bool whole_run = event.kind == EventKind::violation || event.kind == EventKind::advance ||
                           event.service.empty();
    if (whole_run) return "over " + span();
    return "over " + participant_id(event.service);
  }

  std::string span() const {
    return participant_id(participants_.front()) + "," + participant_id(participants_.back());
  }

  void open_step(const TraceEvent& event) {
    close_step();
    ++step_count_;
    const auto colour = kStepColours[static_cast<size_t>(step_count_ % 2)];
    line("rect " + std::string(colour));
    in_step_ = true;
    line("Note over " + span() + ": " +
         escape_label("Step " + std::to_string(step_count_) + " · " + event.detail));
  }

  void close_step() {
    if (!in_step_) return;
    in_step_ = false;
    line("end");
  }

  void line(const std::string& text) {
    out_ += in_step_ && text != "end" ? "        " : "    ";
    out_ += text;
    out_ += '\n';
  }

  const RunResult& result_;
  std::vector<std::string> participants_;
  const bool jetstream_;  // the run was on JetStream: the diagram uses its words
  std::string out_;
  int64_t step_count_ = 0;
  bool in_step_ = false;
};

}  // namespace

bool is_message_event(EventKind kind) {
  switch (kind) {
    case EventKind::request:
    case EventKind::publish:
    case EventKind::deliver:
    case EventKind::ack:
    case EventKind::ack_lost:
    case EventKind::ack_void:
    case EventKind::nack:
    case EventKind::in_progress:
    case EventKind::term:
    case EventKind::confirm:
    case EventKind::confirm_lost:
    case EventKind::publish_nacked:
    case EventKind::redrive: return true;
    default: return false;
  }
}

namespace {

// How many instances the run's service behind `base` had (1 for the other participants).
int64_t instance_count(const RunResult& result, std::string_view base) {
  const bool account = base == participant::account_service;
  const bool transfer = base == participant::transfer_service || base == participant::relay ||
                        base == participant::notifications;
  if (!account && !transfer) return 1;
  const char* key = account ? "account.instances" : "transfer.instances";
  const auto found = result.config.find(key);
  return found == result.config.end() || !found->is_number_integer() ? 1 : found->get<int64_t>();
}

}  // namespace

// The lanes in the order of the bank's architecture, one per instance: the client, the transfer
// service's instances (their notifications consumers, when seen), its relays, the broker, the
// account service's instances; then whoever else took part (the operator).
std::vector<std::string> diagram_participants(const RunResult& result) {
  std::vector<std::string> seen;
  auto note = [&seen](std::string_view name) {
    if (!name.empty() && std::find(seen.begin(), seen.end(), name) == seen.end()) {
      seen.emplace_back(name);
    }
  };
  for (const TraceEvent& event : result.events) {
    if (event.kind == EventKind::step || event.kind == EventKind::advance) continue;
    note(event.service);
    note(event.target);
  }
  const bool notifications_seen = std::any_of(seen.begin(), seen.end(), [](const std::string& n) {
    return participant_base(n) == participant::notifications;
  });
  std::vector<std::string> order;
  for (const std::string_view base :
       {participant::client, participant::transfer_service, participant::notifications,
        participant::relay, participant::broker, participant::account_service}) {
    if (base == participant::notifications && !notifications_seen) continue;
    const int64_t count = instance_count(result, base);
    for (int64_t number = 1; number <= count; ++number) {
      order.emplace_back(count == 1 ? base : instance_participant(base, number, count));
    }
  }
  for (const std::string& name : seen) {
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  }
  return order;
}

std::string render_mermaid(const RunResult& result) { return MermaidWriter(result).render(); }

}  // namespace inboxsim
