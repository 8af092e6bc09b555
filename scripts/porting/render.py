"""The Markdown: the generated block of docs/porting.md (protocol lines, per-type tables, worked examples)
and the §CONF.6 table of spec/conformance.md, and a lint of both for what Doxygen or a table would trip on."""
import glob
import json
import math
import os
import re

from porting.base import DOC_BEGIN, DOC_END, ELIDE_LIST, ELIDE_STRING, ELIDE_STRING_OVER, ROOT, SPEC_BEGIN, SPEC_END, SUITES
from porting.checker import KNOWN_RANDOM_DIVERGENCES
from porting.protocol import passing_answer, request
from porting.schema_model import MODEL, enc_text, show_expr, show_shape


def elide(v):
    if isinstance(v, list):
        if len(v) > ELIDE_LIST:
            return [elide(w) for w in v[:ELIDE_LIST]] + ["... %d more" % (len(v) - ELIDE_LIST)]
        return [elide(w) for w in v]
    if isinstance(v, dict):
        return {k: elide(w) for k, w in v.items()}
    if isinstance(v, str) and len(v) > ELIDE_STRING_OVER:
        return v[:ELIDE_STRING] + "... (%d more characters)" % (len(v) - ELIDE_STRING)
    return v


def line(obj, shown=True):
    if shown and isinstance(obj, dict) and list(obj) == ["refused"]:
        shown = False  # a refusal message is shown whole
    return json.dumps(elide(obj) if shown else obj, ensure_ascii=False, separators=(",", ":"))


def anchors():
    """§ id → (spec file, GitHub anchor), as scripts/check_links.py computes anchors."""
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "spec", "*.md"))):
        for ln in open(path, encoding="utf-8").read().split("\n"):
            m = re.match(r"^#{1,6}\s+((§[A-Z]+\.\d+(?:\.\d+)?)\s.*?)\s*$", ln)
            if m:
                slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
                out[m.group(2)] = (os.path.basename(path), slug)
            m = re.match(r"^#\s+(§[A-Z]+)\s", ln)
            if m:
                out[m.group(1)] = (os.path.basename(path), "")
    return out


def link(ref, frm, anc):
    f, a = anc[ref]
    base = ("../spec/" if frm == "docs" else "") + f
    return "[%s](%s%s)" % (ref, base, "#" + a if a else "")


def code(s):
    return "`%s`" % s


def is_trivial(req, answer):
    """A request or answer whose test inputs or outputs hold an empty list or string at the top level
    (an empty sequence teaches nothing as an example)."""
    vals = list(req.get("test", {}).values()) + list(answer.get("outputs", {}).values())
    return any(isinstance(w, (list, str)) and len(w) == 0 for w in vals)


def examples(vectors, type_, profile=None):
    """(suite, group, test) of the smallest valid and of the smallest invalid test of a type (of one
    profile when given): by the length of the request line plus the answer line, a valid test whose
    inputs or outputs hold an empty list or string only when the type has no other; ties by suite
    name and tcId."""
    valid, invalid = [], []
    for suite in SUITES:
        for g in vectors[suite]["testGroups"]:
            if g["type"] != type_ or (profile and g.get("profile") != profile):
                continue
            for t in g["tests"]:
                req, ans = request(suite, type_, g, t), passing_answer(type_, g, t)
                size = len(line(req, shown=False)) + len(line(ans, shown=False))
                if t["result"] == "valid":
                    valid.append((is_trivial(req, ans), size, suite, t["tcId"], g, t))
                else:
                    invalid.append((size, suite, t["tcId"], g, t))
    v = min(valid, key=lambda e: e[:4]) if valid else None
    i = min(invalid, key=lambda e: e[:3]) if invalid else None
    return (v[2], v[4], v[5]) if v else None, (i[1], i[3], i[4]) if i else None


def tolerance_text(vectors, type_, name):
    rules = set()
    for suite in MODEL[type_]["suites"]:
        for g in vectors[suite]["testGroups"]:
            if g["type"] == type_ and name in g.get("tolerance", {}):
                r = g["tolerance"][name]
                if "k" in r:
                    a = float.fromhex(r["a"])
                    e = math.frexp(a)[1] - 1
                    a_txt = "2^%d" % e if a == 2.0 ** e else r["a"]
                    rules.add("k %s, a %s, scale `%s`" % (r["k"], a_txt, r["scale"]))
                else:
                    rules.add("`%s`" % r["rule"])
    return "; ".join(sorted(rules))


ROLE_TEXT = {"group": "group", "input": "input", "output": "output", "optional": "optional output",
             "reference": "reference (not required)", "informative": "informative (not sent)"}


def key_rows(vectors, type_, keys, prefix="", parent=None):
    rows = []
    for k in keys:
        role = ROLE_TEXT[k.role if parent in (None, "input") else parent]
        if k.when_text:
            role += " (" + k.when_text + ")"
        enc = enc_text(k.enc)
        t = tolerance_text(vectors, type_, k.name) if k.role == "output" and not prefix else ""
        if t:
            enc += "; " + t
        if k.shape.startswith("flat") and k.shape.count("[") > 1:
            enc = "flat list, row-major; " + enc
        sh = show_shape(k.shape)
        rows.append("| %s | %s | %s | %s | %s |" % (code(prefix + k.name), role, code(sh) if sh else "—", enc, k.text))
        if k.fields:
            rows += key_rows(vectors, type_, k.fields, prefix + k.name + ("[][]." if k.shape.count("[") == 2 else "[]."),
                             k.role)
    return rows


def render_type(vectors, type_, anc):
    m = MODEL[type_]
    out = ["### %s" % code(type_), ""]
    out.append("Suites: %s. What: %s. Spec: %s." % (", ".join(code(s) for s in m["suites"]), m["does"],
                                                    ", ".join(link(r, "docs", anc) for r in m["spec"])))
    out.append("")
    if m["dims"]:
        out.append("Dimensions: " + "; ".join("%s = %s" % (code(n), t) for n, (t, _) in m["dims"].items()) + ".")
        out.append("")
    out += ["| key | role | shape | encoding | meaning |", "|---|---|---|---|---|"]
    out += key_rows(vectors, type_, m["keys"])
    out.append("")
    if m["facts"]:
        out.append("Checked on every valid test%s, of the vectors and of random cases (`scripts/random_facts.py`):" % (
            " (and the binary history of the invalid ones)" if type_ == "HashHandoffTest" else ""))
        out.append("")
        out += ["- " + text for text, _ in m["facts"]]
        out.append("")
    if KNOWN_RANDOM_DIVERGENCES.get(type_):
        out.append("Known to be false on some random cases, which `scripts/random_facts.py` counts apart until it is "
                   "fixed:")
        out.append("")
        out += ["- " + label for label, _, _ in KNOWN_RANDOM_DIVERGENCES[type_]]
        out.append("")
    for profile in m.get("example_profiles", [None]):
        valid, invalid = examples(vectors, type_, profile)
        of = " (%s)" % profile if profile else ""
        if valid:
            suite, g, t = valid
            out.append("Example%s: %s tcId %d, %s:" % (of, code(suite), t["tcId"], code(t["comment"] or "no comment")))
            out += ["", "```json", line(request(suite, type_, g, t)), line(passing_answer(type_, g, t)), "```", ""]
        if invalid:
            suite, g, t = invalid
            out.append("Invalid example%s: %s tcId %d, %s, refused:" % (
                of, code(suite), t["tcId"], code(t["comment"] or "no comment")))
            out += ["", "```json", line(request(suite, type_, g, t)), line(passing_answer(type_, g, t)), "```", ""]
    return out


def pad_mismatches(vectors):
    out = []
    for suite in SUITES:
        for g in vectors[suite]["testGroups"]:
            c = g.get("config")
            if c is None or "compressedPad" not in g:
                continue
            raw = next((c[k] for k in ("engram_pad_id", "engram_pad_token_id", "pad_id") if k in c), None)
            if raw is not None and raw != g["compressedPad"]:
                out.append((suite, g["type"], g["comment"], raw, g["compressedPad"]))
    return out


def render_doc(vectors):
    anc = anchors()
    out = [DOC_BEGIN, "", "## Protocol operations, with real lines", ""]
    out.append("Every line below is what goes over the pipe, one JSON object per line (the runner writes compact "
               "JSON). Where a line is long it is shown elided, always the same way: a list of more than %d "
               "elements shows its first %d and then the string `\"... N more\"`; a string of more than %d "
               "characters shows its first %d and then `... (N more characters)`; a refusal message is shown "
               "whole. Nothing else is changed, so key order and values are the runner's." % (
                   ELIDE_LIST, ELIDE_LIST, ELIDE_STRING_OVER, ELIDE_STRING))
    out.append("")
    out.append("**hello** (%s). The runner's request and one answer claiming two suites and one profile:" %
               link("§CONF.2", "docs", anc))
    hello_ans = {"protocol": 1, "name": "my-port", "version": "0.1.0", "suites": ["hash_v41", "hash_state"],
                 "profiles": ["v4.1"], "features": []}
    out += ["", "```json", line({"op": "hello", "protocol": 1}), line(hello_ans), "```", ""]
    # contract: the first one the runner sends (suites by name, groups in order)
    first = None
    for suite in sorted(vectors):
        for g in vectors[suite]["testGroups"]:
            if "layers" in g and "config" in g and first is None:
                first = (suite, g)
    suite, g = first
    creq = {"op": "contract", "profile": g["profile"], "config": g["config"],
            "compressedVocabSize": g["compressedVocabSize"], "compressedPad": g["compressedPad"]}
    out.append("**contract** (%s). The first contract request of a run (from the %s group %s); an answer with no "
               "model but the layout the port computes, which the runner compares with the group's `layers` "
               "(`{\"contract\": null}` says there is nothing to compare: reported skipped):" % (
                   link("§CONF.2", "docs", anc), code(suite), code(g["comment"])))
    out += ["", "```json", line(creq), line({"contract": None, "layers": g["layers"]}), "```", ""]
    acc = [(t["n"], g, t) for g in vectors["accumulated"]["testGroups"] for t in g["tests"]]
    n, g, t = min(acc, key=lambda e: (e[0], e[2]["tcId"]))
    out.append("**accumulate** (%s). `accumulated` tcId %d, the answer that passes (or `{\"unsupported\": "
               "\"...\"}`):" % (link("§CONF.5", "docs", anc), t["tcId"]))
    out += ["", "```json", line(request("accumulated", "AccumulatedHashTest", g, t)),
            line(passing_answer("AccumulatedHashTest", g, t)), "```", ""]
    out.append("**test**: one example per type below. **bye**: `{\"op\":\"bye\"}`; no answer is read, the "
               "implementation exits with status 0.")
    out.append("")
    mism = pad_mismatches(vectors)
    out.append("Groups whose configuration's raw pad id differs from their `compressedPad` (hash with "
               "`compressedPad`):")
    out.append("")
    out += ["| suite | type | group | config pad id | `compressedPad` |", "|---|---|---|---|---|"]
    out += ["| %s | %s | %s | %d | %d |" % (code(s), code(ty), c, raw, cp) for s, ty, c, raw, cp in mism]
    out.append("")
    out += ["## Test types", ""]
    out.append("One section per test type, in suite order. *role*: `group` keys arrive in `group` (every group key "
               "but `tests`); `input` keys arrive in `test` (the keys before `result`; `tcId`, `comment`, "
               "`flags`, `specRef`, `result` and the informative `error` are never sent); `output` keys MUST be in "
               "the answer's `outputs` for a valid test; `optional output` (`intermediate`) MAY be; a `reference` "
               "is what a faithfulBf16 output is judged against and need not be returned. In a key name, `[]` "
               "marks the elements of a list (`steps[].rows`: the `rows` of each step). *shape*: `[A][B]` a "
               "list of A lists of B; `flat` one flat list of A·B values in that row-major order; `[·]` any "
               "length. Shapes hold in every valid test (invalid tests may break them on purpose), of the vectors "
               "and of random cases.")
    out.append("")
    for type_ in ordered_types(vectors):
        out += render_type(vectors, type_, anc)
    out.append(DOC_END)
    return "\n".join(out)


def ordered_types(vectors):
    seen = []
    for suite in SUITES:
        for g in vectors[suite]["testGroups"]:
            if g["type"] not in seen:
                seen.append(g["type"])
    return seen


QUIET_ENC = ("int", "int64", "str", "object", "layers", "tolerance")  # not repeated in the §CONF.6 table


def render_spec(vectors):
    out = [SPEC_BEGIN, "", "| type | suites | group keys sent | test inputs sent | expected outputs | dimensions |",
           "|---|---|---|---|---|---|"]
    used = set()

    def cell(k, prefix="", enc=True):
        s = code("%s%s%s" % (prefix, k.name, show_shape(k.shape).replace(" flat", "")))
        quiet = ("str", "object", "layers") if k.role == "output" else QUIET_ENC
        if enc and k.enc not in quiet:
            s += " " + enc_short(k.enc)
            used.add(enc_kind(k.enc))
        return s + (" (" + k.when_text + ")" if k.when_text else "")

    for type_ in ordered_types(vectors):
        m = MODEL[type_]
        keys = m["keys"]
        gk = [cell(k) for k in keys if k.role == "group"]
        ik, ok = [], []
        for k in keys:
            if k.role == "input":
                ik.append(cell(k, enc=not k.fields))
                for f in k.fields:
                    pre = k.name + ("[][]." if k.shape.count("[") == 2 else "[].")
                    (ik if f.role == "input" else ok).append(cell(f, pre))
            elif k.role == "output":
                ok.append(cell(k))
        extra = []
        for role, what in (("optional", "optional"), ("reference", "not required"), ("informative", "informative")):
            names = [code(k.name) for k in keys if k.role == role]
            if names:
                extra.append(what + ": " + ", ".join(names))
        if m.get("op") == "accumulate":
            ok = [code("sha256") + " (the answer is `{\"sha256\": ...}`, not `outputs`)"]
        dims = "; ".join("%s = %s" % (n, t) for n, (t, _) in m["dims"].items()) or "—"
        out.append("| %s | %s | %s | %s | %s | %s |" % (
            code(type_), ", ".join(code(s) for s in m["suites"]), ", ".join(gk), ", ".join(ik) or "—",
            "; ".join(ok + extra), dims))
    legend = [(kind, text) for kind, text in SHORT_ENC_TEXT if kind in used]
    out += ["", "Encodings: " + "; ".join("%s: %s" % (kind, text) for kind, text in legend) + ". An input or group "
            "key shown without one is a JSON integer (int64 unless its meaning says otherwise, §VEC.4), a string or "
            "an object (`docs/porting.md` gives each key's encoding).", "", SPEC_END]
    return "\n".join(out)


SHORT_ENC_TEXT = [
    ("row", "int64 global table row: residue + the column's offset (§HASH.4)"),
    ("int64", "JSON integer in [−2^63, 2^63)"),
    ("int", "JSON integer"),
    ("uint64", "JSON integer up to 2^64 − 1"),
    ("bool", "JSON boolean"),
    ("byte", "JSON integer 0 … 255"),
    ("bf16", "bf16 bits as a JSON integer 0 … 65535"),
    ("hexfloat", "`float.hex()` text (`inf`, `-inf`, `nan` too)"),
    ("pair", "the vector gives `{\"float64\": r, \"float32\": m}`; return your value(s) in the shape of r "
             "(`float.hex()` text or JSON numbers), judged by the group's `tolerance` (§CONF.1 rule 1)"),
    ("bf16hex(n)", "a string of n bf16 values, 4 hex digits each, element 0 first (compared by bits, §CONF.1 rule 2)"),
    ("f32hex(n)", "a string of n float32 values, 8 hex digits each"),
    ("hexbytes(n)", "a string of n bytes, 2 hex digits each"),
    ("sha256", "64 lower-case hex digits"),
    ("hex64", "64 lower-case hex digits"),
    ("history", "`{\"position\", \"history\"}`"),
    ("historyFull", "the §HASH.9 JSON form `{\"format\", \"version\", \"layoutFingerprint\", \"position\", "
                    "\"history\"}`"),
]


def enc_kind(enc):
    m = re.match(r"^(bf16hex|f32hex|hexbytes)\(", enc)
    return m.group(1) + "(n)" if m else enc


def enc_short(enc):
    m = re.match(r"^(bf16hex|f32hex|hexbytes)\((.+)\)$", enc)
    if m:
        return "%s(%s)" % (m.group(1), show_expr(m.group(2)))
    return enc


def replace_block(text, begin, end, block, where):
    if text.count(begin) != 1 or text.count(end) != 1:
        raise SystemExit("%s: needs exactly one '%s' and one '%s' line" % (where, begin, end))
    a = text.index(begin)
    b = text.index(end) + len(end)
    return text[:a] + block + text[b:]


def lint_markdown(block, where, probs):
    """What Doxygen (docs/Doxyfile: warnings are errors) or a Markdown table would trip over outside
    fenced blocks and code spans: HTML-like brackets, Doxygen command characters, underscores (emphasis),
    and table rows whose cell count differs from their header's."""
    fenced = False
    cells = None
    for n, ln in enumerate(block.split("\n"), 1):
        if ln.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if ln.startswith("<!--") and ln.endswith("-->"):
            continue
        bare = re.sub(r"`[^`]*`", "", ln)
        bare = re.sub(r"\]\([^)]*\)", "]", bare)
        bare = re.sub(r"\{#[\w.-]+\}\s*$", "", bare)  # a Doxygen page label
        for ch in ("<", "@", "\\", "_"):
            if (re.search(r"<[A-Za-z/!]", bare) if ch == "<" else ch in bare):
                probs.add("%s line %d" % (where, n), "character %r outside code: %s" % (ch, ln[:100]))
        if "*" in bare.replace("**", "") and bare.replace("**", "").count("*") % 2:
            probs.add("%s line %d" % (where, n), "an odd number of '*' outside code: %s" % ln[:100])
        if ln.startswith("|"):
            count = bare.count("|")
            if cells is None:
                cells = count
            elif count != cells:
                probs.add("%s line %d" % (where, n), "%d cell separators, the table's header has %d" % (count, cells))
        else:
            cells = None


# ------------------------------------------------------------------------------------------ main
