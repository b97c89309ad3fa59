#!/usr/bin/env python3
"""Benchmark: `run --html` on stories of N transfers, time and page size.

    python3 bench/html_scale.py build/inboxsim [TRANSFERS...]

Writes a story of N transfers between ten accounts (default N = 1000 2000 4000), runs
`inboxsim run STORY --html OUT --quiet` once per N and prints the wall time and the page's size.
Not a test (tests/report_size_check.sh asserts the bound); docs/performance.md quotes its output.
"""
import json
import os
import subprocess
import sys
import tempfile
import time


def story(transfers):
    steps = [{"transfer": {"id": "t%d" % (i + 1), "from": "a%d" % (i % 10),
                           "to": "a%d" % ((i + 3) % 10), "amount": 100 + i % 50}}
             for i in range(transfers)]
    steps.append({"run": {"until": "quiescent"}})
    return {"name": "scale-%d" % transfers, "title": "%d transfers" % transfers, "seed": 1,
            "accounts": {"a%d" % i: 1000000 for i in range(10)}, "steps": steps}


def main():
    binary = os.path.realpath(sys.argv[1])
    sizes = [int(n) for n in sys.argv[2:]] or [1000, 2000, 4000]
    work = tempfile.mkdtemp(prefix="inboxsim-html-scale.")
    print(f"{'transfers':>10} {'wall s':>8} {'page MB':>8}")
    for transfers in sizes:
        path = os.path.join(work, "story-%d.json" % transfers)
        with open(path, "w") as f:
            json.dump(story(transfers), f)
        html = os.path.join(work, "report-%d.html" % transfers)
        start = time.monotonic()
        subprocess.run([binary, "run", path, "--html", html, "--quiet"], check=False,
                       stdout=subprocess.DEVNULL)
        wall = time.monotonic() - start
        print(f"{transfers:>10} {wall:>8.1f} {os.path.getsize(html) / 1e6:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
