#!/usr/bin/env python3
"""The per-test-type reference of docs/porting.md and spec/conformance.md §CONF.6, generated from
the vectors and checked against them and against the JSON Schemas.

For every test type of vectors/v1/*.json the schemas of vectors/schema/ state (porting/schema_model.py reads
them: each field's description, x-role, x-shape, x-encoding, x-condition) the group keys and the
test input keys the runner sends (§CONF.1: the group without `tests`; the test split at `result`,
meta keys and informative outputs dropped, the nested outputs of HashStateTest / HashHandoffTest
stripped from the steps sent), the outputs it expects with their shape and encoding, and a few
facts a port relies on (porting/facts.py, code). It then checks every statement against every test of the type:

  * the keys: each key documented for a type is present exactly when its stated condition holds,
    and no test carries a key the type does not document (inputs before `result`, outputs after);
  * the shapes and encodings: every stated shape (`rows[T][L][C]`, dims from the stated formulas)
    and encoding (int64, bf16 integers, hex-digit rows, float.hex strings, {float64, float32}
    pairs, global table rows) is asserted on every valid test (invalid tests may break shapes on
    purpose; their keys are still checked);
  * the facts (e.g. `rows = residues + offsets`, `historyOut.position = to`);
    (the keys, shapes and facts are checked on random cases too: --vectors DIR over the cases
    `engram vectors random` writes, and scripts/random_facts.py, which runs it on every suite
    with a generator; KNOWN_RANDOM_DIVERGENCES sets apart the known false ones)
  * the schemas: every property of a documented type (group level, test level, nested step level)
    carries the annotations the tables need, and the code (porting/code_tables.py: dims, facts,
    conditions) knows every type and condition the schemas name;
  * spec/conformance.md §CONF.1: its nested-output table and its hex-float table agree with the schemas;
  * the prose (porting/prose.py): sentences of docs/porting.md, its generated reference included, and of the
    spec sections that state the same facts, on facts the vectors or the spec decide (a fork onto an existing
    name, the invalid HashStateTests, the rollbacks that MUST succeed, ...), and the tcIds a sentence names.

Then it renders the worked examples: for each type the smallest valid test (by the length of its
request line, preferring tests whose inputs and outputs hold no empty list or string) as the real
`{"op": "test", ...}` request and the `{"outputs": ...}` answer that passes, and the smallest
invalid test with a `{"refused": ...}` answer; plus the hello, contract, accumulate and bye lines.

  porting_doc.py            rewrite the generated blocks of docs/porting.md and spec/conformance.md
  porting_doc.py --check    exit 1 when a check fails or a block differs from what it generates
  porting_doc.py --vectors DIR [--min-valid N] [--json]
                            only the per-test checks (keys, shapes, encodings, facts) on DIR/v1/*.json
  porting_doc.py --replay   act as a JSON-lines adapter that answers every test with the answer this
                            reference calls passing, after checking that the request is the one it
                            says the runner sends (engram conform --exec "... --replay"): the real
                            runner then confirms both (scripts/test.sh runs it)

The modules of scripts/porting/ do the jobs (see its __init__); this is the command.
Python 3 standard library only.
"""
import argparse
import json
import os
import sys

from porting.base import DOC, DOC_BEGIN, DOC_END, ROOT, SPEC, SPEC_BEGIN, SPEC_END, Problems, load_vectors  # noqa: F401
from porting.checker import (KNOWN_RANDOM_DIVERGENCES, Stats, check_conf1, check_prose,  # noqa: F401
                             check_schemas, check_vectors)
from porting.facts import LOADED
from porting.render import lint_markdown, render_doc, render_spec, replace_block  # noqa: E402
from porting.replay_peer import replay  # noqa: E402
from porting.schema_model import MODEL  # noqa: E402


def generate(vectors):
    doc_text = open(DOC, encoding="utf-8").read()
    spec_text = open(SPEC, encoding="utf-8").read()
    new_doc = replace_block(doc_text, DOC_BEGIN, DOC_END, render_doc(vectors), "docs/porting.md")
    new_spec = replace_block(spec_text, SPEC_BEGIN, SPEC_END, render_spec(vectors), "spec/conformance.md")
    return doc_text, new_doc, spec_text, new_spec


def run_checks(vectors, doc_text):
    probs = Problems()
    check_vectors(vectors, probs)
    check_schemas(probs)
    check_conf1(probs)
    check_prose(vectors, doc_text, probs)
    return probs


def hf_map_builder():
    """A function tokenizer.json text -> map built by the Hugging Face tokenizers package
    (conformance/crosscheck/hf_token_map.py), or None when the package is not installed."""
    import importlib.util
    import tempfile
    spec = importlib.util.spec_from_file_location(
        "hf_token_map", os.path.join(ROOT, "conformance", "crosscheck", "hf_token_map.py"))
    hf_token_map = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(hf_token_map)  # needs the tokenizers package
    except ImportError:
        return None

    def build(text):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tokenizer.json")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            return hf_token_map.case_from_file(path, False)["map"]
    return build


def check_directory(directory, min_valid, as_json):
    """--vectors DIR: the per-test statements of MODEL (keys, shapes, encodings, facts) over the tests of
    DIR, e.g. random cases written by `engram vectors random`. Prints per type the tests and checks."""
    vectors = load_vectors(directory)
    if not vectors:
        print("porting_doc: %s: no v1/*.json" % directory, file=sys.stderr)
        return 1
    LOADED["all"] = [vectors, load_vectors()]
    LOADED["hf"] = hf_map_builder()
    probs = Problems()
    stats = check_vectors(vectors, probs, complete=False)
    for p in probs[:50]:
        print("porting_doc: " + p, file=sys.stderr)
    if len(probs) > 50:
        print("porting_doc: ... %d more problem(s)" % (len(probs) - 50), file=sys.stderr)
    few = sorted(t for t in stats.tests if stats.valid.get(t, 0) < min_valid)
    for t in few:
        print("porting_doc: %s: %d valid test(s), fewer than --min-valid %d" % (t, stats.valid.get(t, 0), min_valid),
              file=sys.stderr)
    report = {"directory": directory, "types": {}, "problems": len(probs)}
    for t in sorted(stats.tests):
        facts = {text: n for (ty, text), n in stats.checked.items() if ty == t}
        report["types"][t] = {
            "tests": stats.tests[t], "valid": stats.valid.get(t, 0),
            "factChecks": facts,
            "knownDivergences": {k: {"cases": len(w), "first": w[:5]} for (ty, k), w in stats.known.items() if ty == t},
            "unchecked": {text: {"cases": len(w), "first": w[:3]} for (ty, text), w in stats.unchecked.items() if ty == t}}
    if as_json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
    else:
        for t, r in report["types"].items():
            print("porting_doc: %s: %d tests (%d valid), %d fact check(s)%s%s" % (
                t, r["tests"], r["valid"], sum(r["factChecks"].values()),
                "".join("; known divergence %s: %d case(s), first %s" % (k, v["cases"], v["first"][0])
                        for k, v in r["knownDivergences"].items()),
                "".join("; NOT CHECKED %s: %d case(s) (%s)" % (k, v["cases"], v["first"][0])
                        for k, v in r["unchecked"].items())))
        ntests = sum(stats.tests.values())
        print("porting_doc: %s: %d tests of %d type(s) checked against the per-type reference: %s" % (
            directory, ntests, len(stats.tests),
            "OK" if not probs and not few and not stats.unchecked else
            "%d problem(s), %d type(s) under --min-valid, %d fact(s) not checked" % (len(probs), len(few), len(stats.unchecked))))
    return 1 if probs or few or stats.unchecked else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a check fails or a generated block is stale")
    ap.add_argument("--replay", action="store_true", help="serve the documented answers over the JSON-lines protocol")
    ap.add_argument("--vectors", metavar="DIR",
                    help="check only the per-test statements (keys, shapes, encodings, facts) on the tests of DIR/v1 "
                         "(random cases: engram vectors random --out DIR); exit 1 on a problem")
    ap.add_argument("--min-valid", type=int, default=1, metavar="N",
                    help="with --vectors: a type present in DIR with fewer than N valid tests is a problem")
    ap.add_argument("--json", action="store_true", help="with --vectors: print the per-type counts as JSON")
    args = ap.parse_args()
    if args.vectors:
        return check_directory(args.vectors, args.min_valid, args.json)
    vectors = load_vectors()
    LOADED["all"] = [vectors]
    if args.replay:
        return replay(vectors)
    doc_text, new_doc, spec_text, new_spec = generate(vectors)
    probs = run_checks(vectors, new_doc)
    lint_markdown(new_doc, "docs/porting.md", probs)
    sec = new_spec[new_spec.index("### §CONF.6"):]
    lint_markdown(sec, "spec/conformance.md §CONF.6", probs)
    for p in probs:
        print("porting_doc: " + p, file=sys.stderr)
    if args.check:
        stale = []
        if new_doc != doc_text:
            stale.append("docs/porting.md")
        if new_spec != spec_text:
            stale.append("spec/conformance.md")
        for s in stale:
            print("porting_doc: %s: the generated block is out of date (run scripts/porting_doc.py)" % s, file=sys.stderr)
        ntests = sum(len(g["tests"]) for d in vectors.values() for g in d["testGroups"])
        print("porting_doc: %d test types, %d tests checked against the reference and the schemas: %s" % (
            len(MODEL), ntests, "OK" if not probs and not stale else "%d problem(s), %d stale file(s)" % (len(probs), len(stale))))
        return 1 if probs or stale else 0
    if probs:
        print("porting_doc: not writing: %d problem(s)" % len(probs), file=sys.stderr)
        return 1
    for path, old, new in ((DOC, doc_text, new_doc), (SPEC, spec_text, new_spec)):
        if new != old:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            print("porting_doc: wrote " + os.path.relpath(path, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
