#!/usr/bin/env python3
"""Validate every vectors/v1/*.json against the JSON Schema its `schema` key names (spec §VEC.10),
and the schemas themselves against the rules of the shared definitions.

The schemas hold the forms the spec states in prose: the suite files and their schemas (§VEC.1), the
top-level keys (§VEC.2), the keys of every test (§VEC.3), the group and test keys of each suite (§VEC.5,
§VEC.6, §VEC.7, §STO.11, §FUS.10, §TOK.7, §HASH.9, §CONF.5). What every suite shares (the note, the
test's common keys, int64, the hex strings, ...) is written once, in schema/common.schema.json, which
the others reference as common.schema.json#/$defs/NAME, as Wycheproof's schemas share theirs.

The schemas are checked before any vector (lint_schemas):
  * every schema is a valid JSON Schema (draft 2020-12);
  * no suite schema defines a name common.schema.json defines (a copy would drift from it);
  * every reference into common.schema.json names a definition it has;
  * every `format` is one of the named formats below, each checked on the vectors by FORMATS;
  * every property of every schema has a `description` (undescribed below states the two exemptions:
    a property inside an `if`, and a `then`/`else` property that restates a field the object describes).

Usage: scripts/lint_vectors.py [DIR]   (DIR defaults to the repository's vectors/)
       scripts/lint_vectors.py --contract FILE   (a hash contract, spec §CON.5)
       scripts/lint_vectors.py --self-test       (each schema rule above broken once in a copy: each is caught)
Exit status: 0 when every file validates, 1 otherwise (each violation is printed with its path).
"""
import copy
import json
import pathlib
import re
import sys

import jsonschema
import referencing

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMMON = "common.schema.json"

# The named formats of common.schema.json: what each string must look like. Each definition that names
# one also carries the same rule as a `pattern`, so that a validator without these names (valijson in the
# C++ runner) checks it too.
FORMATS = {
    "hex-float": re.compile(r"^(-?0x[01]\.[0-9a-f]+p[+-][0-9]+|inf|-inf|nan)$"),  # float.hex(), exact (§VEC.3)
    "hex-bytes": re.compile(r"^([0-9a-f]{2})*$"),
    "sha256": re.compile(r"^[0-9a-f]{64}$"),
    "spec-ref": re.compile(r"^§[A-Z]+\.[0-9]+$"),
}
FORMAT_CHECKER = jsonschema.FormatChecker(formats=())
for _name, _rx in FORMATS.items():
    FORMAT_CHECKER.checks(_name)(lambda value, rx=_rx: not isinstance(value, str) or bool(rx.match(value)))


def unique_keys(pairs):
    """json object_pairs_hook: refuse a repeated key (spec §ERR.5), as every C++ loader does."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r} (spec §ERR.5)")
        out[key] = value
    return out


def load(path: pathlib.Path):
    return json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=unique_keys)


def load_schemas(schema_dir: pathlib.Path):
    """name -> schema document, for every *.schema.json of the directory."""
    return {p.name: load(p) for p in sorted(schema_dir.glob("*.schema.json"))}


def validator(schemas, name):
    """A validator of schemas[name] that resolves its references into the directory's other schemas
    (by $id and by file name) and checks the named formats."""
    registry = referencing.Registry()
    for other, doc in schemas.items():
        resource = referencing.Resource.from_contents(doc, default_specification=referencing.jsonschema.DRAFT202012)
        registry = registry.with_resource(doc.get("$id", other), resource).with_resource(other, resource)
    cls = jsonschema.validators.validator_for(schemas[name])
    return cls(schemas[name], registry=registry, format_checker=FORMAT_CHECKER)


def walk(node, path=""):
    """(path, subschema) of every subschema, depth first (the maps of properties and definitions are
    not subschemas themselves: their values are)."""
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            if k in ("properties", "$defs", "patternProperties") and isinstance(v, dict):
                for name, sub in v.items():
                    yield from walk(sub, f"{path}/{k}/{name}")
            elif isinstance(v, (dict, list)) and k not in ("enum", "const", "required", "examples"):
                yield from walk(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, f"{path}/{i}")


def lint_schemas(schemas):
    """The problems of the schemas themselves (see the module docstring), as 'file: at PATH: what'."""
    problems = []
    if COMMON not in schemas:
        return [f"{COMMON}: missing: every suite schema references it"]
    common_defs = schemas[COMMON].get("$defs", {})
    for name, doc in schemas.items():
        try:
            jsonschema.validators.validator_for(doc).check_schema(doc)
        except jsonschema.SchemaError as e:
            problems.append(f"{name}: not a valid JSON Schema: {e.message[:300]}")
            continue
        if name != COMMON:
            for d in sorted(set(doc.get("$defs", {})) & set(common_defs)):
                problems.append(f"{name}: at /$defs/{d}: defines '{d}', which {COMMON} defines: reference "
                                f"{COMMON}#/$defs/{d} instead of a copy")
        for path, node in walk(doc):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(COMMON + "#/$defs/") and ref.split("/")[-1] not in common_defs:
                problems.append(f"{name}: at {path}: $ref '{ref}' names no definition of {COMMON}")
            fmt = node.get("format")
            if fmt is not None and fmt not in FORMATS:
                problems.append(f"{name}: at {path}: format '{fmt}' is not a named format ({', '.join(FORMATS)})")
        # Every property of every schema says what it holds (the test types' fields are also read by
        # scripts/porting/schema_model.py for docs/porting.md).
        problems += [f"{name}: at {path}: the property has no description" for path in undescribed(doc)]
    return problems


COMBINERS = ("allOf", "anyOf", "oneOf")


def described_here(node):
    """The names of the properties one object level describes unconditionally: its own `properties` and those
    of its allOf/anyOf/oneOf members (not of a then/else branch, nor through a $ref)."""
    names = {k for k, v in node.get("properties", {}).items() if isinstance(v, dict) and "description" in v}
    for comb in COMBINERS:
        for sub in node.get(comb, []) if isinstance(node.get(comb), list) else ():
            if isinstance(sub, dict):
                names |= described_here(sub)
    return names


def undescribed(node, path="", level=None, branch=False):
    """The paths of the properties without a `description`. Two kinds of property are constraints, not
    fields, and are exempt rather than given a copy of a text that would drift from the field's own:
      * every property inside an `if`: the condition only tests a field's value (`result` is `valid`,
        `type` is one test type), and the field itself is described where it is declared;
      * a property of a `then`/`else` branch whose name the same object level describes unconditionally
        (described_here), e.g. fusion's per-type `tests`, which narrows the group's described `tests`.
    A property a branch adds, or one inside such a restatement (the fields of a type's tests), is not
    exempt."""
    if isinstance(node, list):
        for i, sub in enumerate(node):
            yield from undescribed(sub, f"{path}/{i}", level, branch)
        return
    if not isinstance(node, dict):
        return
    if level is None:  # a new object level: the schema of a property, an item, a definition
        level = described_here(node)
    for prop, sub in node.get("properties", {}).items():
        if isinstance(sub, dict) and "description" not in sub and not (branch and prop in level):
            yield f"{path}/properties/{prop}"
        yield from undescribed(sub, f"{path}/properties/{prop}")
    for key, sub in node.items():
        if key in COMBINERS:
            yield from undescribed(sub, f"{path}/{key}", level, branch)
        elif key in ("then", "else"):
            yield from undescribed(sub, f"{path}/{key}", level, True)
        elif key in ("$defs", "patternProperties") and isinstance(sub, dict):
            for name, d in sub.items():
                yield from undescribed(d, f"{path}/{key}/{name}")
        elif key not in ("properties", "if", "enum", "const", "required", "examples") and isinstance(sub, (dict, list)):
            yield from undescribed(sub, f"{path}/{key}")


def lint_contract(path: pathlib.Path) -> int:
    """Validate one contract file against vectors/schema/contract.schema.json (spec §CON.5)."""
    schemas = load_schemas(ROOT / "vectors" / "schema")
    errors = list(validator(schemas, "contract.schema.json").iter_errors(load(path)))
    for e in errors[:20]:
        print(f"{path}: at /{'/'.join(str(p) for p in e.absolute_path)}: {e.message[:300]}")
    print(f"{path}: {'OK' if not errors else str(len(errors)) + ' violation(s)'} against contract.schema.json")
    return 0 if not errors else 1


def self_test() -> int:
    """Break each rule of lint_schemas once in a copy of the committed schemas, and a named format in a
    copy of a vector: each must be reported (and the committed schemas must pass)."""
    schemas = load_schemas(ROOT / "vectors" / "schema")
    failures = 0
    clean = lint_schemas(schemas)
    if clean:
        print("lint_vectors self-test: the committed schemas do not pass:\n  " + "\n  ".join(clean[:10]))
        failures += 1

    def planted(what, edit, expect):
        nonlocal failures
        s = copy.deepcopy(schemas)
        edit(s)
        found = [p for p in lint_schemas(s) if expect in p]
        print(f"lint_vectors self-test: {what}: {'caught: ' + found[0] if found else 'NOT CAUGHT'}")
        failures += not found

    note = schemas[COMMON]["$defs"]["note"]
    planted("a suite schema with its own copy of 'note'",
            lambda s: s["hash.schema.json"].setdefault("$defs", {}).update(note=copy.deepcopy(note)),
            "hash.schema.json: at /$defs/note: defines 'note'")
    planted("a reference to a definition common.schema.json does not have",
            lambda s: s["hash.schema.json"]["properties"].update(
                notes={"description": "x", "$ref": COMMON + "#/$defs/notez"}), "names no definition")
    planted("a format that is not a named format",
            lambda s: s[COMMON]["$defs"]["sha256"].update(format="sha-256"), "format 'sha-256'")
    planted("a property of common.schema.json without a description",
            lambda s: s[COMMON]["$defs"]["note"]["properties"]["bugType"].pop("description"),
            "common.schema.json: at /$defs/note/properties/bugType: the property has no description")
    planted("a field of a suite schema's test type without a description",
            lambda s: s["storage.schema.json"]["$defs"]["syntheticGroup"]["properties"]["table"]["properties"]["seed"]
            .pop("description"),
            "storage.schema.json: at /$defs/syntheticGroup/properties/table/properties/seed: the property has no "
            "description")
    planted("a field a then-branch adds without a description",
            lambda s: s["fusion.schema.json"]["$defs"]["group"]["allOf"][2]["then"]["properties"]["tests"]["items"]
            ["properties"]["intermediate"]["properties"]["actCodes"].pop("description"),
            "fusion.schema.json: at /$defs/group/allOf/2/then/properties/tests/items/properties/intermediate/"
            "properties/actCodes: the property has no description")
    # The named format is checked on the vectors, apart from the pattern that repeats it.
    s = copy.deepcopy(schemas)
    s[COMMON]["$defs"]["hexFloat"].pop("pattern")
    doc = {"x": "0x1.8p+1"}
    probe = {"$schema": s[COMMON]["$schema"], "properties": {"x": {"$ref": COMMON + "#/$defs/hexFloat"}}}
    s["probe.schema.json"] = probe
    ok = not list(validator(s, "probe.schema.json").iter_errors(doc))
    bad = list(validator(s, "probe.schema.json").iter_errors({"x": "1.5"}))
    print(f"lint_vectors self-test: format hex-float without its pattern: '0x1.8p+1' "
          f"{'passes' if ok else 'FAILS'}, '1.5' {'refused: ' + bad[0].message if bad else 'NOT REFUSED'}")
    failures += (not ok) + (not bad)
    print(f"lint_vectors self-test: {'OK' if not failures else str(failures) + ' failure(s)'}")
    return 0 if not failures else 1


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--contract":
        return lint_contract(pathlib.Path(sys.argv[2]))
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        return self_test()
    root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "vectors"
    suites = sorted((root / "v1").glob("*.json"))
    if not suites:
        print(f"lint_vectors: no suite files under {root / 'v1'}", file=sys.stderr)
        return 1
    schemas = load_schemas(root / "schema")
    problems = lint_schemas(schemas)
    for p in problems:
        print(f"{root / 'schema'}/{p}")
    failures = len(problems)
    for path in suites:
        try:
            doc = load(path)
        except (OSError, ValueError) as e:  # json.JSONDecodeError is a ValueError
            print(f"{path}: cannot read JSON: {e}")
            failures += 1
            continue
        schema_name = doc.get("schema") if isinstance(doc, dict) else None
        if not isinstance(schema_name, str) or schema_name not in schemas:
            print(f"{path}: key 'schema' names {schema_name!r}, which is not a file in {root / 'schema'}")
            failures += 1
            continue
        errors = sorted(validator(schemas, schema_name).iter_errors(doc), key=lambda e: list(e.absolute_path))
        for e in errors[:20]:
            where = "/".join(str(p) for p in e.absolute_path)
            print(f"{path}: at /{where}: {e.message[:300]}")
        failures += len(errors)
        print(f"{path.relative_to(root)}: {'OK' if not errors else str(len(errors)) + ' violation(s)'} "
              f"against {schema_name}")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
