#!/usr/bin/env python3
"""Drives `inboxsim play` over its JSON API with seeded random walks (events, faults, hand
actions) and a few explores, and writes every reply (wall-clock fields left out) to OUT, one
JSON line per request, so that two binaries' walks can be diffed.
Usage: play_walk.py INBOXSIM SCENARIO_DIR OUT"""
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strip import strip  # noqa: E402 (the wall-clock fields compare.sh leaves out)

BINARY, SCENARIOS, OUT = sys.argv[1:4]
STORIES = ["01-happy-path", "02-insufficient-funds", "04-two-identical-deliveries",
           "08-lost-ack", "14-window-too-short", "16-lost-confirm", "28-marten-inbox",
           "33-masstransit-concurrent-first-delivery", "35-zombie-consumer",
           "36-redis-set-two-instances", "39-retry-absorbs-transient", "40-poison-quorum-queue",
           "42-publish-nacked", "43-relay-dies-after-publish", "54-heartbeat-window",
           "55-consumer-timeout", "56-outbox-send-retried", "59-postgres-lock-wait-fails",
           "71-wolverine-crash-after-ack", "72-wolverine-agent-races-handler",
           "73-wolverine-stranded-envelope", "74-jetstream-slow-consumer",
           "75-jetstream-dedupe-window", "76-jetstream-in-progress"]


process = subprocess.Popen([BINARY, "play", "--port", "0", "--scenarios", SCENARIOS],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
url = urllib.parse.urlparse(process.stdout.readline().strip())
out = open(OUT, "w")


def post(path, body):
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=300)
    connection.request("POST", path, body=json.dumps(body),
                       headers={"Host": url.netloc, "Content-Type": "application/json"})
    response = connection.getresponse()
    text = response.read().decode()
    connection.close()
    try:
        reply = json.loads(text)
    except ValueError:
        reply = text
    out.write(json.dumps({"path": path, "body": body, "status": response.status,
                          "reply": strip(reply)}, sort_keys=True) + "\n")
    return response.status, reply


def walk(name, seed, steps):
    rng = random.Random(seed)
    status, moment = post("/api/replay", {"name": name})
    for _ in range(steps):
        if status != 200 or not moment.get("enabled"):
            break
        event = rng.choice(moment["enabled"])
        faults = event.get("faults") or []
        choice = rng.choice(faults) if faults and rng.random() < 0.2 else event
        status, moment = post("/api/replay", {"name": name, "schedule": choice["schedule"]})
    if status == 200:
        post("/api/replay", {"name": name, "schedule": moment["schedule"],
                             "then": {"run_on": "quiescent"}})
        if moment.get("story", {}).get("mode") != "clocked":
            post("/api/explore", {"name": name, "schedule": moment["schedule"], "faults": 1,
                                  "fault_kinds": ["crash"], "max_states": 3000, "seconds": 600})


try:
    for story in STORIES:
        for seed in range(3):
            walk(story, seed, 60)
finally:
    process.send_signal(signal.SIGINT)
    process.wait(timeout=30)
    out.close()
