#!/usr/bin/env python3
"""Shard reports of a large run, made from the reports of a small one: the input of the merge benchmark.

Usage: scripts/bench_shard_reports.py --template SHARD.json... --results R --entry ENTRY.json --out DIR

`engram report merge` (spec/conformance.md §CONF.9) reads every shard's report once, as a stream,
and keeps only the shards' records and the few failures it prints. To measure its time and peak
memory on R listed results (scripts/bench_random.sh --shards) this writes the K template shard
reports (the --report-json files of one real sharded `engram conform --random N --suite S` run,
K = the shard count) again as the shards of a run of `--random R` in which every case failed:
each shard's case range becomes its share of R (§CONF.9's ranges), its counts say that many
failures, and its "results" list that many copies of ENTRY (one real failing result, as
`engram conform --report-json` wrote it) with consecutive tcIds. Only the figures the merge
checks are rewritten; the request digests are the template's (the merge sums them and cannot
recompute them), so the merged verdict is about a run that never happened: a benchmark input,
nothing else. Written a line at a time: memory stays small whatever R.
"""
import argparse
import copy
import json
import os
import re


def share(n, index, count):
    """Shard `index` of `count`'s cases of n: [n*index/count, n*(index+1)/count), as shard.cc's ShardRange."""
    return n * index // count, n * (index + 1) // count


def rewrite(head, label, suite, total, begin, end):
    """The template's report without results, made the report of cases [begin, end) of `total`, all failed."""
    n = end - begin
    head = copy.deepcopy(head)
    rec = head["shard"]
    rec["work"]["casesPerSuite"] = total
    rec["randomAsked"] = n
    rec["cases"][label].update({"begin": begin, "end": end, "requests": n})
    counts = rec["counts"][label]
    for k in ("passed", "skipped", "expectedFail", "stale", "refused"):
        if k in counts:
            counts[k] = 0
    counts.update({"failed": n, "tested": 0, "trivial": 0, "sent": n})  # tested counts passes only
    head["suites"][label] = {k: counts[k] for k in head["suites"][label]}
    random = head["random"]
    random["casesPerSuite"] = total
    if "replay" in random:
        random["replay"] = re.sub(r"--random \d+", "--random %d" % total, random["replay"])
    random["suites"][suite].update({"drawn": n, "asked": n, "failing": n, "cases": [begin, end], "shrunk": []})
    rec["failing"] = {}
    return head


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--template", nargs="+", required=True, help="the shard reports of one small sharded run of one suite")
    ap.add_argument("--results", type=int, required=True, help="listed results in all (the cases of the large run)")
    ap.add_argument("--entry", required=True, help="one failing result (a JSON object) to list")
    ap.add_argument("--out", required=True, help="directory for shard-I.json")
    a = ap.parse_args()
    with open(a.entry) as f:
        entry = json.load(f)
    heads = []
    for path in a.template:
        with open(path) as f:
            heads.append(json.load(f))
    count = heads[0]["shard"]["count"]
    if sorted(h["shard"]["index"] for h in heads) != list(range(count)):
        raise SystemExit("--template: give every shard of one run (indexes 0 ... %d)" % (count - 1))
    labels = list(heads[0]["shard"]["cases"])
    if len(labels) != 1 or not labels[0].startswith("random:"):
        raise SystemExit("--template: the shards of a --random-only run of one suite (found %s)" % labels)
    label = labels[0]
    suite = label[len("random:"):]
    os.makedirs(a.out, exist_ok=True)
    written = 0
    for head in heads:
        index = head["shard"]["index"]
        begin, end = share(a.results, index, count)
        report = rewrite(head, label, suite, a.results, begin, end)
        del report["results"]
        text = json.dumps(report, indent=1)
        e = dict(entry, suite=label)
        path = os.path.join(a.out, "shard-%d.json" % index)
        with open(path, "w") as f:
            f.write(text[:-2] + ',\n "results": [\n')  # the object's closing "\n}" reopened for the list
            for tc in range(begin + 1, end + 1):
                e["tcId"] = tc
                f.write(("  " if tc == begin + 1 else ",\n  ") + json.dumps(e))
            f.write("\n ]\n}\n")
        written += os.path.getsize(path)
    print("bench_shard_reports: %d shard report(s), %d listed result(s), %d bytes in %s" % (count, a.results, written, a.out))


if __name__ == "__main__":
    main()
