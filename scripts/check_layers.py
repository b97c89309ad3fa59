#!/usr/bin/env python3
"""Checks that each folder of src/ includes only folders below it in the layering of
docs/architecture.md: kernel, domain, broker, services, check, world, scenario, fuzz, report,
play, app.
Exits 1 and lists every include that goes up or sideways."""
import pathlib
import re
import sys

LAYERS = ["kernel", "domain", "broker", "services", "check", "world", "scenario", "fuzz",
          "report", "play", "app"]
# Folders that sit side by side may not include each other: broker, services and check all
# stand on kernel and domain alone.
PEERS = [{"broker", "services", "check"}]

root = pathlib.Path(__file__).resolve().parent.parent / "src"
include = re.compile(r'#include "([a-z_]+)/')
problems = []
for path in sorted(root.rglob("*")):
    if path.suffix not in (".h", ".cpp"):
        continue
    folder = path.relative_to(root).parts[0]
    if folder not in LAYERS:
        problems.append(f"{path.relative_to(root)}: folder {folder} is not in the layering")
        continue
    for number, line in enumerate(path.read_text().splitlines(), 1):
        match = include.match(line)
        if not match:
            continue
        target = match.group(1)
        if target == folder:
            continue
        peers = any(folder in group and target in group for group in PEERS)
        if target not in LAYERS or LAYERS.index(target) > LAYERS.index(folder) or peers:
            problems.append(f"{path.relative_to(root)}:{number}: {folder} includes {target}")
for problem in problems:
    print(problem)
sys.exit(1 if problems else 0)
