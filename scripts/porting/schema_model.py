"""The per-type model of docs/porting.md, read from the JSON Schemas of vectors/schema/ (Wycheproof's way:
the schema of a test type says what each of its fields holds).

A suite schema names its test types in `x-testTypes`: per type its `description` (what a test does),
`x-suites`, `x-spec` (the § ids), and `x-op` (`accumulate`: not a `test` request) and `x-exampleProfiles`
where they apply. Every property of a type's group (but `tests`), of its tests (but the §CONF.1 meta keys,
`result` and `error`) and of the elements of a nested list it documents carries:

  description   what the field holds: the table's *meaning* column;
  x-role        group | input | output | optional (returned or not; `intermediate`) | reference (a
                `<output>Ref64` / `Low64` / `High64` float64 reference: not required) | informative (not sent,
                not compared). On a field of a list's elements it may be absent: the field is its list's;
  x-shape       absent (a scalar) or "[A][B]..." with each dim a formula over the type's dims
                (porting/code_tables.py; "*": any); a "flat" prefix means one flat list of prod(dims) values
                in row-major order of those dims;
  x-encoding    each element's encoding (ENCODINGS, or bf16hex(n) / f32hex(n) / hexbytes(n));
  x-condition   when the field is in the vector beyond its role's rule (group and input: always; the others:
                in valid tests), named by a text of porting/code_tables.py CONDITIONS. A subschema carrying
                x-condition gives it to every property found beneath it (EngramForwardTest's demo parameters).

A field lists the fields of its elements when it is an input or output object whose elements (after its
shape's dims) have properties; the inputs of such elements come before their outputs.
"""
import os
import re

from porting.base import META, ROOT, SUITES, load_json
from porting.code_tables import CODE, CONDITIONS

SCHEMA_DIR = os.path.join(ROOT, "vectors", "schema")
ROLES = ("group", "input", "output", "optional", "reference", "informative")


class Key:
    """One key of a group, a test or a nested element, as its schema annotations state it (see above).
    when: the condition (CONDITIONS[when_text]) under which the key is in the vector beyond its role's rule."""

    def __init__(self, role, name, shape="", enc="", text="", when=None, when_text="", fields=None):
        self.role, self.name, self.shape, self.enc, self.text = role, name, shape, enc, text
        self.when, self.when_text, self.fields = when, when_text, fields or []

    def present(self, x):
        base = True if self.role in ("group", "input") else x.valid
        return base and (self.when is None or bool(self.when(x, self.name)))


class Ctx:
    """What a condition, a dim or a fact sees: the group g (without tests), the whole test t, its
    inputs `inp` as sent, the nested element e (or None), the list it sits in, the suite."""

    def __init__(self, suite, g, t, e=None, where=None):
        self.suite, self.g, self.t, self.e, self.where = suite, g, t, e, where
        self.valid = t.get("result") == "valid"
        self.profile = g.get("profile", t.get("profile"))

    def at(self, e, where):
        return Ctx(self.suite, self.g, self.t, e, where)

ENCODINGS = {
    "int64": "int64 (JSON integer)",
    "uint64": "uint64 (JSON integer, may exceed 2^63 − 1)",
    "int": "JSON integer",
    "bool": "JSON boolean",
    "str": "string",
    "object": "object",
    "hexfloat": "hex float",
    "bf16": "bf16 bits as a JSON integer 0 … 65535",
    "byte": "byte as a JSON integer 0 … 255",
    "sha256": "64 lower-case hex digits",
    "hex64": "64 lower-case hex digits",
    "row": "int64 global table row",
    "pair": "vector: `{\"float64\": r, \"float32\": m}` of hex floats; answer: your value(s) in the shape of r",
    "history": "`{\"position\", \"history\"}`",
    "historyFull": "`{\"format\", \"version\", \"layoutFingerprint\", \"position\", \"history\"}`",
    "tolerance": "object",
    "layers": "list of layer objects",
}


def enc_text(enc):
    m = re.match(r"^(bf16hex|f32hex|hexbytes)\((.+)\)$", enc)
    if m:
        kind, n = m.groups()
        if kind == "hexbytes":
            return "hex string, 2 digits per byte" + ("" if n == "*" else ", %s bytes" % show_expr(n))
        digits = 4 if kind == "bf16hex" else 8
        what = "bf16" if kind == "bf16hex" else "float32"
        if n == "1":
            return "%d hex digits: the %s bits" % (digits, what)
        return "hex string of %s %s values, %d digits each, element 0 first" % (show_expr(n), what, digits)
    return ENCODINGS[enc]


def show_expr(s):
    return s.replace("*", "·") if s != "*" else "any"


def show_shape(shape):
    if not shape:
        return ""
    flat = shape.startswith("flat")
    dims = re.findall(r"\[([^\]]+)\]", shape)
    text = "".join("[%s]" % (d if d != "*" else "·") for d in dims)
    return text + (" flat" if flat and len(dims) > 1 else "")


# ------------------------------------------------------------------------------------------ checks


def load_schema(name):
    """A suite schema with common.schema.json's definitions beside its own: a reference
    `common.schema.json#/$defs/X` and a local `#/$defs/X` both resolve by the name X (scripts/lint_vectors.py
    checks that no suite schema defines a name common.schema.json defines)."""
    schema = load_json(os.path.join(SCHEMA_DIR, name))
    common = load_json(os.path.join(SCHEMA_DIR, "common.schema.json"))
    schema["$defs"] = dict(common["$defs"], **schema.get("$defs", {}))
    return schema


def annotation_only(node):
    return all(k in ("$ref", "description") or k.startswith("x-") for k in node)


def resolve(schema, node):
    while isinstance(node, dict) and "$ref" in node and annotation_only(node):
        node = schema["$defs"][node["$ref"].split("/")[-1]]
    return node


def type_allows(schema, node, type_):
    node = resolve(schema, node)
    t = node.get("properties", {}).get("type", {})
    return t.get("const") == type_ or type_ in t.get("enum", [])


def collect(schema, node, type_, out, cond=""):
    """Property name → [(subschema, inherited x-condition)] of an object schema, following $ref,
    allOf/anyOf/oneOf and if/then/else (a branch conditioned on another test type is skipped)."""
    if not isinstance(node, dict):
        return out
    cond = node.get("x-condition", cond)
    if "$ref" in node:
        collect(schema, schema["$defs"][node["$ref"].split("/")[-1]], type_, out, cond)
    for name, sub in node.get("properties", {}).items():
        out.setdefault(name, []).append((sub, cond))
    for comb in ("allOf", "anyOf", "oneOf"):
        for sub in node.get(comb, []):
            collect(schema, sub, type_, out, cond)
    if "if" in node:
        test = node["if"].get("properties", {}).get("type", {})
        branches = ("then", "else") if "const" not in test else (("then",) if test["const"] == type_ else ("else",))
        for b in branches:
            collect(schema, node.get(b, {}), type_, out, cond)
    return out


def items_of(schema, subs, type_, depth=1):
    out = {}
    for s, cond in subs:
        node = resolve(schema, s)
        for _ in range(depth):
            node = resolve(schema, node.get("items", {}))
        collect(schema, node, type_, out, cond)
    return out


def make_key(name, subs, where, problems, parent_role=None):
    """The Key a property's annotations state; every subschema of the name must state the same."""
    seen = []
    for sub, cond in subs:
        a = (sub.get("x-role", parent_role), sub.get("x-shape", ""), sub.get("x-encoding"),
             sub.get("description"), sub.get("x-condition", cond))
        if a not in seen:
            seen.append(a)
    if len(seen) > 1:
        problems.append("%s: '%s' is annotated differently where it appears: %s" % (where, name, seen))
    role, shape, enc, text, when_text = seen[0]
    if role not in ROLES or not enc or not text:
        problems.append("%s: '%s' needs a description, an x-role (one of %s) and an x-encoding" % (
            where, name, ", ".join(ROLES)))
        return None
    if when_text and when_text not in CONDITIONS:
        problems.append("%s: '%s': x-condition '%s' is not one of porting/code_tables.py CONDITIONS" % (
            where, name, when_text))
        return None
    return Key(role, name, shape, enc, text, CONDITIONS.get(when_text), when_text)


def type_keys(schema, type_, groups, problems):
    """The documented keys of a type: its group's, then its tests', with the fields of nested lists."""
    gprops = collect(schema, resolve(schema, groups[0]), type_, {})
    tprops = items_of(schema, gprops.pop("tests", []), type_)
    for name in list(tprops):
        if name in META or name in ("result", "error"):
            del tprops[name]
    keys = []
    for props, level in ((gprops, "group"), (tprops, "test")):
        for name, subs in props.items():
            k = make_key(name, subs, "%s %s" % (type_, level), problems)
            if k is None:
                continue
            if (k.role == "group") != (level == "group"):
                problems.append("%s: %s key '%s' has x-role %s" % (type_, level, name, k.role))
            if k.role in ("input", "output") and k.enc == "object":
                fprops = items_of(schema, subs, type_, depth=k.shape.count("["))
                fields = [make_key(f, fs, "%s %s[]" % (type_, name), problems, k.role) for f, fs in fprops.items()]
                fields = [f for f in fields if f is not None]
                k.fields = [f for f in fields if f.role != "output"] + [f for f in fields if f.role == "output"]
            keys.append(k)
    return keys


def build_model():
    """type → {suites, spec, does, op, example_profiles, dims, keys, facts}, in suite order, and the problems
    met on the way (a property without its annotations, a type the code tables do not know)."""
    problems = []
    model = {}
    names = sorted(f for f in os.listdir(SCHEMA_DIR) if f.endswith(".schema.json"))
    types = {}
    for name in names:
        doc = load_json(os.path.join(SCHEMA_DIR, name))
        for type_, entry in doc.get("x-testTypes", {}).items():
            types[type_] = (name, entry)
    order = sorted(types, key=lambda t: (SUITES.index(types[t][1]["x-suites"][0]), list(types).index(t)))
    for type_ in order:
        name, entry = types[type_]
        schema = load_schema(name)
        top = schema["properties"]["testGroups"]["items"]
        cands = [top] if "oneOf" not in top else top["oneOf"]
        groups = [c for c in cands if type_allows(schema, c, type_)]
        if len(groups) != 1:
            problems.append("%s: %d group schemas in %s allow the type" % (type_, len(groups), name))
            continue
        if type_ not in CODE:
            problems.append("%s (%s): no dims and facts in porting/code_tables.py CODE" % (type_, name))
            continue
        m = dict(suites=entry["x-suites"], spec=entry["x-spec"], does=entry["description"], schema=name,
                 dims=CODE[type_]["dims"], facts=CODE[type_]["facts"],
                 keys=type_keys(schema, type_, groups, problems))
        if "x-op" in entry:
            m["op"] = entry["x-op"]
        if "x-exampleProfiles" in entry:
            m["example_profiles"] = entry["x-exampleProfiles"]
        model[type_] = m
    for type_ in sorted(set(CODE) - set(model)):
        problems.append("%s: in porting/code_tables.py CODE but in no schema's x-testTypes" % type_)
    return model, problems


MODEL, MODEL_PROBLEMS = build_model()
