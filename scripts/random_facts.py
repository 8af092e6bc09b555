#!/usr/bin/env python3
"""The per-type statements of docs/porting.md (keys, shapes, encodings and the facts "checked on every
valid test", scripts/porting_doc.py MODEL) checked on random cases (spec/conformance.md §CONF.7), not
only on the fixed vectors: a port that relies on a fact meets the random cases too.

For every suite with a generator it asks `engram vectors random` for a batch of --cases cases (seed
--seed, the cases `engram conform --random N --seed S` asks), checks them with porting_doc.py's
checker, and draws further batches (seeds S+1, S+2, ...) until every test type the suite's generator
makes (RANDOM_TYPES) has at least --min-valid valid cases. A statement found false is a problem
(named by seed, suite, tcId), except the known divergences of porting_doc.KNOWN_RANDOM_DIVERGENCES,
which are counted and listed apart; first, an error is planted in each case of the first 40 that has
a known divergence, and each must be reported (the list of known divergences hides nothing else).

  random_facts.py --engram build/release/conformance/engram [--cases N] [--min-valid N] [--seed S]
                  [--suite S ...] [--json FILE]

--cases and --min-valid default to $ENGRAM_RANDOM_CASES, else 1000 (the full measurement; the ctest
random_checks.facts runs fewer). Exit 0 when every statement holds on every case. Python 3 standard
library, plus the Hugging Face `tokenizers` package for the TokenLookupTest fact (its random
tokenizers have no TokenMapTest to read the map from; without the package that fact is reported as
not checked, which fails the run).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import porting_doc as P  # scripts/, the script's own directory

# The test types each suite's generator makes (vectors/random*.cc). The other documented types have no
# random cases: fp8_decode (its vectors are exhaustive), accumulated (already a 10^7-position stream),
# and the file-backed lookups SafetensorsLookupTest, PackedLookupTest, FloatLookupTest.
RANDOM_TYPES = {
    "multipliers": ["BoundedIntegersTest", "MultipliersTest"],
    "layout": ["LayoutTest"],
    "hash_v41": ["HashTest", "HashStateTest"],
    "hash_demo": ["HashTest", "HashStateTest"],
    "table_lookup": ["SyntheticLookupTest"],
    "tp_shard": ["RowShardTest", "HeadShardTest"],
    "hash_state": ["HashHandoffTest"],
    "token_map": ["TokenMapTest", "TokenLookupTest"],
    "gate_v41": ["GateFunctionTest", "V41GateTest", "WkvTest"],
    "gate_demo": ["GateFunctionTest", "DemoGateTest"],
    "short_conv_demo": ["ShortConvTest", "ShortConvStateTest"],
    "engram_forward": ["EngramForwardTest"],
    "serving_v41": ["PackedBatchTest", "DraftTreeTest"],
}
# One error planted per type with a known divergence (porting_doc.KNOWN_RANDOM_DIVERGENCES), in a case
# that has that divergence: the case must then be reported as a problem, not set apart, or the list of
# known divergences would hide real errors. suite -> (type, the edit)
def _plant_handoff(t):
    segs = t["segments"] if "segments" in t else [s for b in t["microBatches"] for s in b]
    segs[-1]["historyOut"]["position"] += 1


def _plant_state(t):
    append = next(s for s in t["steps"] if s["op"] == "append")
    append["positionAfter"] += 1


PLANTS = {
    "hash_state": ("HashHandoffTest", _plant_handoff),
    "hash_v41": ("HashStateTest", _plant_state),
    "tp_shard": ("HeadShardTest", lambda t: t["rowIds"].append(t["rowIds"][0])),
}

MAX_BATCHES = 100  # per suite: a type the generator (almost) never makes valid is reported, not waited for


def check_plants(engram, seed, tmp):
    """The known divergences hide nothing else: in every case of the first 40 (per suite of PLANTS) that
    has one, a planted error is reported. Returns the problems of this check."""
    out, bad = os.path.join(tmp, "plants"), []
    if not P.KNOWN_RANDOM_DIVERGENCES:
        print("random_facts: no known divergence is listed (porting_doc.KNOWN_RANDOM_DIVERGENCES): nothing is set "
              "apart, so no planted error can be hidden")
        return bad
    r = subprocess.run([engram, "vectors", "random", "--out", out, "--count", "40", "--seed", str(seed)] +
                       [a for s in PLANTS for a in ("--suite", s)], capture_output=True, text=True)
    if r.returncode != 0:
        return ["engram vectors random (planted errors) failed: " + r.stderr.strip()]
    vectors = P.load_vectors(out)
    shutil.rmtree(out)
    planted = 0
    for suite, (type_, plant) in PLANTS.items():
        for g in vectors[suite]["testGroups"]:
            if g["type"] != type_ or g["tests"][0]["result"] != "valid":
                continue
            one = {suite: {"testGroups": [g]}}
            stats = P.Stats()
            P.check_vectors(one, P.Problems(), complete=False, stats=stats)
            if not stats.known:
                continue  # no known divergence in this case
            plant(g["tests"][0])
            probs, stats = P.Problems(), P.Stats()
            P.check_vectors(one, probs, complete=False, stats=stats)
            planted += 1
            if not probs:
                bad.append("seed %d %s tcId %d: an error planted in a case with a known divergence was not reported "
                           "(set apart as %s)" % (seed, suite, g["tests"][0]["tcId"], list(stats.known)))
    if planted == 0:
        bad.append("no case of the first 40 had a known divergence to plant an error in")
    print("random_facts: %d case(s) with a known divergence, each with an error planted: %s" % (
        planted, "all reported" if not bad else "%d NOT reported" % len(bad)))
    return bad


def main():
    env = os.environ.get("ENGRAM_RANDOM_CASES")
    default = int(env) if env else 1000
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engram", required=True, help="the engram program")
    ap.add_argument("--cases", type=int, default=default, help="cases per batch (default $ENGRAM_RANDOM_CASES or 1000)")
    ap.add_argument("--min-valid", type=int, default=None,
                    help="valid cases each type needs at least (default: --cases)")
    ap.add_argument("--seed", type=int, default=1, help="the first batch's seed (default 1)")
    ap.add_argument("--suite", action="append", help="only this suite (repeatable)")
    ap.add_argument("--json", help="write the per-suite, per-type counts and times here")
    args = ap.parse_args()
    min_valid = args.cases if args.min_valid is None else args.min_valid
    if args.cases < 1 or min_valid < 0:
        ap.error("--cases must be >= 1 and --min-valid >= 0")
    suites = args.suite or list(RANDOM_TYPES)
    for s in suites:
        if s not in RANDOM_TYPES:
            ap.error("--suite %s: no random generator (those with one: %s)" % (s, ", ".join(RANDOM_TYPES)))

    # RANDOM_TYPES names every suite engram has a generator for, and no other
    probe = os.path.join(tempfile.mkdtemp(prefix="random_facts-probe-"), "out")
    r = subprocess.run([args.engram, "vectors", "random", "--out", probe, "--count", "1"], capture_output=True, text=True)
    have = sorted(f[:-5] for f in os.listdir(os.path.join(probe, "v1"))) if r.returncode == 0 else None
    shutil.rmtree(os.path.dirname(probe), ignore_errors=True)
    if have != sorted(RANDOM_TYPES):
        print("random_facts: the suites with a generator (%s) are not those of RANDOM_TYPES (%s)%s" % (
            have, sorted(RANDOM_TYPES), "" if r.returncode == 0 else ": " + r.stderr.strip()), file=sys.stderr)
        return 1
    P.LOADED["all"] = [None, P.load_vectors()]  # [the batch, the fixed vectors] (maps of TokenMapTests)
    P.LOADED["hf"] = P.hf_map_builder()
    report = {"cases": args.cases, "minValid": min_valid, "seed": args.seed, "suites": {}}
    problems, unchecked, short = [], [], []
    stats = P.Stats()
    tmp = tempfile.mkdtemp(prefix="random_facts-")
    try:
        problems += check_plants(args.engram, args.seed, tmp)
        for suite in suites:
            t0 = time.monotonic()
            batches, gen_s = 0, 0.0
            while True:
                seed = args.seed + batches
                out = os.path.join(tmp, "%s-%d" % (suite, seed))
                g0 = time.monotonic()
                r = subprocess.run([args.engram, "vectors", "random", "--out", out, "--suite", suite, "--count",
                                    str(args.cases), "--seed", str(seed)], capture_output=True, text=True)
                gen_s += time.monotonic() - g0
                if r.returncode != 0:
                    print("random_facts: engram vectors random --suite %s --seed %d failed (exit %d): %s" % (
                        suite, seed, r.returncode, r.stderr.strip()), file=sys.stderr)
                    return 1
                vectors = P.load_vectors(out)
                shutil.rmtree(out)
                P.LOADED["all"][0] = vectors
                probs = P.Problems()
                before = {k: len(w) for k, w in stats.known.items()}
                P.check_vectors(vectors, probs, complete=False, stats=stats)
                for k, w in stats.known.items():  # name the batch's seed in the cases set apart
                    w[before.get(k, 0):] = ["seed %d %s" % (seed, x) for x in w[before.get(k, 0):]]
                problems += ["seed %d: %s" % (seed, p) for p in probs]
                batches += 1
                for type_ in {g["type"] for d in vectors.values() for g in d["testGroups"]}:
                    if type_ not in RANDOM_TYPES[suite]:
                        problems.append("%s: the generator made a %s, not listed in RANDOM_TYPES" % (suite, type_))
                # the types are shared between suites (HashTest in hash_v41 and hash_demo): count per suite
                counts = {t: sum(1 for d in vectors.values() for g in d["testGroups"] if g["type"] == t
                                 for x in g["tests"] if x["result"] == "valid") for t in RANDOM_TYPES[suite]}
                per = report["suites"].setdefault(suite, {"batches": 0, "valid": {t: 0 for t in RANDOM_TYPES[suite]}})
                for t, n in counts.items():
                    per["valid"][t] += n
                per["batches"] = batches
                if all(per["valid"][t] >= min_valid for t in RANDOM_TYPES[suite]) or batches >= MAX_BATCHES:
                    break
            per["seeds"] = [args.seed, args.seed + batches - 1]
            per["cases"] = batches * args.cases
            per["seconds"] = round(time.monotonic() - t0, 2)
            per["generateSeconds"] = round(gen_s, 2)
            for t in RANDOM_TYPES[suite]:
                if per["valid"][t] < min_valid:
                    short.append("%s %s: %d valid case(s) in %d batch(es), fewer than %d" % (
                        suite, t, per["valid"][t], batches, min_valid))
            print("random_facts: %s: %d case(s) (seeds %d-%d), valid %s, %.1f s (%.1f s drawing them)" % (
                suite, per["cases"], args.seed, args.seed + batches - 1,
                ", ".join("%s %d" % kv for kv in per["valid"].items()), per["seconds"], per["generateSeconds"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    for (type_, text), where in sorted(stats.unchecked.items()):
        unchecked.append("%s: %s: not checked on %d case(s), e.g. %s" % (type_, text, len(where), where[0]))
    report["types"] = {t: {"tests": stats.tests[t], "valid": stats.valid.get(t, 0),
                           "factChecks": {text: n for (ty, text), n in stats.checked.items() if ty == t}}
                       for t in sorted(stats.tests)}
    report["knownDivergences"] = {"%s: %s" % k: {"cases": len(w), "first": w[:5]} for k, w in sorted(stats.known.items())}
    report["problems"] = problems[:200]
    report["unchecked"] = unchecked
    report["short"] = short
    for t, r in report["types"].items():
        print("random_facts: %s: %d tests (%d valid), fact checks %s" % (
            t, r["tests"], r["valid"], ", ".join(str(n) for n in r["factChecks"].values()) or "none (no fact)"))
    for k, v in report["knownDivergences"].items():
        print("random_facts: KNOWN DIVERGENCE (set apart, not passed) %s: %d case(s), first %s" % (
            k, v["cases"], "; ".join(v["first"][:3])))
    seen = {k for k in stats.known}
    for type_, entries in sorted(P.KNOWN_RANDOM_DIVERGENCES.items()):
        for label, _, _ in entries:
            if type_ in stats.tests and (type_, label) not in seen:
                print("random_facts: note: the known divergence %s: %s was not met in this run: if its item is "
                      "fixed, remove its entry from porting_doc.KNOWN_RANDOM_DIVERGENCES" % (type_, label))
    for p in problems[:50] + unchecked + short:
        print("random_facts: " + p, file=sys.stderr)
    if len(problems) > 50:
        print("random_facts: ... %d more problem(s)" % (len(problems) - 50), file=sys.stderr)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1, ensure_ascii=False)
    ok = not problems and not unchecked and not short
    print("random_facts: %d random cases of %d suite(s), %d type(s): %s" % (
        sum(s["cases"] for s in report["suites"].values()), len(report["suites"]), len(report["types"]),
        "OK (every statement holds but the known divergences)" if ok else
        "%d problem(s), %d fact(s) not checked, %d type(s) under --min-valid" % (len(problems), len(unchecked), len(short))))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
