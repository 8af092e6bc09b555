#!/usr/bin/env python3
"""Whether a merged report equals a single-process run of the same work (spec/conformance.md §CONF.9).

Usage: scripts/merged_equals_single.py MERGED.json SINGLE.json NAME

MERGED.json is `engram report merge ... --report-json`, SINGLE.json the `--report-json` of one
`engram conform` process given the same options without the shard flags. Equal means: the same
verdict line, the same per-suite counts and, per suite, the same number of requests and the same
request digest (a sum of SHA-256, so the order the shards ran in does not matter). Prints one line
and exits 0 when they are equal; prints every difference and exits 1 otherwise. Used by
scripts/slurm_stage.sh (CI) and scripts/bench_random.sh --shards.
"""
import json
import sys


def differences(merged, single):
    problems = []
    if merged["verdict"]["line"] != single["verdict"]["line"]:
        problems.append("verdict line: %r vs %r" % (merged["verdict"]["line"], single["verdict"]["line"]))
    if merged["suites"] != single["suites"]:
        for label in sorted(set(merged["suites"]) | set(single["suites"])):
            if merged["suites"].get(label) != single["suites"].get(label):
                problems.append("%s counts: %s vs %s" % (label, merged["suites"].get(label), single["suites"].get(label)))
    for label, c in single["shard"]["cases"].items():
        m = merged["shard"]["cases"].get(label, {})
        if (m.get("requests"), m.get("sha256Sum")) != (c["requests"], c["sha256Sum"]):
            problems.append("%s: requests/digest %s vs %s" % (label, m, c))
    for label in merged["shard"]["cases"]:
        if label not in single["shard"]["cases"]:
            problems.append("%s: in the merged run only" % label)
    return problems


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        merged = json.load(f)
    with open(sys.argv[2]) as f:
        single = json.load(f)
    problems = differences(merged, single)
    if problems:
        print("%s: the merged run differs from the single process:\n  %s" % (sys.argv[3], "\n  ".join(problems)))
        return 1
    suites = len(single["shard"]["cases"])
    requests = sum(c["requests"] for c in single["shard"]["cases"].values())
    print("%s: merged == single process (%d suite(s), %d request(s), digests equal): %s"
          % (sys.argv[3], suites, requests, merged["verdict"]["line"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
