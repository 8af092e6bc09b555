#!/usr/bin/env python3
"""porting/prose.py, on its own: the committed guide and spec pass; the guide's earlier §7 (the sentences
that contradicted §VEC.7, §HASH.6 and the vectors), a prose sentence that contradicts the generated
reference, vectors that no longer decide a claim, a spec that no longer states its rule, and a sentence
naming other tcIds than the vectors flag are each reported. Python 3 standard library only.
Run from scripts/: python3 -m porting.prose_test"""
import copy
import os
import sys

from porting.base import DOC, DOC_BEGIN, DOC_END, ROOT, Problems, load_vectors
from porting.checker import check_prose

# docs/porting.md §7 as it stood before it was corrected (its wrong sentences verbatim, the rest abridged): a
# fork onto an existing name "is a refusal", "the current vectors have no invalid HashStateTest", and a
# rollback of k <= rollbackCapacity "MUST succeed" (twice: the group's capacity sentence says it too).
OLD_SECTION_7 = """## 7. `HashStateTest`: steps, in one place

A `HashStateTest` is a script of operations on named sequences. Its group adds `rollbackCapacity`: every sequence
of the group's tests MUST be able to roll back that many ids (keep the last maxNgram − 1 +
`rollbackCapacity` ids). In the file, `steps` comes after `result`.

| step sent | what the port does | the step's answer |
|---|---|---|
| `{"op":"fork","from":A,"to":B}` | B becomes an independent copy of A | `{}` |

`positionAfter` is the number of ids the sequence has consumed after the step. A test is
one answer: `{"outputs": {"steps": [{...}, {...}, ...]}}`. In an invalid `HashStateTest` every step
but the last succeeds and the last MUST be refused, so the whole test is answered `{"refused": ...}`
(the current vectors have no invalid `HashStateTest`). Cases the vectors do not cover yet, and what a
port should do: a fork onto a name that exists already, or a rollback or fork of a name never
appended, is a refusal; a rollback of k ≤ `rollbackCapacity` (and k ≤ position) MUST succeed; beyond the
capacity a port may refuse, or succeed while it still holds the ids (§HASH.6 requires a refusal only
where the ids needed are gone).

## 8. Numbers on the wire
"""

FAILURES = []


def expect(what, ok):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        FAILURES.append(what)


def run(vectors, doc, read_spec=None):
    probs = Problems()
    check_prose(vectors, doc, probs, read_spec)
    return probs


def main():
    vectors = load_vectors()
    doc = open(DOC, encoding="utf-8").read()
    probs = run(vectors, doc)
    expect("the committed docs/porting.md and spec pass (%s)" % ("; ".join(probs) or "no problem"), not probs)

    start, end = doc.index("## 7. `HashStateTest`"), doc.index("## 8. Numbers on the wire")
    old = doc[:start] + OLD_SECTION_7 + doc[end + len("## 8. Numbers on the wire\n"):]
    probs = run(vectors, old)
    for what, needle in (("the fork refusal", "says 'refused' about a fork onto a name that exists"),
                         ("'no invalid HashStateTest'", "says 'none' about whether the vectors hold invalid HashStateTests"),
                         ("the capacity as the mandatory rollback",
                          "says 'capacity' about the rollbacks that MUST succeed, the spec says 'depth'"),
                         ("the prose against its own generated table",
                          "the prose says 'refused' about a fork onto a name that exists, the generated reference")):
        expect("the earlier §7: %s is reported" % what, any(needle in p for p in probs))
    wrong = [p for p in probs if " says '" in p and "the prose says" not in p]
    expect("the earlier §7: exactly its four wrong sentences (%d)" % len(wrong), len(wrong) == 4)

    # A hand-written sentence against the generated reference alone (the vectors hold no fork onto an existing
    # name: the truth is undecided, so only the two sentences' disagreement and their undecided stances remain).
    no_fork = copy.deepcopy(vectors)
    for suite in ("hash_v41", "hash_demo"):
        for g in no_fork[suite]["testGroups"]:
            g["tests"] = [t for t in g["tests"] if "ForkReplaces" not in t.get("flags", [])]
    probs = run(no_fork, doc)
    expect("vectors without a fork onto an existing name: the guide's claim is undecided",
           any("which no vector decides" in p and "a fork onto a name that exists" in p for p in probs))
    contradicting = doc.replace("a name B that exists is replaced by the copy", "a name B that exists is refused", 1)
    probs = run(vectors, contradicting)
    expect("a prose table row against the generated reference is reported with both lines",
           any("the prose says 'refused'" in p and "(generated reference)" in p for p in probs))
    gi = doc.index(DOC_BEGIN)
    generated_flip = doc[:gi] + doc[gi:doc.index(DOC_END)].replace(
        "a name that exists is replaced by the copy (§VEC.7)", "a fork onto a name that exists is refused (§VEC.7)", 1) + \
        doc[doc.index(DOC_END):]
    probs = run(vectors, generated_flip)
    expect("a generated row against the vectors is reported as the generated reference",
           any("(generated reference): says 'refused'" in p for p in probs))

    def without_rule(path):
        text = open(os.path.join(ROOT, path), encoding="utf-8").read()
        return text.replace("MUST succeed when k ≤ d", "MUST succeed when k ≤ c") if path == "spec/hash.md" else text
    probs = run(vectors, doc, without_rule)
    expect("a §HASH.6 without its rule is reported", any("§HASH.6 no longer says" in p for p in probs))
    spec_flip = lambda path: open(os.path.join(ROOT, path), encoding="utf-8").read().replace(  # noqa: E731
        "**a fork onto a name that exists replaces that sequence**", "**a fork onto a name that exists is refused**")
    probs = run(vectors, doc, spec_flip)
    expect("a spec sentence against the vectors is reported", any(p.startswith("spec/vectors.md §VEC.7") for p in probs))

    probs = run(vectors, doc.replace("`hash_v41` tcIds 59 and 63", "`hash_v41` tcIds 59 and 64", 1))
    expect("a sentence naming other tcIds than the flag's is reported", any("names ForkReplaces tests" in p for p in probs))
    print("prose_test: %s" % ("OK" if not FAILURES else "%d FAILED" % len(FAILURES)))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
