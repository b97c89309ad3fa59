#!/usr/bin/env python3
"""Progress lines: fuzz, matrix, explore and long runs draw one on stderr
when stderr is a terminal, and never when it is not; --json output on stdout is the same JSON
object either way, with no progress in it.

Usage: python3 tests/progress_check.py PATH_TO_INBOXSIM   (run from the repository root)
The terminal is a pseudo-terminal from Python's standard library (pty), as `script` would give.
"""
import json
import os
import pty
import subprocess
import sys
import tempfile

failed = []
# Draw the line at once (a person sees it after half a second), so that short commands will do.
ENV = dict(os.environ, INBOXSIM_PROGRESS_FIRST_MS="0")


def check(name, condition, detail=""):
    if not condition:
        failed.append(name)
        print(f"FAILED: {name} {detail}")


def run(argv, stderr_tty):
    """Runs argv with stdout to a pipe and stderr to a pty or a pipe; returns (rc, out, err)."""
    if not stderr_tty:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                              env=ENV)
        return done.returncode, done.stdout.decode(), done.stderr.decode()
    # stdout goes to a file: a pipe that nobody reads while the pty is drained would fill up.
    out_file = tempfile.TemporaryFile()
    parent, child = pty.openpty()
    process = subprocess.Popen(argv, stdout=out_file, stderr=child, stdin=subprocess.DEVNULL,
                               env=ENV)
    os.close(child)
    err = b""
    while True:
        try:
            chunk = os.read(parent, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        err += chunk
    process.wait(timeout=120)
    os.close(parent)
    out_file.seek(0)
    out = out_file.read()
    return process.returncode, out.decode(), err.decode(errors="replace")


def long_story(path, transfers):
    # Transfers arriving over time, each followed by a few virtual milliseconds.
    steps = []
    for i in range(1, transfers + 1):
        steps.append({"transfer": {"id": f"t{i}", "from": "alice", "to": "bob", "amount": 1}})
        steps.append({"run": {"ms": 5}})
    steps.append({"run": {"until": "quiescent"}})
    story = {"name": "long-run", "seed": 1, "accounts": {"alice": transfers, "bob": 0},
             "steps": steps}
    with open(path, "w") as file:
        json.dump(story, file)


def main():
    binary = os.path.realpath(sys.argv[1])
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    with tempfile.TemporaryDirectory() as work:
        story = os.path.join(work, "long.json")
        long_story(story, 300)
        commands = {
            "fuzz": ([binary, "fuzz", "--seeds", "1..400", "--workload", "small", "--json",
                      "--out", ""], "fuzz: ", ["seeds, ", " failing, ", "seeds/s"]),
            "matrix": ([binary, "matrix", "--seeds", "1..4", "--workload", "small", "--json",
                        "--out", ""], "matrix: ", ["row ", " seeds, ", " failing in "]),
            "explore": ([binary, "explore", "scenarios/01-happy-path.json", "--faults", "0",
                         "--max-states", "150", "--json"], "explore 01-happy-path: ",
                        ["states, ", "violation(s)", "to --max-states"]),
            "run": ([binary, "run", story, "--json"], "run long-run: ", ["step "]),
        }
        for verb, (argv, opening, parts) in commands.items():
            rc, out, err = run(argv, stderr_tty=False)
            check(f"{verb}: no progress when stderr is not a terminal", err == "", repr(err[:200]))
            try:
                plain = json.loads(out)
            except ValueError:
                plain = None
                check(f"{verb}: --json is one JSON object", False, repr(out[:200]))
            rc_tty, out_tty, err_tty = run(argv, stderr_tty=True)
            check(f"{verb}: same exit code on a terminal", rc_tty == rc, f"{rc_tty} != {rc}")
            check(f"{verb}: progress on a terminal's stderr", opening in err_tty, repr(err_tty[-300:]))
            for part in parts:
                check(f"{verb}: the progress line says {part.strip()!r}", part in err_tty,
                      repr(err_tty[-300:]))
            check(f"{verb}: the progress line says how long is left",
                  " left" in err_tty or "estimating" in err_tty or "to --max-states" in err_tty)
            check(f"{verb}: and erases itself at the end", err_tty.endswith("\r\x1b[K"),
                  repr(err_tty[-40:]))
            check(f"{verb}: no progress in the --json output", "\r" not in out_tty)
            try:
                on_tty = json.loads(out_tty)
            except ValueError:
                on_tty = None
            if isinstance(plain, dict) and isinstance(on_tty, dict):
                plain.pop("wall_ms", None)
                on_tty.pop("wall_ms", None)
            check(f"{verb}: the --json output is the same object", on_tty == plain)
    print(f"{len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
