#!/usr/bin/env python3
"""The playground's JSON API over a real socket (docs/playground.md).

Starts `inboxsim play --port 0`, reads the URL from its first line, and drives the API as a
script would: only by following the schedules the server hands back, never by building one.
One part per ctest name (argv[3]); each ends the server with Ctrl-C and checks it exits 0.

Usage: play_api_test.py INBOXSIM SCENARIO_DIR PART
"""
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

BINARY, SCENARIOS, PART = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []
passes = []


def check(what, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else ": " + str(detail)[:400]))
    (passes if ok else failures).append(what)


class Server:
    def __init__(self, *args):
        self.process = subprocess.Popen([BINARY, "play", "--port", "0", *args],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline().strip()
        if not line.startswith("http://"):
            self.process.kill()
            raise SystemExit("no URL on the first line of stdout: %r %s" %
                             (line, self.process.stderr.read()))
        self.url = urllib.parse.urlparse(line)
        self.token = urllib.parse.parse_qs(self.url.query).get("token", [""])[0]

    def request(self, method, path, body=None, headers=None, raw=None):
        connection = http.client.HTTPConnection(self.url.hostname, self.url.port, timeout=120)
        sent = {"Host": self.url.netloc, "Content-Type": "application/json"}
        if self.token:
            sent["X-Inboxsim-Token"] = self.token
        sent.update(headers or {})
        data = raw if raw is not None else (None if body is None else json.dumps(body))
        connection.request(method, path, body=data, headers=sent)
        response = connection.getresponse()
        text = response.read().decode()
        connection.close()
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text

    def post(self, path, body):
        status, reply = self.request("POST", path, body)
        if status != 200:
            raise SystemExit("%s %s -> %s %s" % (path, json.dumps(body)[:200], status, reply))
        return reply

    def stop(self):
        self.process.send_signal(signal.SIGINT)
        try:
            code = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = "hung"
        check("Ctrl-C stops the server cleanly (exit 0)", code == 0, code)


def replay(server, name, schedule=None, then=None):
    body = {"name": name}
    if schedule is not None:
        body["schedule"] = schedule
    if then is not None:
        body["then"] = then
    return server.post("/api/replay", body)


def trace_kinds(moment):
    return [event["kind"] for event in moment["report"]["data"]["events"]]


def part_walk(server):
    # Take events one by one, the first one offered each time, to the end of the happy path.
    moment = replay(server, "01-happy-path")
    check("a story opens at its start with something to do", len(moment["enabled"]) >= 1)
    taken = 0
    labels = []
    while moment["enabled"] and taken < 500:
        labels += [event["label"] for event in moment["enabled"]]
        moment = replay(server, "01-happy-path", moment["enabled"][0]["schedule"])
        taken += 1
    # A handler's next step is offered under the real system's name for it.
    # Its consume pass is one event, the lock's grant with the work (docs/model.md).
    check("MassTransit's consume pass is a choice of its own",
          any(label.endswith("MassTransit pass 2: find the inbox row (SELECT ... FOR UPDATE), "
                             "then consume (the consumer runs), commit")
              for label in labels), labels[:20])
    steps = [label for label in labels if ", handling " in label]
    check("every handler step says what it does next",
          steps and all(label.split("): ", 1)[-1].strip() for label in steps), steps[:5])
    check("the happy path ends", moment["verdict"]["ended"], moment["verdict"])
    check("every invariant holds at its end", moment["verdict"]["passed"] is True,
          moment["verdict"]["violations"])
    check("the balances are the story's", moment["now"]["balances"] == {"alice": 7500, "bob": 2500},
          moment["now"]["balances"])
    check("the saga completed", moment["now"]["sagas"] == {"t1": "COMPLETED"}, moment["now"]["sagas"])
    check("one move per event taken", len(moment["moves"]) == taken, (len(moment["moves"]), taken))
    # The same moment by "run on" gives the same schedule: the default order is option 0.
    ran = replay(server, "01-happy-path", then={"run_on": "quiescent"})
    check("run on until quiescent reaches the same moment", ran["schedule"] == moment["schedule"])
    # The saved file replays in `inboxsim run` to the same trace as the playground shows.
    saved = server.post("/api/scenario", {"name": "01-happy-path", "schedule": moment["schedule"]})
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "saved.json")
        with open(path, "w") as out:
            json.dump(saved, out)
        trace = os.path.join(work, "trace.jsonl")
        run = subprocess.run([BINARY, "run", path, "--quiet", "--trace", trace], capture_output=True,
                             text=True)
        check("inboxsim run replays the saved file and passes", run.returncode == 0, run.stderr)
        with open(trace) as lines:
            kinds = [json.loads(line)["kind"] for line in lines]
        check("... with the events the playground showed", kinds == trace_kinds(moment),
              (len(kinds), len(trace_kinds(moment))))
        reopened = subprocess.Popen([BINARY, "play", "--port", "0", path], stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True)
        url = urllib.parse.urlparse(reopened.stdout.readline().strip())
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        connection.request("GET", "/api/library", headers={"Host": url.netloc})
        library = json.loads(connection.getresponse().read())
        reopened.send_signal(signal.SIGINT)
        reopened.wait(timeout=10)
        check("inboxsim play FILE reopens a saved file", library["default"] == saved["name"], library)
    # A link holds the moment: the same request gives the same answer, byte for byte.
    again = replay(server, "01-happy-path", moment["moves"][10]["schedule"])
    twice = replay(server, "01-happy-path", moment["moves"][10]["schedule"])
    check("a moment replays identically", again == twice)
    # A JetStream story with work time plays with its clock; its broker's timer is an event
    # like any other (taken whenever offered), and "can it still break?" is refused, saying why.
    name = "74-jetstream-slow-consumer"
    moment = replay(server, name)
    offered = 0
    taken = 0
    while moment["enabled"] and taken < 500:
        timer = [event for event in moment["enabled"] if event["kind"] == "ack_wait_expiry"]
        offered += len(timer)
        moment = replay(server, name, (timer or moment["enabled"])[0]["schedule"])
        taken += 1
    check("a JetStream story offers its ack wait running out", offered > 0, taken)
    check("... and ends correct, whenever it is taken", moment["verdict"]["ended"] and
          moment["verdict"]["passed"] is True, moment["verdict"])
    status, reply = server.request("POST", "/api/explore", {"name": name, "faults": 0})
    check("the explorer refuses a JetStream story with work time, saying why",
          status == 400 and "consumer.work_ms" in reply.get("error", ""), (status, reply))
    # Without work time it plays with no clock: an ack wait running out is a choice, and the
    # explorer proves it from the start (one rejected transfer, one expiry in the order).
    story = {"name": "js", "seed": 1,
             "config": {"broker.kind": "jetstream", "account.instances": 2},
             "accounts": {"alice": 1000, "bob": 0},
             "steps": [{"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
                       {"run": {"until": "quiescent"}}],
             "expect": {"transfers": {"t1": "REJECTED"}}}
    moment = server.post("/api/replay", {"scenario": story})
    offered = False
    for _ in range(50):
        if any(event["kind"] == "ack_wait_expiry" for event in moment["enabled"]):
            offered = True
            break
        if not moment["enabled"]:
            break
        moment = server.post("/api/replay", {"scenario": story,
                                             "schedule": moment["enabled"][0]["schedule"]})
    check("a JetStream story without a clock offers its ack wait running out", offered)
    # The budget is generous (about 4,000 states: 2 s here, 12 s under the sanitizers), so the
    # verdict is the search's, not the machine's speed.
    status, reply = server.request("POST", "/api/explore", {"scenario": story, "faults": 0,
                                                            "max_states": 200000, "seconds": 60})
    check("... and the explorer proves it, with its bound of expiries",
          status == 200 and reply.get("verdict") == "PROVEN"
          and "ack-wait" in reply.get("said", ""),
          (status, reply))


def fault_on(moment, kind, label_part):
    for event in moment["enabled"]:
        for fault in event["faults"]:
            if fault["kind"] == kind and label_part in fault["label"]:
                return fault
    return None


def part_crash(server):
    # Crash account-service after its commit of the debit: the redelivery is a dedupe hit.
    name = "01-happy-path"
    moment = replay(server, name)
    crash = None
    for _ in range(200):
        crash = fault_on(moment, "crash", "after_commit")
        if crash and "Transfer.Requested" in crash["label"]:
            break
        crash = None
        moment = replay(server, name, moment["enabled"][0]["schedule"])
    check("a crash after the commit is offered", crash is not None)
    crashed = replay(server, name, crash["schedule"])
    check("the crash is in the trace", "crash" in trace_kinds(crashed))
    check("the move says a fault struck", crashed["moves"][-1]["kind"] == "fault", crashed["moves"][-1])
    before = replay(server, name, crashed["moves"][-1]["schedule"])
    check("stepping back returns to the moment before the crash",
          before["schedule"] == moment["schedule"])
    # Fork: from the same moment take the event without the crash; both branches end well.
    plain = None
    for event in moment["enabled"]:
        if crash in event["faults"]:
            plain = event
    forked = replay(server, name, plain["schedule"], {"run_on": "quiescent"})
    check("the fork without the crash ends without a redelivery",
          "dedupe_hit" not in trace_kinds(forked) and forked["verdict"]["passed"])
    ended = replay(server, name, crashed["schedule"], {"run_on": "quiescent"})
    kinds = trace_kinds(ended)
    check("after the crash the message is delivered again", kinds.count("deliver") > 4, kinds)
    check("... and the inbox dedupes it", "dedupe_hit" in kinds, kinds)
    check("... and every invariant holds", ended["verdict"]["passed"] is True, ended["verdict"])
    # A hand action: publish the debit again with its own id (a duplicate by hand).
    template = [t for t in ended["hand"]["publish_templates"]
                if t["body"]["type"] == "Transfer.Requested"][0]
    published = replay(server, name, ended["schedule"], {"publish": template})
    published = replay(server, name, published["schedule"], {"run_on": "quiescent"})
    check("a message published by hand is deduped too", trace_kinds(published).count("dedupe_hit") >= 2)
    check("... and changes no balance", published["now"]["balances"] == {"alice": 7500, "bob": 2500})
    # Drop the inbox's key and publish it once more: still caught (the lookup scans).
    dropped = replay(server, name, published["schedule"], {"drop_index": "account.inbox_state"})
    check("a dropped index shows as dropped",
          {"name": "account.inbox_state", "dropped": True} in dropped["now"]["indexes"])
    restored = replay(server, name, dropped["schedule"], {"restore_index": "account.inbox_state"})
    check("restore_index puts it back",
          {"name": "account.inbox_state", "dropped": False} in restored["now"]["indexes"])


def part_explore(server):
    # Two deliveries in (about 700 states; from the first delivery it takes about 27,000, more
    # than 60 s under the sanitizers): every order from here, with one more duplicate.
    moment = replay(server, "01-happy-path")
    first = replay(server, "01-happy-path", moment["enabled"][0]["schedule"], {"run_on": "delivery"})
    middle = replay(server, "01-happy-path", first["schedule"], {"run_on": "delivery"})
    proven = server.post("/api/explore", {"name": "01-happy-path", "schedule": middle["schedule"],
                                          "faults": 1, "fault_kinds": ["duplicate"],
                                          "max_states": 200000, "seconds": 60})
    check("the default bank is proven from a moment", proven["verdict"] == "PROVEN", proven)
    # With the defences off (27's bank, without its scripted duplicates), one duplicate breaks
    # it: the continuation is a branch that replays.
    with open(os.path.join(SCENARIOS, "27-defence-all-off.json")) as source:
        bank = json.load(source)
    bank["steps"] = [step for step in bank["steps"] if "fault" not in step]
    bank.pop("expect", None)
    story = {"scenario": bank}
    start = server.post("/api/replay", dict(story))
    broken = server.post("/api/explore", dict(story, schedule=start["schedule"], faults=1,
                                              fault_kinds=["duplicate"], max_states=200000,
                                              seconds=60))
    check("with the defences off it breaks", broken["verdict"] == "BROKEN", broken)
    branch = server.post("/api/replay", dict(story, schedule=broken["counterexample"]["schedule"]))
    check("the continuation replays to its end", branch["verdict"]["ended"])
    check("... and breaks the invariant it names",
          broken["counterexample"]["invariant"] in
          [v["invariant"] for v in branch["verdict"]["violations"]], branch["verdict"])
    no_return = server.post("/api/no_return", dict(story,
                                                   schedule=broken["counterexample"]["schedule"]))
    check("the point of no return is a move of the branch",
          isinstance(no_return["move"], int) and no_return["move"] < len(branch["moves"]), no_return)
    if isinstance(no_return.get("move"), int):
        move = branch["moves"][no_return["move"]]
        check("the point of no return is where the duplicate struck", move["kind"] == "fault", move)
        check("... and its schedule is the moment before that move",
              no_return["schedule"] == move["schedule"], no_return)
        after = server.post("/api/replay", dict(story, schedule=branch["moves"][no_return["move"] + 1]
                                                ["schedule"]))
        doomed = server.post("/api/explore", dict(story, schedule=after["schedule"], faults=0,
                                                  max_states=200000, seconds=60))
        check("after it, with no further fault, every order breaks", doomed["verdict"] == "BROKEN",
              doomed)


def part_hostile(server):
    status, reply = server.request("POST", "/api/replay", raw="{not json")
    check("bad JSON is 400 with a message", status == 400 and "error" in reply, (status, reply))
    status, reply = server.request("POST", "/api/replay", {"name": "01-happy-path",
                                                          "schedule": {"choices": [0, "x"]}})
    check("a bad schedule entry is 400 with its pointer",
          status == 400 and reply["where"] == "/schedule/choices/1", reply)
    status, reply = server.request("POST", "/api/replay", {"name": "01-happy-path",
                                                          "schedule": {"choices": [7]}})
    check("a schedule that does not fit is 400", status == 400 and reply["where"].startswith("/schedule"),
          reply)
    status, reply = server.request("POST", "/api/replay", {"name": "01-happy-path", "bogus": 1})
    check("an unknown key is 400 with its pointer", status == 400 and reply["where"] == "/bogus", reply)
    status, reply = server.request("POST", "/api/replay", {"name": "01-happy-path", "then": {
        "publish": {"routing_key": "x", "message_id": "m-9",
                    "body": {"type": "Transfer.Requested", "transferId": "t1",
                             "payload": {"from": "mallory", "to": "bob", "amount": 1}}}}})
    check("a bad envelope is 400 naming the field", status == 400 and
          reply["where"] == "/then/publish/body/payload/from", reply)
    status, reply = server.request("POST", "/api/replay", {"name": "01-happy-path", "then": {
        "publish": {"exchange": "", "routing_key": "account-service", "message_id": "m-9",
                    "body": {"type": "Account.Debited", "transferId": "t1",
                             "payload": {"from": "alice", "to": "bob", "amount": 1}}}}})
    check("a type its queue's consumer does not take is 400, not a crash",
          status == 400 and reply["where"] == "/then/publish/body/type", reply)
    status, reply = server.request("POST", "/api/scenario", {"name": "01-happy-path"})
    check("the server survives it", status == 200, status)
    status, reply = server.request("POST", "/api/replay", {"scenario": {"accounts": {"a": -5}}})
    check("a bad inline scenario is 400 at /scenario/…", status == 400 and
          reply["where"].startswith("/scenario/accounts"), reply)
    status, reply = server.request("POST", "/api/replay", {"name": "01-happy-path",
                                                          "schedule": {"choices": [0] * 10001}})
    check("a schedule past 10,000 choices is 400", status == 400, (status, reply))
    status, reply = server.request("POST", "/api/replay", raw="[" * 100000 + "]" * 100000)
    check("deep nesting is 400, not a crash", status == 400, status)
    status, _ = server.request("POST", "/api/replay", raw="x" * (2 << 20))
    check("a body over 1 MiB is 413", status == 413, status)
    status, _ = server.request("GET", "/api/replay")
    check("the wrong method is 405", status == 405, status)
    status, _ = server.request("GET", "/etc/passwd")
    check("no file is served: 404", status == 404, status)
    status, _ = server.request("GET", "/api/library", headers={"Host": "evil.example:80"})
    check("a foreign Host header is 403 (DNS rebinding)", status == 403, status)
    status, _ = server.request("GET", "/api/library", headers={"Origin": "http://evil.example"})
    check("a foreign Origin is 403", status == 403, status)
    status, page = server.request("GET", "/")
    check("the page is served from the binary", status == 200 and "<html" in page.lower(), status)
    status, reply = server.request("POST", "/api/explore", {"name": "14-window-too-short"})
    check("explore on a story with a clock is refused with why", status == 400 and
          "clock" in reply["error"], reply)
    status, reply = server.request("POST", "/api/replay", {"name": "14-window-too-short"})
    check("a story with a clock still opens (clocked)", status == 200 and
          reply["story"]["mode"] == "clocked", (status, str(reply)[:200]))
    check("the server still serves after all that",
          server.request("GET", "/api/library")[0] == 200)


def part_token():
    server = Server("--scenarios", SCENARIOS, "--listen", "127.0.0.2", "--workers", "1", "--queue", "0")
    try:
        check("off loopback a token is printed in the URL", len(server.token) == 32, server.token)
        token, server.token = server.token, ""

        def answer(*args, **kwargs):
            # One worker and no queue: a request that meets the last one's connection still
            # closing is told 503 too; ask again, for up to 10 s.
            deadline = time.time() + 10
            while True:
                status, reply = server.request(*args, **kwargs)
                if status != 503 or time.time() > deadline:
                    return status, reply
                time.sleep(0.2)

        status, _ = answer("GET", "/api/library")
        check("without the token: 403", status == 403, status)
        status, _ = answer("GET", "/api/library", headers={"X-Inboxsim-Token": "0" * 32})
        check("with a wrong token: 403", status == 403, status)
        server.token = token
        check("with the token: 200", answer("GET", "/api/library")[0] == 200)
        # One worker, no queue: while one explore runs (asked again until the worker, maybe still
        # closing the last connection, takes it), the requests that come meanwhile are told 503.
        busy = {}
        explore = {"name": "01-happy-path", "faults": 1, "fault_kinds": ["crash"], "seconds": 5}
        first = threading.Thread(target=lambda: busy.update(
            status=answer("POST", "/api/explore", explore)[0]))
        first.start()
        time.sleep(1.5)
        statuses = []
        others = [threading.Thread(target=lambda: statuses.append(server.request(
            "POST", "/api/explore", dict(explore, seconds=1))[0])) for _ in range(3)]
        for thread in others:
            thread.start()
        for thread in others + [first]:
            thread.join()
        check("busy: 503 for the requests past the one worker", statuses.count(503) >= 2 and
              busy.get("status") == 200, (statuses, busy))
        check("and served again once free", answer("GET", "/api/library")[0] == 200)
    finally:
        server.stop()

def part_fuzz(server):
    # Random walks that a class could click, and worse: any event, any fault, every hand action
    # with templates of the run's own messages (some mutated), steps back, schedules cut or
    # changed by hand. Every answer is 200 or a 4xx that names a place; never a 500, and the
    # server serves on. Seeded: a failure names the seed and the request, and replays.
    import random
    stories = ["01-happy-path", "04-two-identical-deliveries", "06-wrong-index-dropped",
               "14-window-too-short", "28-marten-inbox", "33-masstransit-concurrent-first-delivery",
               "36-redis-set-two-instances", "40-poison-quorum-queue", "43-relay-dies-after-publish",
               "50-explorer-proves-the-key", "56-outbox-send-retried", "59-postgres-lock-wait-fails"]
    requests = 0
    errors = []

    def ask(body, seed):
        nonlocal requests
        requests += 1
        status, reply = server.request("POST", "/api/replay", body)
        if status >= 500 or (status != 200 and not (isinstance(reply, dict) and "where" in reply)):
            errors.append((seed, status, str(reply)[:300], json.dumps(body)[:600]))
            if os.environ.get("INBOXSIM_PLAY_FUZZ_OUT"):  # the failing requests, to replay
                with open(os.environ["INBOXSIM_PLAY_FUZZ_OUT"], "a") as out:
                    out.write(json.dumps(body) + "\n")
            return None
        return reply if status == 200 else None

    def mutate(rng, value):
        # A template changed the way a student editing it might: a field dropped, a number or a
        # name replaced, a type swapped.
        value = json.loads(json.dumps(value))
        body = value.get("body", {})
        choice = rng.randrange(6)
        if choice == 0 and body:
            body.pop(rng.choice(sorted(body)), None)
        elif choice == 1:
            body.setdefault("payload", {})["amount"] = rng.choice([0, -1, 1, 10**12, "x", None])
        elif choice == 2:
            body["type"] = rng.choice(["Transfer.Requested", "Account.Debited", "Account.Credited",
                                       "Transfer.CreditRequested", "Nope", 7])
        elif choice == 3:
            value["routing_key"] = rng.choice(["", "#", "account-service", "transfer-service",
                                               "transfers.transfer.requested", "x" * 300])
        elif choice == 4:
            value["exchange"] = rng.choice(["", "banking.events", "amq.topic", None])
        elif choice == 5:
            value["message_id"] = rng.choice(["", "m-1", "m-2", "m-999", "\u0000", 12])
        return value

    for seed in range(int(os.environ.get("INBOXSIM_PLAY_FUZZ_SEEDS", "36"))):
        rng = random.Random(seed)
        name = stories[seed % len(stories)]
        moment = ask({"name": name}, seed)
        history = []
        for _ in range(30):
            if moment is None:
                break
            history.append(moment["schedule"])
            enabled = moment["enabled"]
            hand = moment.get("hand", {})
            roll = rng.randrange(100)
            then = None
            schedule = moment["schedule"]
            if roll < 45 and enabled:
                pick = rng.choice(enabled)
                faults = pick.get("faults", [])
                schedule = (rng.choice(faults)["schedule"] if faults and rng.randrange(3) == 0
                            else pick["schedule"])
            elif roll < 55 and hand.get("publish_templates"):
                template = rng.choice(hand["publish_templates"])
                then = {"publish": mutate(rng, template) if rng.randrange(2) else template}
            elif roll < 62 and hand.get("indexes"):
                index = rng.choice(hand["indexes"])
                index = index["name"] if isinstance(index, dict) else index
                then = {rng.choice(["drop_index", "restore_index"]): index}
            elif roll < 68 and hand.get("redrive"):
                queue = rng.choice(hand["redrive"])
                then = {"redrive": queue["name"] if isinstance(queue, dict) else queue}
            elif roll < 73:
                then = {"advance": {"ms": rng.choice([1, 1000, 60000, 3600000, 0, -5])}}
            elif roll < 80:
                then = {"run_on": rng.choice(["quiescent", "delivery", "crash_point", "commit",
                                              "nothing"])}
            elif roll < 88 and len(history) > 1:
                schedule = rng.choice(history)  # back to an earlier moment
            elif roll < 94:
                schedule = json.loads(json.dumps(schedule))
                choices = schedule.setdefault("choices", [])
                if choices:
                    at = rng.randrange(len(choices))
                    choices[at] = rng.choice([0, 1, 2, 5, 99, -1])
                else:
                    choices.append(rng.choice([0, 1, 3]))
            else:
                schedule = json.loads(json.dumps(schedule))
                schedule["stepwise"] = rng.choice([0, 1, len(schedule.get("choices", [])) + 3])
            body = {"name": name, "schedule": schedule}
            if then is not None:
                body["then"] = then
            answer = ask(body, seed)
            if answer is not None:
                moment = answer
    check("%d random requests: every answer is 200 or a 4xx naming the place" % requests,
          not errors, errors[:1])
    check("the server still serves after them", server.request("GET", "/api/library")[0] == 200)


if PART == "token":
    part_token()
else:
    server = Server("--scenarios", SCENARIOS)
    try:
        {"walk": part_walk, "crash": part_crash, "explore": part_explore,
         "hostile": part_hostile, "fuzz": part_fuzz}[PART](server)
    finally:
        server.stop()
print("%d passed, %d failed" % (len(passes), len(failures)))
sys.exit(1 if failures else 0)
