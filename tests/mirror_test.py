#!/usr/bin/env python3
"""Tests mirror src/ (docs/architecture.md, "Add a test"): every source of src/symbolic and
src/backend/kernels has tests/<same path>_test.cpp, or a line in tests/mirror_map.txt naming
the test files that hold its tests today. A line for a source that has its own test file, or
that names a missing file, fails too, so the map only shrinks."""
import glob
import os
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
os.chdir(root)
mapped = {}
problems = []
for n, line in enumerate(open("tests/mirror_map.txt", encoding="utf-8"), 1):
    if not line.strip() or line.startswith("#"):
        continue
    parts = line.rstrip("\n").split("\t")
    if len(parts) != 3:
        problems.append(f"tests/mirror_map.txt:{n}: expected SOURCE<TAB>TEST FILES<TAB>WHAT")
        continue
    src, tests, _ = parts
    mapped[src] = tests.split()
    if not os.path.isfile(src):
        problems.append(f"tests/mirror_map.txt:{n}: {src} does not exist")
    for t in tests.split():
        if t != "conformance" and not os.path.isfile(t):
            problems.append(f"tests/mirror_map.txt:{n}: {t} does not exist")

sources = glob.glob("src/symbolic/*.cpp") + glob.glob("src/backend/kernels/**/*.cpp", recursive=True)
for src in sorted(sources):
    own = "tests/" + src[len("src/"):-len(".cpp")] + "_test.cpp"
    if os.path.isfile(own):
        if src in mapped:
            problems.append(f"{src} has its own test file {own}: remove its line from tests/mirror_map.txt")
    elif src not in mapped:
        problems.append(f"{src} has no test file: add {own} (or say in tests/mirror_map.txt where its tests are)")

for p in problems:
    print("test mirror:", p)
if not problems:
    own = len(sources) - len(mapped)
    print(f"test mirror: {own} of {len(sources)} sources of src/symbolic and src/backend/kernels have their own test file; the other {len(mapped)} are in tests/mirror_map.txt")
sys.exit(1 if problems else 0)
