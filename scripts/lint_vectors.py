#!/usr/bin/env python3
"""Validate every vectors/v1/*.json against the JSON Schema its `schema` key names (spec §VEC.10).

The schemas hold the forms the spec states in prose: the suite files and their schemas (§VEC.1), the
top-level keys (§VEC.2), the keys of every test (§VEC.3), the group and test keys of each suite (§VEC.5,
§VEC.6, §VEC.7, §STO.11, §FUS.10, §TOK.7, §HASH.9, §CONF.5).

Usage: scripts/lint_vectors.py [DIR]   (DIR defaults to the repository's vectors/)
       scripts/lint_vectors.py --contract FILE   (a hash contract, spec §CON.5)
Exit status: 0 when every file validates, 1 otherwise (each violation is printed with its path).
"""
import json
import pathlib
import sys

import jsonschema


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


def lint_contract(path: pathlib.Path) -> int:
    """Validate one contract file against vectors/schema/contract.schema.json (spec §CON.5)."""
    schema_path = pathlib.Path(__file__).resolve().parent.parent / "vectors" / "schema" / "contract.schema.json"
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    validator_cls = jsonschema.validators.validator_for(schema)
    errors = list(validator_cls(schema).iter_errors(load(path)))
    for e in errors[:20]:
        print(f"{path}: at /{'/'.join(str(p) for p in e.absolute_path)}: {e.message[:300]}")
    print(f"{path}: {'OK' if not errors else str(len(errors)) + ' violation(s)'} against contract.schema.json")
    return 0 if not errors else 1


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--contract":
        return lint_contract(pathlib.Path(sys.argv[2]))
    root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent / "vectors"
    suites = sorted((root / "v1").glob("*.json"))
    if not suites:
        print(f"lint_vectors: no suite files under {root / 'v1'}", file=sys.stderr)
        return 1
    failures = 0
    for path in suites:
        try:
            doc = load(path)
        except (OSError, ValueError) as e:  # json.JSONDecodeError is a ValueError
            print(f"{path}: cannot read JSON: {e}")
            failures += 1
            continue
        schema_name = doc.get("schema") if isinstance(doc, dict) else None
        schema_path = root / "schema" / str(schema_name)
        if not schema_name or not schema_path.is_file():
            print(f"{path}: key 'schema' names {schema_name!r}, which is not a file in {root / 'schema'}")
            failures += 1
            continue
        schema = json.loads(schema_path.read_text(encoding="utf-8"))
        validator_cls = jsonschema.validators.validator_for(schema)
        validator_cls.check_schema(schema)
        errors = sorted(validator_cls(schema).iter_errors(doc), key=lambda e: list(e.absolute_path))
        for e in errors[:20]:
            where = "/".join(str(p) for p in e.absolute_path)
            print(f"{path}: at /{where}: {e.message[:300]}")
        failures += len(errors)
        print(f"{path.relative_to(root)}: {'OK' if not errors else str(len(errors)) + ' violation(s)'} "
              f"against {schema_name}")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
