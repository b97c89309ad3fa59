#!/usr/bin/env python3
"""Prints a JSON document (a file, or JSON lines) with wall-clock fields removed, keys sorted,
so that two binaries' outputs can be diffed. Usage: strip.py FILE (play_walk.py imports strip)"""
import json
import re
import sys

WALL = re.compile(r"wall|elapsed|seconds|ms_per|per_second|_per_s$")


def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if not WALL.search(k)}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


if __name__ == "__main__":
    text = open(sys.argv[1]).read()
    try:
        documents = [json.loads(text)]
    except ValueError:
        documents = [json.loads(line) for line in text.splitlines() if line.strip()]
    for document in documents:
        print(json.dumps(strip(document), indent=1, sort_keys=True))
