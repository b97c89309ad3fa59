#include "report/glossary.h"

#include <algorithm>
#include <cctype>

#include "domain/crash.h"
#include "domain/scenario.h"
#include "kernel/assert.h"
#include "report/html.h"
#include "report/legend.h"

namespace inboxsim {

namespace {

// The crash points, one line each, from domain/crash.h's own table.
std::string crash_points_meaning() {
  std::string text =
      "a named place inside a unit of work where a `crash` fault can kill the process (docs/"
      "model.md lists each handler's points in order). The process dies there: its open "
      "transaction rolls back, its broker connection closes (the broker requeues what it had "
      "not acked), and it restarts with only what it had committed. The points:";
  for (size_t i = 0; i < kCrashPointCount; ++i) {
    const auto point = static_cast<CrashPoint>(i);
    text += " " + std::string(crash_point_name(point)) + ": " +
            std::string(crash_point_meaning(point)) + (i + 1 < kCrashPointCount ? ";" : ".");
  }
  return text;
}

// The words of a delivery: what the broker and a consumer say to each other.
void add_delivery_terms(std::vector<GlossaryEntry>& out) {
  out.push_back(
      {"tag",
       {"delivery tag", "tags"},
       "the delivery tag: the number RabbitMQ gives each delivery on one channel, 1, 2, 3, ... "
       "The consumer acks or nacks a delivery by its tag. Each instance has its own channel, and "
       "a channel opened again after a closed connection counts from 1 again, so 'tag 1' appears "
       "for different messages on different lines: a tag means something only with its channel "
       "(the lane it is on, e.g. account-service#2's). What identifies a message is its message "
       "id (m-N), never its tag.",
       "every deliver, ack and nack line; 08-lost-ack (a new channel after the reset)"});
  out.push_back(
      {"m-N",
       {"message id", "messageid", "message-id", "id"},
       "a message id (MassTransit's MessageId, the id transfer-service's outbox stores): m-1, "
       "m-2, ... in the order the bank created them, from one counter both services share (a "
       "real system uses GUIDs). Every copy of a message (a redelivery, a republish, a duplicate) "
       "keeps its id, and that is what an inbox dedupes on. The numbers can skip: an id created "
       "inside a transaction that then rolled back (a crash, a fault) is not used again, and a "
       "relay with relay.stable_message_id = false creates a new id for each attempt.",
       "05-duplicate-by-hand (the same id), 17-unstable-message-id (a new id)"});
  out.push_back(
      {"ack",
       {"acked", "basic.ack"},
       "the consumer tells the broker 'done, delete it', naming the delivery by its tag. Until "
       "the ack arrives the broker keeps the message, and if the consumer's connection closes "
       "first it delivers the message again: that is why duplicates are normal.",
       "08-lost-ack, 09-crash-after-commit"});
  out.push_back(
      {"nack",
       {"nack (requeue)", "requeue", "basic.nack"},
       "the consumer tells the broker 'failed, give it back' (with requeue): the message goes "
       "back to its queue and is delivered again, marked redelivered. transfer-service's NestJS "
       "handler nacks every failure; MassTransit, once its retries are spent, moves a failed "
       "message to its _error queue instead (only a send cancelled by its timeout is nacked, "
       "scenario 57).",
       "40-poison-quorum-queue, 41-poison-classic-queue"});
  out.push_back(
      {"prefetch",
       {"broker.prefetch", "basic.qos"},
       "how many deliveries one consumer channel may hold unacked at once (broker.prefetch, 16 "
       "by default; RabbitMQ's basic.qos). Past that the broker waits for an ack before it "
       "delivers more to that channel; with several instances on one queue, prefetch room decides "
       "which instance gets the next message.",
       "the concurrent stories (30-36, 50)"});
  out.push_back(
      {"confirm",
       {"publisher confirm", "confirm lost"},
       "the broker's answer to a publish: the message is in its queues. A publisher whose channel "
       "closes before the confirm arrives cannot know whether the publish happened, and "
       "publishes again with the same message id (confirm LOST).",
       "16-lost-confirm, 42-publish-nacked (a nack is an answer, a lost confirm is none)"});
  out.push_back(
      {"redelivered",
       {"redelivery", "REDELIVERED"},
       "the broker hands out a message it handed out before (a nack, a closed connection); a "
       "copy published again is a new message and is not marked redelivered",
       "08-lost-ack, 09-crash-after-commit"});
  out.push_back(
      {"x-delivery-count",
       {"delivery count"},
       "the header a quorum queue adds to a redelivery: how many times the message was returned "
       "before this delivery ('REDELIVERED (x-delivery-count 2)' is the third delivery). Past "
       "broker.delivery_limit returns the message is dead-lettered or dropped. A classic queue "
       "sends no such header and counts nothing.",
       "40-poison-quorum-queue"});
  out.push_back(
      {"quorum queue",
       {"quorum"},
       "RabbitMQ's replicated queue type, the default here (broker.queue_type = quorum). It "
       "counts each return of a message (x-delivery-count), and once a message has been returned "
       "more than broker.delivery_limit times (20, RabbitMQ 4.0's default) it dead-letters it "
       "into <queue>.dlq when the queue has a dead-letter exchange (broker.dead_letter = dlx), or "
       "drops it when it has none.",
       "40-poison-quorum-queue, 53-poison-dropped-without-dlx"});
  out.push_back(
      {"classic queue",
       {"classic"},
       "RabbitMQ's original queue type (broker.queue_type = classic): no x-delivery-count and no "
       "delivery limit, so a message that keeps failing is delivered again for as long as it "
       "fails. On a classic queue the consumer has to count.",
       "41-poison-classic-queue"});
  out.push_back(
      {"heartbeat",
       {"broker.heartbeat_ms"},
       "the broker checks each connection every broker.heartbeat_ms; at the second check that "
       "saw nothing from it, it closes the connection and requeues its unacked deliveries, so a "
       "paused instance looks dead 2 to 3 intervals late.",
       "35-zombie-consumer, 54-heartbeat-window"});
}

// The services' words: the tables and the parts of the pattern.
void add_service_terms(std::vector<GlossaryEntry>& out) {
  out.push_back(
      {"inbox",
       {"inbox_state", "processed_messages", "idempotent consumer", "inbox document"},
       "the consumer's record of the messages it has handled, written in the same transaction "
       "as the business change, so that a copy of a handled message is recognised and acked "
       "without running the change again. account-service: MassTransit's inbox_state, keyed "
       "(message_id, consumer_id), or Marten's inbox document (account.inbox = marten); "
       "transfer-service: processed_messages, with a unique index on the message id.",
       "04-two-identical-deliveries, 05-duplicate-by-hand"});
  out.push_back(
      {"outbox",
       {"outbox row", "transactional outbox"},
       "the table a service writes the messages it will publish into, in the same transaction "
       "as its business change; they are sent after the commit (account-service: by MassTransit's "
       "passes; transfer-service: by the relay). A crash before the commit loses both the change "
       "and the message, a crash after it loses neither, and a crash after a send sends it again "
       "with the same id.",
       "11-outbox-sent-not-marked, 43-relay-dies-after-publish"});
  out.push_back(
      {"relay",
       {"outbox relay", "polling relay"},
       "transfer-service's outbox relay: a poller in each instance that reads the unsent outbox "
       "rows, publishes each to the broker and marks it sent once the broker confirms it. A "
       "crash between the publish and the mark, or a lost confirm, publishes the row again: with "
       "its stored message id (relay.stable_message_id = true), or as a new message with a new "
       "id (false). With several instances, relays that claim nothing publish one row twice "
       "with no fault at all; relay.claim = skip_locked makes a poll claim what it publishes.",
       "16-lost-confirm, 43-relay-dies-after-publish, 17-unstable-message-id, "
       "78-two-relays-one-row"});
  out.push_back(
      {"pass",
       {"passes", "masstransit pass", "masstransit's passes"},
       "MassTransit's EF inbox handles one delivery in several database transactions, each a "
       "'pass' that starts by locking the message's inbox_state row: pass 1 inserts the row "
       "(consumed null) and commits; pass 2 runs the consumer, sets consumed and writes its "
       "outgoing messages to the outbox; then one pass per outbox message sends it and saves "
       "last_sequence_number; a pass of its own sets delivered; the last removes the outbox rows. "
       "Five passes for a command with its one reply. A crash between two passes leaves the row "
       "saying how far it got, and the redelivery goes on from there; every pass after the first "
       "adds one to receive_count.",
       "10-crash-between-inbox-steps, 60-crash-after-send-pass, 32-masstransit-row-lock"});
  out.push_back({"crash point",
                 {"crash points", "crash"},
                 crash_points_meaning(),
                 "09-crash-after-commit, 10-crash-between-inbox-steps, 11-outbox-sent-not-marked"});
  out.push_back(
      {"ledger key",
       {"ledger index", "ledger_unique", "account.ledger_unique", "unique index"},
       "account-service's unique index on ledger (transfer_id, type): at most one DEBIT, one "
       "CREDIT and one REFUND per transfer. The second line of defence: a copy that gets past "
       "the inbox (a new id, a forgotten record) faults on it and rolls back.",
       "14-window-too-short, 17-unstable-message-id, 22-defence-no-account-inbox"});
  out.push_back(
      {"saga",
       {"state machine", "saga state"},
       "transfer-service's record of one transfer and its state machine: REQUESTED → DEBITED → "
       "COMPLETED, REQUESTED → REJECTED, DEBITED → COMPENSATING → FAILED. Each event moves it "
       "along one arrow and sends the next command; an event that fits no arrow is refused "
       "(transfer.state_machine).",
       "03-refund-closed-account, 24-defence-no-processed-messages"});
  out.push_back(
      {"seen-set",
       {"external seen-set", "redis", "redis set", "external-before", "external-after",
        "external-atomic", "set nx"},
       "a dedupe record kept outside the database's transaction (a Redis SET; account.inbox or "
       "transfer.dedupe = external-before or external-after). Check, mark and commit are separate "
       "steps, so a crash between them loses the work or repeats it, and two instances can both "
       "check 'not seen' before either marks. account.inbox = external-atomic checks and marks in "
       "one call (SET NX, SADD's reply): only one instance is told 'new', but a mark whose "
       "transaction rolls back still stays.",
       "12-redis-mark-before-commit, 13-redis-mark-after-commit, 36-redis-set-two-instances, "
       "69-redis-set-nx-two-instances, 70-redis-set-nx-mark-rolled-back"});
  out.push_back(
      {"instance",
       {"account-service#2", "transfer-service#2", "#2", "lane"},
       "one process of a service (account.instances, transfer.instances): account-service#2 is "
       "the second. Each has its own broker connection and channel, crashes, pauses and restarts "
       "alone, and shares its service's one database with the others. Each is a lane of the "
       "narration and of the HTML report.",
       "30-marten-backstop, 33-masstransit-concurrent-first-delivery"});
  out.push_back(
      {"row lock",
       {"lock", "waits for the row lock", "got the row lock"},
       "each MassTransit pass starts by locking its message's inbox_state row; an instance with a "
       "copy of the same message waits until the holder commits, then reads what it did.",
       "32-masstransit-row-lock, 59-postgres-lock-wait-fails"});
  out.push_back(
      {"zombie consumer",
       {"zombie", "ack on a closed channel"},
       "an instance the broker gave up on (its connection closed while it was paused) that wakes "
       "up and carries on: its work may be done twice, and its ack goes to a closed channel and "
       "is ignored. A MassTransit consumer is cancelled instead.",
       "35-zombie-consumer, 58-masstransit-cancels-zombie"});
}

// The fault paths: where a message goes when its handler fails, and who brings it back.
void add_fault_terms(std::vector<GlossaryEntry>& out) {
  out.push_back(
      {"fault",
       {"FAULT", "consumer fault"},
       "a handler threw (a unique index refused a row, the database was busy): its transaction "
       "rolls back. transfer-service then nacks the message; account-service retries it "
       "(account.retry) and then moves it to its _error queue.",
       "14-window-too-short, 39-retry-absorbs-transient"});
  out.push_back(
      {"retry",
       {"↺ RETRY", "account.retry", "UseMessageRetry"},
       "MassTransit's UseMessageRetry (account.retry): the consumer is run again in the same "
       "process on the same delivery, without going back to the broker; none by default.",
       "39-retry-absorbs-transient, 55-consumer-timeout"});
  out.push_back(
      {"_error queue",
       {"_error", "error queue", "account-service_error", "⚠ ERROR QUEUE"},
       "MassTransit's error queue, account-service_error: a message whose consumer still faults "
       "after its retries is moved there and acked (MassTransit does not requeue it). It waits "
       "for an operator to redrive it. The consumer's doing, not the broker's.",
       "14-window-too-short, 37-error-queue-hazard, 38-redrive-heals"});
  out.push_back(
      {".dlq",
       {"dlq", "dead-letter queue", "dead-lettered", "☠ DEAD-LETTERED", "dlx", "dead letter"},
       "a dead-letter queue, <queue>.dlq (transfer-service.dlq, ...): where a quorum queue puts "
       "a message returned more than broker.delivery_limit times, when the queue has a "
       "dead-letter exchange (broker.dead_letter = dlx). The broker's doing, not the consumer's; "
       "without a dead-letter exchange the message is dropped instead.",
       "40-poison-quorum-queue, 53-poison-dropped-without-dlx"});
  out.push_back(
      {"redrive",
       {"REDRIVE", "replay"},
       "an operator moves every message of an error or dead-letter queue back to its queue, with "
       "the same message ids, as new messages (not marked redelivered, a fresh count toward the "
       "delivery limit). A replay is a duplicate too.",
       "38-redrive-heals, 47-late-error-queue-replay"});
  out.push_back(
      {"poison message",
       {"poison"},
       "a message whose handler fails every time. Nacked, it comes back for ever unless something "
       "counts: a quorum queue's delivery limit, or a consumer that gives up and parks it.",
       "40-poison-quorum-queue, 41-poison-classic-queue"});
  out.push_back(
      {"dedupe hit",
       {"dedupe", "acked without effect"},
       "a delivery that a dedupe mechanism (inbox, processed_messages, seen-set, ledger key with "
       "ledger_conflict = ack) acked without running the business change again",
       "04-two-identical-deliveries"});
  out.push_back(
      {"in flight",
       {"money in flight"},
       "money that has left one account and not yet reached the other: a transfer whose DEBIT "
       "is applied and whose CREDIT (or REFUND) is not yet",
       "29-late-duplicate-after-rejection (stuck in flight)"});
  out.push_back({"quiescent",
                 {"quiescence", "run until quiescent"},
                 "nothing left to happen: no message on the way, no handler running, no outbox row "
                 "unsent, no timer due (\"run until quiescent\" runs until then)",
                 ""});
  out.push_back(
      {"↳",
       {"deciding line", "why-line"},
       "a deciding line: why the next thing happens (an inbox row found with consumed null after "
       "a crash, an id minted anew by the relay).",
       "10-crash-between-inbox-steps, 17-unstable-message-id"});
}

// The explorer's words (`inboxsim explore`, lessons 50, 52 and 77).
void add_explorer_terms(std::vector<GlossaryEntry>& out) {
  out.push_back(
      {"proven",
       {"PROVEN", "proof", "explore"},
       "`inboxsim explore` ran every order of the story's events (and every placement of up to "
       "K faults of the kinds asked for) and none broke an invariant. A proof of this story and "
       "these faults only: another story, or one fault more, is another search.",
       "50-explorer-proves-the-key, 52-explorer-two-faults, 77-explorer-two-transfers"});
  out.push_back(
      {"counterexample",
       {"BROKEN", "choices", "choice"},
       "an order of events the explorer found that breaks an invariant, the shortest it could "
       "find, counted in choices (each choice: which of the events that could happen next "
       "happens). It is written as a scenario file with a schedule, which `inboxsim run` replays.",
       "50-explorer-proves-the-key with --set account.ledger_unique=false"});
}

// The invariants, from the legend's table (report/legend.h).
void add_invariant_terms(std::vector<GlossaryEntry>& out) {
  for (size_t i = 0; i < kInvariantCount; ++i) {
    const auto invariant = static_cast<Invariant>(i);
    out.push_back({std::string(invariant_name(invariant)),
                   {},
                   "an invariant: " + std::string(invariant_meaning(invariant)),
                   ""});
  }
}

// Wolverine's store-and-ack inbox, in the words its narration uses.
void add_durable_inbox_terms(std::vector<GlossaryEntry>& out) {
  out.push_back(
      {"durable inbox",
       {"wolverine", "stored", "incoming", "handled", "durability agent",
        "wolverine_incoming_envelopes", "recovered", "node"},
       "Wolverine's store-and-ack inbox (account.inbox = wolverine): the listener stores the "
       "envelope in wolverine_incoming_envelopes (status Incoming, owner = its node) and acks the "
       "broker at once; the handler runs from the table and marks it Handled in its "
       "transaction, kept account.keep_after_handling_ms for dedupe; a copy of a stored id is "
       "acked and dropped. Every process start is a new node. A durability agent on each node "
       "polls every account.durability_poll_ms and recovers the Incoming envelopes of nodes that "
       "are gone (down, restarted, or paused past the stale-node timeout): after the ack it, not "
       "the broker, makes the second attempt.",
       "71-wolverine-crash-after-ack, 72-wolverine-agent-races-handler, "
       "73-wolverine-stranded-envelope"});
}

// NATS JetStream's words (broker.kind = jetstream), as its broker lines use them.
void add_jetstream_terms(std::vector<GlossaryEntry>& out) {
  out.push_back(
      {"ack wait",
       {"AckWait", "broker.ack_wait_ms", "jetstream", "stream", "redelivery by timer"},
       "JetStream's rule for a delivery nobody acked (broker.kind = jetstream): once its ack "
       "wait (broker.ack_wait_ms, 30 s by default) runs out, the message goes to whichever client "
       "of the consumer pulls next, while the first may still be handling it. No fault is "
       "needed: a slow handler is enough. A late ack from the first holder still settles it. "
       "Past broker.max_deliver deliveries it is delivered no more, with no dead-letter queue.",
       "74-jetstream-slow-consumer"});
  out.push_back(
      {"in progress",
       {"+WPI", "InProgress", "natsMsg_InProgress", "consumer.in_progress"},
       "a JetStream client's reply on a delivery's ack subject that says it is still working on "
       "it (consumer.in_progress): the server starts the delivery's ack wait again. A handler "
       "that sends it before each step keeps its delivery however long it takes in all, as "
       "long as no single silence outlasts the ack wait; a crash still makes a copy.",
       "76-jetstream-in-progress"});
  out.push_back(
      {"dedupe window",
       {"Duplicates window", "Duplicates", "Nats-Msg-Id", "broker.dedupe_window_ms"},
       "a JetStream stream's memory of the message ids it stored (broker.dedupe_window_ms, 2 min "
       "by default, counted from the first publication): a publish with an id it remembers is "
       "not stored, and its publish ack says duplicate. After the window the same id is a new "
       "message, delivered again from the start: the broker's window is not an inbox.",
       "75-jetstream-dedupe-window"});
}

std::vector<GlossaryEntry> make_glossary() {
  std::vector<GlossaryEntry> entries;
  add_delivery_terms(entries);
  add_jetstream_terms(entries);
  add_service_terms(entries);
  add_durable_inbox_terms(entries);
  add_fault_terms(entries);
  add_explorer_terms(entries);
  add_invariant_terms(entries);
  return entries;
}

// "  Delivery Tag " → "delivery tag"; "_" and "-" alike, so single-effect finds single_effect.
std::string normalized(std::string_view name) {
  const size_t first = name.find_first_not_of(' ');
  if (first == std::string_view::npos) return {};
  name = name.substr(first, name.find_last_not_of(' ') - first + 1);
  std::string out;
  for (const char c : name) {
    out += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// `text` wrapped at `width` columns, each line starting with `indent`.
std::string wrapped(std::string_view text, std::string_view indent, size_t width) {
  std::string out;
  std::string line(indent);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    if (line.size() > indent.size() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = std::string(indent);
    }
    if (line.size() > indent.size()) line += ' ';
    line += word;
    start = end + 1;
  }
  if (line.size() > indent.size()) out += line + "\n";
  return out;
}

}  // namespace

const std::vector<GlossaryEntry>& glossary() {
  static const std::vector<GlossaryEntry> entries = make_glossary();
  return entries;
}

const GlossaryEntry* find_glossary_entry(std::string_view name) {
  const std::string wanted = normalized(name);
  if (wanted.empty()) return nullptr;
  for (const GlossaryEntry& entry : glossary()) {
    if (normalized(entry.term) == wanted) return &entry;
  }
  // An alias only when no term is spelt so: "crash" is an alias of "crash point".
  for (const GlossaryEntry& entry : glossary()) {
    for (const std::string& alias : entry.aliases) {
      if (normalized(alias) == wanted) return &entry;
    }
  }
  return nullptr;
}

std::string glossary_terms_text() {
  std::string text;
  for (const GlossaryEntry& entry : glossary()) {
    text += (text.empty() ? "" : ", ") + entry.term;
  }
  return text;
}

std::string glossary_entry_text(const GlossaryEntry& entry) {
  constexpr size_t kWidth = 78;
  std::string text = entry.term;
  if (!entry.aliases.empty()) {
    text += " (also:";
    for (size_t i = 0; i < entry.aliases.size(); ++i) {
      text += (i == 0 ? " " : ", ") + entry.aliases[i];
    }
    text += ")";
  }
  text += "\n" + wrapped(entry.meaning, "  ", kWidth);
  if (!entry.where.empty()) text += wrapped("see: " + entry.where, "  ", kWidth);
  return text;
}

std::string glossary_text() {
  std::string text;
  for (const GlossaryEntry& entry : glossary()) {
    text += (text.empty() ? "" : "\n") + glossary_entry_text(entry);
  }
  return text;
}

std::string glossary_anchor(const GlossaryEntry& entry) {
  std::string anchor = "glossary-";
  for (const char c : normalized(entry.term)) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) != 0;
    anchor += keep ? c : '-';
  }
  return anchor;
}

std::string glossary_html() {
  std::string html =
      "<details class=\"glossary\"><summary>Glossary: the words of the narration and of this "
      "page (tag, m-N, MassTransit's passes, crash points, …)</summary><dl>";
  for (const GlossaryEntry& entry : glossary()) {
    html += "<dt id=\"" + glossary_anchor(entry) + "\">" + escape_html(entry.term) + "</dt><dd>" +
            escape_html(entry.meaning);
    if (!entry.where.empty())
      html += " <span class=\"see\">See: " + escape_html(entry.where) + "</span>";
    html += "</dd>";
  }
  return html + "</dl></details>\n";
}

}  // namespace inboxsim
