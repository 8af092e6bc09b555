#!/usr/bin/env python3
"""Releases of the golden vectors (spec/vectors.md §VEC.11, §VEC.13).

A set is released once: the release appends its line "<sha256 of MANIFEST.sha256>  <specVersion>" to
vectors/RELEASED in the commit that holds the set, and that line never changes afterwards. Between
releases the committed set is "unreleased" (the tool names it so).

  release_vectors.py --list      one line per release, oldest first: "<commit> <version> <digest>", the
                                 commit being the first whose vectors/MANIFEST.sha256 has that digest
  release_vectors.py --check     every release is found in history with its version, and every release
                                 since the rule was kept: its line was written in the commit holding the
                                 set and is unchanged since
  release_vectors.py --release   release the committed set: append its line (then commit, and tag the
                                 commit vectors-<version>)
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASED = "vectors/RELEASED"
# Released before the rule "one line, written at the release, never edited": their lines are taken as
# they stand (0.3.0 has two digests; 0.3.1's line replaced an earlier one).
BEFORE_THE_RULE = {"0.1.0", "0.2.0", "0.3.0", "0.3.1"}
LINE = re.compile(r"^([0-9a-f]{64})  ([0-9]+\.[0-9]+\.[0-9]+)$")


def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], check=True, capture_output=True).stdout


def fail(msg):
    print("release_vectors: " + msg, file=sys.stderr)
    sys.exit(1)


def parse(text, where):
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        if not m:
            fail(f"{where}:{n}: malformed line {line!r} (expected '<64 lower-case hex digits>  <specVersion>')")
        out.append((m.group(1), m.group(2)))
    return out


def released():
    with open(os.path.join(ROOT, RELEASED), encoding="utf-8") as f:
        return parse(f.read(), RELEASED)


def manifest_history():
    """(commit, digest of vectors/MANIFEST.sha256 there), oldest first, over the commits that changed it."""
    commits = git("log", "--reverse", "--format=%H", "--", "vectors/MANIFEST.sha256").decode().split()
    return [(c, hashlib.sha256(git("show", f"{c}:vectors/MANIFEST.sha256")).hexdigest()) for c in commits]


def spec_version_at(commit):
    doc = json.loads(git("show", f"{commit}:vectors/v1/layout.json"))
    return doc["specVersion"]


def releases():
    """[(commit, version, digest)] in RELEASED order; the commit is the first holding the digest."""
    history = manifest_history()
    out = []
    for digest, version in released():
        commit = next((c for c, d in history if d == digest), None)
        if commit is None:
            fail(f"{RELEASED}: {digest} ({version}) is the manifest of no commit in this clone's history")
        out.append((commit, version, digest))
    return out


def check():
    for commit, version, digest in releases():
        found = spec_version_at(commit)
        if found != version:
            fail(f"{RELEASED}: {digest} is listed as {version}, but the set at {commit[:10]} says specVersion {found}")
        if version in BEFORE_THE_RULE:
            continue
        # The first commit whose RELEASED lists this version must hold the set, and list exactly this line.
        first = None
        for c in git("log", "--reverse", "--format=%H", "--", RELEASED).decode().split():
            lines = [l for l in parse(git("show", f"{c}:{RELEASED}").decode(), f"{c[:10]}:{RELEASED}") if l[1] == version]
            if lines:
                first = (c, lines)
                break
        if first is None or first[1] != [(digest, version)]:
            fail(f"{RELEASED}: the {version} line changed after its release (first written as {first and first[1]})")
        held = hashlib.sha256(git("show", f"{first[0]}:vectors/MANIFEST.sha256")).hexdigest()
        if held != digest:
            fail(f"{RELEASED}: {version} was listed at {first[0][:10]}, whose vectors are {held}, not the released {digest}")
    print(f"release_vectors: {len(released())} released set(s), each found in history with its version")


def release():
    with open(os.path.join(ROOT, "base/version.h"), encoding="utf-8") as f:
        version = re.search(r'kSpecVersion = "([0-9.]+)"', f.read()).group(1)
    with open(os.path.join(ROOT, "vectors/MANIFEST.sha256"), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    lines = released()
    if any(d == digest for d, _ in lines):
        fail(f"the committed set {digest} is already released")
    if any(v == version for _, v in lines):
        fail(f"spec {version} is already released: bump kSpecVersion (base/version.h) first")
    if git("status", "--porcelain", "--", "vectors").strip():
        fail("vectors/ has uncommitted changes: release a committed set")
    with open(os.path.join(ROOT, RELEASED), "a", encoding="utf-8") as f:
        f.write(f"{digest}  {version}\n")
    print(f"release_vectors: {RELEASED}: added {digest}  {version}\n"
          f"  now: git commit -m 'vectors: release {version}' {RELEASED} && git tag -a vectors-{version} -m 'vectors {version}'")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--list", action="store_true")
    g.add_argument("--check", action="store_true")
    g.add_argument("--release", action="store_true")
    a = ap.parse_args()
    if a.list:
        for commit, version, digest in releases():
            print(commit, version, digest)
    elif a.check:
        check()
    else:
        release()


if __name__ == "__main__":
    main()
