#!/usr/bin/env python3
"""Benchmark: one long fuzz story in bounded memory, time linear in transfers.

    python3 bench/scale_memory.py build/inboxsim [TRANSFERS...] [--rate N] [--accounts N]

Runs `inboxsim fuzz --seeds 1..1 --transfers N --accounts 10000 --rate R --json` for each N
(default 100000 300000 1000000), one at a time, and prints per run: the verdict, wall time,
peak resident memory (the child's ru_maxrss, what `/usr/bin/time -v` reports as "Maximum
resident set size"), microseconds per transfer, transactions and messages moved to an error
queue. Not a
test: it takes minutes and its figures depend on the machine. docs/performance.md quotes its output.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time


def run_one(binary, transfers, accounts, rate):
    argv = [binary, "fuzz", "--seeds", "1..1", "--transfers", str(transfers), "--accounts",
            str(accounts), "--json", "--out", "", "--shrink", "0"]
    if rate:
        argv += ["--rate", str(rate)]
    start = time.monotonic()
    # A fresh child per run: ru_maxrss of RUSAGE_CHILDREN is the largest of the waited-for
    # children, so each run is measured by a child process of its own that reports its own.
    probe = ("import resource, subprocess, sys;"
             "done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE);"
             "sys.stderr.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss));"
             "sys.stdout.buffer.write(done.stdout); sys.exit(done.returncode)")
    done = subprocess.run([sys.executable, "-c", probe] + argv, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    wall = time.monotonic() - start
    rss_kib = int(done.stderr.decode().strip().splitlines()[-1])
    summary = json.loads(done.stdout)
    return done.returncode, wall, rss_kib, summary


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("transfers", nargs="*", type=int, default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--accounts", type=int, default=10_000)
    parser.add_argument("--rate", type=int, default=0, help="transfers per virtual second")
    args = parser.parse_args()
    print(f"{'transfers':>10} {'verdict':>8} {'wall s':>8} {'peak RSS MB':>12} "
          f"{'us/transfer':>12} {'transactions':>13} {'error_queued':>13}")
    for transfers in args.transfers:
        rc, wall, rss_kib, summary = run_one(os.path.realpath(args.binary), transfers,
                                             args.accounts, args.rate)
        verdict = {0: "pass", 1: "FAIL"}.get(rc, f"exit {rc}")
        print(f"{transfers:>10} {verdict:>8} {wall:>8.1f} {rss_kib / 1024:>12.0f} "
              f"{wall * 1e6 / transfers:>12.1f} {summary['stats']['transactions']:>13} "
              f"{summary['stats']['error_queued']:>13}",
              flush=True)


if __name__ == "__main__":
    main()
