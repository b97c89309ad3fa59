// The JetStream model must behave as nats-server 2.9 does where an inbox depends on it:
// redelivery by AckWait to whoever pulls next, the late ack that settles a redelivered message,
// MaxDeliver, nak with and without a delay, term, in_progress, MaxAckPending, and publish
// deduplication by Nats-Msg-Id within the stream's window (docs/model.md, "JetStream").
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "broker/jetstream/jetstream.h"
#include "services/host.h"
#include "support/messages.h"

using namespace inboxsim;
using inboxsim::testing::message;

namespace {

constexpr int64_t kAckWaitMs = 1'000;
constexpr int64_t kWindowMs = 5'000;

struct Fixture {
  explicit Fixture(int64_t max_deliver = -1, int64_t max_ack_pending = 1'000) {
    std::string error;
    stream = *js.add_stream({"account-service", {"transfers.>"}, kWindowMs}, error);
    JetStreamConsumerConfig config;
    config.durable = "account-service";
    config.ack_wait_ms = kAckWaitMs;
    config.max_deliver = max_deliver;
    config.max_ack_pending = max_ack_pending;
    consumer = *js.add_consumer(stream, config, error);
  }

  JetStreamPubAck publish(const std::string& id, int64_t now_ms) {
    return *js.publish("transfers.transfer.requested", message(id), id, now_ms);
  }

  std::vector<std::string> fetch(int64_t batch, int64_t now_ms) {
    last = js.fetch(consumer, batch, now_ms);
    std::vector<std::string> out;
    for (const JetStreamDelivery& delivery : last) {
      out.push_back(delivery.message->message_id +
                    " stream=" + std::to_string(delivery.stream_sequence) +
                    " consumer=" + std::to_string(delivery.consumer_sequence) +
                    " delivered=" + std::to_string(delivery.delivery_count));
    }
    return out;
  }

  JetStream js;
  size_t stream = 0;
  size_t consumer = 0;
  std::vector<JetStreamDelivery> last;
};

using Lines = std::vector<std::string>;

}  // namespace

TEST_CASE("NATS subjects match token by token, with * and >", "[jetstream]") {
  REQUIRE(nats_subject_matches("transfers.>", "transfers.transfer.requested"));
  REQUIRE_FALSE(nats_subject_matches("transfers.>", "transfers"));
  REQUIRE(nats_subject_matches("accounts.*.debited", "accounts.account.debited"));
  REQUIRE_FALSE(nats_subject_matches("accounts.*", "accounts.account.debited"));
  REQUIRE(nats_subjects_overlap("accounts.>", "accounts.account.credited"));
  REQUIRE(nats_subjects_overlap("accounts.*.credited", "accounts.account.*"));
  REQUIRE_FALSE(nats_subjects_overlap("accounts.>", "transfers.>"));
  REQUIRE_FALSE(nats_subjects_overlap("accounts.a", "accounts.a.b"));
}

TEST_CASE("two streams may not share a subject, and the window is at least 100 ms", "[jetstream]") {
  JetStream js;
  std::string error;
  REQUIRE(js.add_stream({"transfer-service", {"accounts.>"}, kWindowMs}, error));
  REQUIRE_FALSE(js.add_stream({"notifications", {"accounts.account.credited"}, kWindowMs}, error));
  REQUIRE(error.find("subjects overlap with an existing stream") != std::string::npos);
  REQUIRE_FALSE(js.add_stream({"short", {"other.>"}, 99}, error));
  REQUIRE(error == "duplicates window needs to be >= 100ms");
  REQUIRE_FALSE(js.add_stream({"a.b", {"other.>"}, kWindowMs}, error));
  REQUIRE_FALSE(js.publish("nobody.listens", message("m1"), "m1", 0));
}

TEST_CASE("a delivery carries stream and consumer sequences and its delivery count",
          "[jetstream]") {
  Fixture f;
  REQUIRE(f.publish("m1", 0).sequence == 1);
  REQUIRE(f.publish("m2", 0).sequence == 2);
  REQUIRE(f.fetch(10, 1) ==
          Lines{"m1 stream=1 consumer=1 delivered=1", "m2 stream=2 consumer=2 delivered=1"});
  REQUIRE(f.last[0].pending == 1);
  REQUIRE(f.last[1].pending == 0);
  REQUIRE(f.js.info(f.consumer).num_ack_pending == 2);
}

TEST_CASE("a delivery not acked within AckWait goes to the next fetch, counted", "[jetstream]") {
  Fixture f;
  f.publish("m1", 0);
  REQUIRE(f.fetch(1, 0).size() == 1);
  const JetStreamDelivery first = f.last[0];
  REQUIRE(f.fetch(1, kAckWaitMs - 1).empty());  // still the first holder's
  REQUIRE(f.js.next_due_ms() == kAckWaitMs);
  REQUIRE(f.fetch(1, kAckWaitMs) == Lines{"m1 stream=1 consumer=2 delivered=2"});
  const JetStreamDelivery second = f.last[0];
  // The first holder's late ack names the message by its stream sequence: it settles it, and
  // the second holder's ack finds nothing left to settle.
  REQUIRE(f.js.ack(first, kAckWaitMs + 10));
  REQUIRE_FALSE(f.js.ack(second, kAckWaitMs + 20));
  REQUIRE(f.fetch(1, 5 * kAckWaitMs).empty());
  REQUIRE(f.js.info(f.consumer).num_ack_pending == 0);
}

TEST_CASE("redeliveries come before new messages, in stream order", "[jetstream]") {
  Fixture f;
  f.publish("m1", 0);
  f.publish("m2", 0);
  f.fetch(2, 0);
  f.publish("m3", 10);
  REQUIRE(f.fetch(3, kAckWaitMs) == Lines{"m1 stream=1 consumer=3 delivered=2",
                                          "m2 stream=2 consumer=4 delivered=2",
                                          "m3 stream=3 consumer=5 delivered=1"});
}

TEST_CASE("past MaxDeliver a message is dropped from the consumer with an advisory, once",
          "[jetstream]") {
  Fixture f(/*max_deliver=*/2);
  f.publish("m1", 0);
  REQUIRE(f.fetch(1, 0).size() == 1);
  REQUIRE(f.fetch(1, kAckWaitMs) == Lines{"m1 stream=1 consumer=2 delivered=2"});
  // Expired again: the server only finds out at the next pull, and then delivers nothing.
  REQUIRE(f.js.info(f.consumer).num_ack_pending == 1);
  REQUIRE(f.fetch(1, 2 * kAckWaitMs).empty());
  const std::vector<JetStreamAdvisory> advisories = f.js.take_advisories();
  REQUIRE(advisories.size() == 1);
  REQUIRE(advisories[0].kind == JetStreamAdvisoryKind::max_deliveries);
  REQUIRE(advisories[0].stream_sequence == 1);
  REQUIRE(advisories[0].deliveries == 2);
  REQUIRE(f.js.info(f.consumer).num_ack_pending == 0);
  REQUIRE(f.fetch(1, 10 * kAckWaitMs).empty());
  REQUIRE(f.js.take_advisories().empty());
  f.publish("m2", 10 * kAckWaitMs);  // the stream kept m1: m2 is its second message
  REQUIRE(f.fetch(1, 10 * kAckWaitMs) == Lines{"m2 stream=2 consumer=3 delivered=1"});
}

TEST_CASE("nak redelivers at once, nak with a delay not before it", "[jetstream]") {
  Fixture f;
  f.publish("m1", 0);
  f.fetch(1, 0);
  REQUIRE(f.js.nak(f.last[0], 0, 10));
  REQUIRE(f.fetch(1, 10) == Lines{"m1 stream=1 consumer=2 delivered=2"});
  REQUIRE(f.js.nak(f.last[0], /*delay_ms=*/300, 20));
  REQUIRE(f.fetch(1, 319).empty());
  REQUIRE(f.fetch(1, 320) == Lines{"m1 stream=1 consumer=3 delivered=3"});
  // A delay longer than AckWait holds the message that long too.
  REQUIRE(f.js.nak(f.last[0], 3 * kAckWaitMs, 400));
  REQUIRE(f.fetch(1, 400 + 3 * kAckWaitMs - 1).empty());
  REQUIRE(f.fetch(1, 400 + 3 * kAckWaitMs).size() == 1);
  std::vector<JetStreamAdvisory> advisories = f.js.take_advisories();
  REQUIRE(advisories.size() == 3);
  REQUIRE(advisories[0].kind == JetStreamAdvisoryKind::nak);
  // A nak for a message no longer pending does nothing.
  REQUIRE(f.js.ack(f.last[0], 5'000));
  REQUIRE_FALSE(f.js.nak(f.last[0], 0, 5'001));
  REQUIRE(f.fetch(1, 5'002).empty());
}

TEST_CASE("term settles without redelivery, and says so in an advisory", "[jetstream]") {
  Fixture f;
  f.publish("m1", 0);
  f.fetch(1, 0);
  REQUIRE(f.js.term(f.last[0], 5));
  REQUIRE(f.fetch(1, 10 * kAckWaitMs).empty());
  const std::vector<JetStreamAdvisory> advisories = f.js.take_advisories();
  REQUIRE(advisories.size() == 1);
  REQUIRE(advisories[0].kind == JetStreamAdvisoryKind::terminated);
  REQUIRE(advisories[0].deliveries == 1);
}

TEST_CASE("in_progress starts AckWait over from now", "[jetstream]") {
  Fixture f;
  f.publish("m1", 0);
  f.fetch(1, 0);
  REQUIRE(f.js.in_progress(f.last[0], 800));
  REQUIRE(f.js.in_progress(f.last[0], 1'600));
  REQUIRE(f.fetch(1, 2'599).empty());
  REQUIRE(f.fetch(1, 2'600) == Lines{"m1 stream=1 consumer=2 delivered=2"});
}

TEST_CASE("in_progress after the expiry does not take back the queued redelivery", "[jetstream]") {
  Fixture f;
  f.publish("m1", 0);
  f.fetch(1, 0);
  REQUIRE(f.js.in_progress(f.last[0], kAckWaitMs + 5));
  REQUIRE(f.fetch(1, kAckWaitMs + 6).size() == 1);
}

TEST_CASE("MaxAckPending caps the consumer's unacked deliveries, all clients together",
          "[jetstream]") {
  Fixture f(/*max_deliver=*/-1, /*max_ack_pending=*/2);
  for (const char* id : {"m1", "m2", "m3"}) f.publish(id, 0);
  REQUIRE(f.fetch(10, 1).size() == 2);
  const JetStreamDelivery m1 = f.last[0];
  REQUIRE(f.fetch(10, 2).empty());  // another client pulls: nothing new
  REQUIRE(f.js.ack(m1, 3));
  REQUIRE(f.fetch(10, 4) == Lines{"m3 stream=3 consumer=3 delivered=1"});
  // Redeliveries are pending already: the cap does not hold them back.
  REQUIRE(f.fetch(10, 4 + kAckWaitMs) ==
          Lines{"m2 stream=2 consumer=4 delivered=2", "m3 stream=3 consumer=5 delivered=2"});
}

TEST_CASE("a Nats-Msg-Id seen within the window is a duplicate, counted from the first",
          "[jetstream]") {
  Fixture f;
  REQUIRE_FALSE(f.publish("m1", 0).duplicate);
  const JetStreamPubAck again = f.publish("m1", 3'000);
  REQUIRE(again.duplicate);
  REQUIRE(again.sequence == 1);
  // The duplicate at 3 s did not restart the window: at 5 s the id is forgotten.
  REQUIRE(f.publish("m1", kWindowMs - 1).duplicate);
  REQUIRE(f.js.next_due_ms() == kWindowMs);
  const JetStreamPubAck after = f.publish("m1", kWindowMs);
  REQUIRE_FALSE(after.duplicate);
  REQUIRE(after.sequence == 2);
  // The consumer gets both stored copies: the window is not an inbox.
  REQUIRE(f.fetch(10, kWindowMs) ==
          Lines{"m1 stream=1 consumer=1 delivered=1", "m1 stream=2 consumer=2 delivered=1"});
  // A publication without an id is never a duplicate.
  REQUIRE_FALSE(
      f.js.publish("transfers.transfer.requested", message("m1"), "", kWindowMs)->duplicate);
}

TEST_CASE("a filtered consumer delivers only its subjects", "[jetstream]") {
  JetStream js;
  std::string error;
  const size_t stream = *js.add_stream({"transfer-service", {"accounts.>"}, kWindowMs}, error);
  JetStreamConsumerConfig config;
  config.durable = "notifications";
  config.filter_subject = "accounts.account.credited";
  const size_t consumer = *js.add_consumer(stream, config, error);
  js.publish("accounts.account.debited", message("d1"), "d1", 0);
  js.publish("accounts.account.credited", message("c1"), "c1", 0);
  const std::vector<JetStreamDelivery> got = js.fetch(consumer, 10, 1);
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].message->message_id == "c1");
  REQUIRE(got[0].stream_sequence == 2);
  REQUIRE_FALSE(js.add_consumer(stream, config, error));  // the same durable twice
}

TEST_CASE("the model reads no clock: the same calls give the same deliveries", "[jetstream]") {
  const auto run = [] {
    Fixture f(/*max_deliver=*/3, /*max_ack_pending=*/2);
    std::vector<std::string> seen;
    for (int64_t step = 0; step < 40; ++step) {
      const int64_t now = step * 300;
      if (step % 3 == 0) f.publish("m" + std::to_string(step % 7), now);
      for (const std::string& line : f.fetch(2, now)) seen.push_back(line);
      if (step % 4 == 0 && !f.last.empty()) f.js.ack(f.last[0], now);
    }
    return seen;
  };
  REQUIRE(run() == run());
  REQUIRE(run().size() > 10);
}
