#!/usr/bin/env python3
"""Ports that compute nothing, for conform_tests (spec/conformance.md §CONF.4, "No false green").

A JSON-lines peer (§CONF.2) that claims every suite and profile and never hashes, looks up or
multiplies anything. What it answers depends on --mode:

  empty   answers what needs no computation (an empty list for an empty sequence, a segment that
          appends nothing hands its history on, a masked v4.1 gate stream passed through:
          gate +0, out = x) and `unsupported` to everything else;
  refuse  refuses every test (`refused`): it computes nothing and says no to everything;
  replay  answers the fixed vectors of --vectors DIR with their own expected outputs (a test is
          recognised by its suite, tcId and group), and anything else (random cases) as `empty`.

--encode re-encodes every integer of an answer as another JSON integer with the same 64 bits:
  uint64  a negative integer as its two's-complement bit pattern (-1 -> 18446744073709551615);
  int64   an integer >= 2^63 as the negative int64 with the same bits.

No mode of this port may ever get "conformance: OK": conform_tests runs each and expects FAILED.
The empty answers are written here from §CONF.6's shapes, independently of vectors/trivial.cc,
so that conform_tests can check that they pass exactly the tests the generator flags Trivial.
"""
import argparse
import json
import sys

ENCODE = None


def hollow(group, test):
    """The outputs a port that computes nothing can give, or None."""
    t = group.get("type")

    def empty(key):
        return isinstance(test.get(key), list) and len(test[key]) == 0

    if t == "HashTest" and empty("ids"):
        return {"rows": []}
    if t == "BoundedIntegersTest" and test.get("count") == 0:
        return {"values": []}
    if t == "TokenLookupTest" and empty("rawIds"):
        return {"ids": []}
    if t in ("SyntheticLookupTest", "FloatLookupTest", "RowShardTest", "HeadShardTest",
             "SafetensorsLookupTest", "PackedLookupTest") and empty("rowIds"):
        return {"rows": []}
    if t == "WkvTest" and test.get("outFeatures") == 0:
        return {"kv": []}
    if t == "ShortConvTest" and test.get("steps") == 0:
        return {"output": []}
    if t == "EngramForwardTest" and empty("ids"):
        if group.get("profile") == "v4.1":
            return {"out": [], "gate": []}
        return {"output": [], "hiddenAfter": [], "gate": []}
    if t == "V41GateTest" and test.get("masked") is True:
        return {"gate": ["0x0.0p+0"] * group.get("hc", 0), "out": test.get("x")}
    if t == "HashStateTest":
        steps = []
        for s in test.get("steps", []):
            op = s.get("op")
            if op == "append" and s.get("ids"):
                return None
            if op == "rollback" and s.get("k") != 0:
                return None
            if op == "fork":
                steps.append({})
            elif op == "append":
                steps.append({"rows": [], "positionAfter": 0, "historyAfter": []})
            else:
                steps.append({"positionAfter": 0, "historyAfter": []})
        return {"steps": steps}
    if t == "HashHandoffTest":
        def handed_on(seg):
            h = seg.get("historyIn")
            if seg.get("from") != seg.get("to") or not isinstance(h, dict):
                return None
            return {"rows": [], "historyOut": {"position": h.get("position"), "history": h.get("history")}}
        out = {}
        if "segments" in test:
            segs = [handed_on(s) for s in test["segments"]]
            if any(s is None for s in segs):
                return None
            out["segments"] = segs
        if "microBatches" in test:
            batches = [[handed_on(s) for s in b] for b in test["microBatches"]]
            if any(s is None for b in batches for s in b):
                return None
            out["microBatches"] = batches
        return out or None
    return None


# §CONF.6 outputs nested in step lists, and keys that are not outputs.
NESTED = {"HashStateTest": {"steps": ("rows", "positionAfter", "historyAfter")},
          "HashHandoffTest": {"segments": ("rows", "historyOut"), "microBatches": ("rows", "historyOut")}}


def expected_outputs(group, test):
    """The vector test's expected outputs (and intermediate), as a perfect port returns them."""
    keys = list(test)
    out = {}
    for k in keys[keys.index("result") + 1:]:
        if k == "error" or k.endswith("Ref64") or (k == "value" and group["type"].endswith("DecodeTest")):
            continue
        out[k] = test[k]
    for lst, inner in NESTED.get(group["type"], {}).items():
        if lst not in test:
            continue

        def pick(e):
            return {k: e[k] for k in inner if k in e}
        out[lst] = [[pick(e) for e in b] if isinstance(b, list) else pick(b) for b in test[lst]]
    return out


def encode(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        if ENCODE == "uint64" and v < 0:
            return v + (1 << 64)
        if ENCODE == "int64" and v >= (1 << 63):
            return v - (1 << 64)
        return v
    if isinstance(v, list):
        return [encode(x) for x in v]
    if isinstance(v, dict):
        return {k: encode(x) for k, x in v.items()}
    return v


def canonical(v):
    return json.dumps(v, sort_keys=True)


def load_vectors(directory):
    known, sums = {}, {}
    with open(f"{directory}/MANIFEST.sha256") as f:
        files = [line[66:].strip() for line in f if line.strip()]
    for rel in files:
        if not (rel.startswith("v1/") and rel.endswith(".json")):
            continue
        suite = rel[3:-5]
        with open(f"{directory}/{rel}") as f:
            doc = json.load(f)
        for g in doc["testGroups"]:
            group = {k: v for k, v in g.items() if k != "tests"}
            for t in g["tests"]:
                if suite == "accumulated":
                    sums[(t["kind"], t["n"], t["seed"], canonical(group))] = t["sha256"]
                    continue
                known[(suite, t["tcId"], canonical(group))] = (t["result"], expected_outputs(g, t))
    return known, sums


def main():
    global ENCODE
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("empty", "refuse", "replay"), required=True)
    ap.add_argument("--vectors")
    ap.add_argument("--encode", choices=("uint64", "int64"))
    ap.add_argument("--claim", action="append", help="claim only this suite (repeatable; default: every suite)")
    args = ap.parse_args()
    ENCODE = args.encode
    known, sums = load_vectors(args.vectors) if args.mode == "replay" else ({}, {})
    for line in sys.stdin:
        req = json.loads(line)
        op = req.get("op")
        if op == "hello":
            ans = {"protocol": 1, "name": f"hollow-port ({args.mode}{', ' + ENCODE if ENCODE else ''})",
                   "version": "0", "suites": args.claim or ["*"], "profiles": ["*"], "features": []}
        elif op == "contract":
            ans = {"contract": None}
        elif op == "accumulate":
            key = (req.get("kind"), req.get("n"), req.get("seed"), canonical(req.get("group")))
            ans = {"sha256": sums[key]} if key in sums else {"unsupported": "computes nothing"}
        elif op == "test" and args.mode == "refuse":
            ans = {"refused": "refuses everything"}
        elif op == "test":
            hit = known.get((req.get("suite"), req.get("tcId"), canonical(req.get("group"))))
            if hit is not None:
                result, outputs = hit
                ans = {"outputs": encode(outputs)} if result == "valid" else {"refused": "replayed"}
            else:
                h = hollow(req.get("group", {}), req.get("test", {}))
                ans = {"outputs": encode(h)} if h is not None else {"unsupported": "computes nothing"}
        elif op == "bye":
            return
        else:
            ans = {"unsupported": f"op {op}"}
        sys.stdout.write(json.dumps(ans) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
