"""Claims that prose makes about what the vectors and the spec decide, checked against them.

docs/porting.md says things in three places: its hand-written sections, the per-type reference that
scripts/porting_doc.py generates from the schemas and the facts (porting/code_tables.py), and the spec it
links. A sentence of one can contradict another (the guide once said a fork onto an existing name is a
refusal, where §VEC.7, the vectors' ForkReplaces tests and the guide's own generated table say it replaces
the sequence). Each CLAIM here names one such fact: which sentences are about it (`about`), which way a
sentence goes (`reading`: a stance, or None where it does not take one), and the truth, read from the
vectors or from the spec's normative sentence (`truth`). Every sentence about it, in the whole guide and in
the spec sections that state it, must take the truth's stance or none; a sentence of the hand-written prose
that disagrees with a sentence of the generated reference is reported with both.

A unit is a table row, or a sentence of prose (split at ". " and at "; ": clauses about different facts
share sentences). Stances are read by patterns, so a new way of saying a thing can escape them: the check
catches the sentences written so far and the contradiction that started it; porting/prose_test.py holds
the old sentences and shows each is caught.
"""
import re

from porting.base import DOC_BEGIN, DOC_END


def units(text):
    """(line, text, generated) for every table row and sentence of `text` (Markdown); `generated` is True
    inside the per-type reference block of docs/porting.md."""
    out, para, para_line, generated = [], [], 0, False
    lines = text.split("\n")

    def flush():
        if not para:
            return
        joined = " ".join(p.strip() for p in para)
        for sentence in re.split(r"(?<=[.;])\s+(?=[A-Z`(*\[a-z])", joined):
            out.append((para_line, sentence, generated))
        para.clear()

    for i, line in enumerate(lines, 1):
        if DOC_BEGIN in line:
            flush()
            generated = True
            continue
        if DOC_END in line:
            flush()
            generated = False
            continue
        stripped = line.strip()
        if stripped.startswith("|") or stripped.startswith("```") or not stripped or stripped.startswith("#"):
            flush()
            if stripped.startswith("|"):
                out.append((i, stripped, generated))
            continue
        if stripped.startswith("- ") or re.match(r"^\d+\. ", stripped):
            flush()
        if not para:
            para_line = i
        para.append(stripped)
    flush()
    return out


def _names(steps):
    """Yields (step, names that exist before it) along a HashStateTest's steps."""
    seen = set()
    for s in steps:
        yield s, set(seen)
        if s["op"] == "append":
            seen.add(s["seq"])
        elif s["op"] == "fork" and s.get("from") in seen:
            seen.add(s["to"])


def _state_tests(vectors):
    for suite in ("hash_v41", "hash_demo"):
        for g in vectors.get(suite, {}).get("testGroups", []):
            if g["type"] == "HashStateTest":
                for t in g["tests"]:
                    yield suite, t


def truth_fork_onto_existing(vectors, spec):
    """'replaces' when a valid HashStateTest forks onto a name that exists; 'refused' when only invalid
    tests do (as their last step); None when no test does."""
    valid = refused = False
    for _, t in _state_tests(vectors):
        for s, names in _names(t["steps"]):
            if s["op"] == "fork" and s["to"] in names and s["from"] in names:
                if t["result"] == "valid":
                    valid = True
                elif s is t["steps"][-1]:
                    refused = True
    return "replaces" if valid else "refused" if refused else None


def truth_invalid_state_tests(vectors, spec):
    return "some" if any(t["result"] == "invalid" for _, t in _state_tests(vectors)) else "none"


def truth_never_appended(vectors, spec):
    """'refused' when an invalid HashStateTest ends with a rollback or fork of a name never appended."""
    for _, t in _state_tests(vectors):
        if t["result"] != "invalid":
            continue
        s, names = list(_names(t["steps"]))[-1]
        name = s.get("seq") if s["op"] == "rollback" else s.get("from") if s["op"] == "fork" else None
        if name is not None and name not in names:
            return "refused"
    return None


def truth_rollback_mandatory(vectors, spec):
    """§HASH.6 item 1: the rollback that MUST succeed is bounded by the rollback depth d."""
    sec = spec.get("spec/hash.md §HASH.6", "")
    if re.search(r"\*rollback depth\* d", sec) and re.search(r"MUST succeed when k ≤ d\b", sec):
        return "depth"
    return "§HASH.6 no longer says 'MUST succeed when k ≤ d' of a *rollback depth* d: update porting/prose.py"


def _refusal(u):
    if re.search(r"(MUST NOT|must not|never|not) (be )?refus|MUST NOT refuse|without (a )?refus", u):
        return "not refused"
    if re.search(r"refus|is an error|MUST fail", u, re.I):
        return "refused"
    return None


def reading_fork_onto_existing(u):
    r = _refusal(u)
    if r == "refused":
        return "refused"
    if r == "not refused" or re.search(r"replac|overwrit|onto an existing name too", u, re.I):
        return "replaces"
    return None


def reading_invalid_state_tests(u):
    if re.search(r"\b(no|none of the|not any) invalid\b|\bhave no invalid\b|do not cover", u, re.I):
        return "none"
    if re.search(r"\bvectors (have|hold|carry|include)\b", u):
        return "some"
    return None


def reading_never_appended(u):
    r = _refusal(u)
    return "refused" if r == "refused" else "accepted" if r == "not refused" else None


def reading_rollback_mandatory(u):
    if re.search(r"\bdepth\b", u):
        return "depth"
    if re.search(r"capacity", u, re.I):
        return "capacity"
    return None


# name -> (what it is about: every pattern must match a unit, case-insensitive; reading; truth)
CLAIMS = {
    "a fork onto a name that exists": (
        [r"\bfork", r"\bexist|\balready\b"], reading_fork_onto_existing, truth_fork_onto_existing),
    "whether the vectors hold invalid HashStateTests": (
        [r"invalid\W+`?HashStateTest"], reading_invalid_state_tests, truth_invalid_state_tests),
    "a rollback or fork of a name never appended": (
        [r"\b(rollback|roll back|fork)", r"never appended|no append has started|not (yet )?appended|never been appended"],
        reading_never_appended, truth_never_appended),
    "the rollbacks that MUST succeed": (
        [r"\broll(ed)? ?back", r"MUST (succeed|be able)"], reading_rollback_mandatory, truth_rollback_mandatory),
}


def spec_sections(read):
    """The spec sections whose sentences are checked too, by label: `read(path)` gives a file's text."""
    out = {}
    for path, sec, nxt in (("spec/vectors.md", "### §VEC.7", "### §VEC.8"), ("spec/hash.md", "### §HASH.6", "### §HASH.7")):
        text = read(path)
        if sec in text and nxt in text:
            out[path + " " + sec[4:]] = text[text.index(sec):text.index(nxt)]
    return out


def check_claims(vectors, texts, spec, probs):
    """texts: label -> Markdown whose every sentence is checked (docs/porting.md, the spec sections);
    spec: label -> the spec sections the truths are read from. Adds a problem per sentence that takes
    another stance than the truth, and per pair of a hand-written and a generated sentence that disagree."""
    for claim, (about, reading, truth_fn) in CLAIMS.items():
        truth = truth_fn(vectors, spec)
        if truth is not None and truth not in ("replaces", "refused", "some", "none", "depth", "accepted"):
            probs.add("porting/prose.py", "%s: %s" % (claim, truth))
            continue
        seen = []
        for label, text in texts.items():
            for line, u, generated in units(text):
                if not all(re.search(p, u, re.I) for p in about):
                    continue
                stance = reading(u)
                if stance is None:
                    continue
                where = "%s:%d%s" % (label, line, " (generated reference)" if generated else "")
                seen.append((where, stance, generated, u))
                if truth is None:
                    probs.add(where, "says '%s' about %s, which no vector decides: %s" % (stance, claim, u[:160]))
                elif stance != truth:
                    probs.add(where, "says '%s' about %s, %s '%s': %s" % (
                        stance, claim, "the spec says" if claim == "the rollbacks that MUST succeed" else "the vectors say",
                        truth, u[:160]))
        for w1, s1, g1, u1 in seen:
            for w2, s2, g2, u2 in seen:
                if not g1 and g2 and s1 != s2 and w1.startswith("docs/porting.md") and w2.startswith("docs/porting.md"):
                    probs.add(w1, "the prose says '%s' about %s, the generated reference at %s says '%s'" % (
                        s1, claim, w2.split(":", 1)[1], s2))


def check_named_tests(vectors, label, text, probs):
    """A sentence that names the tests of a flag ("flagged `ForkReplaces`, `hash_v41` tcIds 59 and 63")
    names exactly the tests of that suite carrying the flag."""
    for line, u, _ in units(text):
        for m in re.finditer(r"flagged `(\w+)`,\s*`(\w+)` tcIds? ((?:\d+(?:, | and |–))*\d+)", u):
            flag, suite = m.group(1), m.group(2)
            named = set()
            for part in re.split(r", | and ", m.group(3)):
                a, _, b = part.partition("–")
                named |= set(range(int(a), int(b or a) + 1))
            have = {t["tcId"] for g in vectors.get(suite, {}).get("testGroups", []) for t in g["tests"]
                    if flag in t.get("flags", [])}
            if named != have:
                probs.add("%s:%d" % (label, line), "names %s tests of %s as tcIds %s; the vectors flag %s" % (
                    flag, suite, sorted(named), sorted(have)))
