#!/usr/bin/env python3
"""Checks that every ctest entry has a TIMEOUT, so that a runaway fails its test instead of
stalling CI (ctest's default is no limit at all).

Usage: python3 tests/check_timeouts.py PATH_TO_CTEST BUILD_DIR
"""
import json
import subprocess
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    ctest, build_dir = sys.argv[1], sys.argv[2]
    listing = subprocess.run([ctest, "--test-dir", build_dir, "--show-only=json-v1"],
                             check=True, capture_output=True, text=True).stdout
    tests = json.loads(listing)["tests"]
    missing = []
    for test in tests:
        properties = {p["name"]: p["value"] for p in test.get("properties", [])}
        if float(properties.get("TIMEOUT", 0)) <= 0:
            missing.append(test["name"])
    for name in missing:
        print(f"FAILED: {name} has no TIMEOUT")
    print(f"{len(tests) - len(missing)} passed, {len(missing)} failed")
    return 1 if missing or not tests else 0


if __name__ == "__main__":
    sys.exit(main())
