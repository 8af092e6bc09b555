#!/usr/bin/env python3
"""A port's own unit-test fixtures, checked through the `engram` command line.

The literal constants of a port's tests are read from a checkout the user names (nothing of them is copied
into this repository), handed to `engram layout` / `engram hash` with an explicit layout where the test
states its own multipliers or primes (spec/layout.md §LAY.6, marked non-standard in every output), and
compared value by value:

  lucebox  server/test/test_ds4_engram.cpp, hash_matches_reference: kTokens through its token map, with its
           kMultipliers, kPrimes and compressed kPad; every row id of kExpectedRows ([token][layer][column])
  pypto    tests/unit/model/deepseek_v41/test_engram.py: layout_config()'s primes (test_prime_ranges_...),
           the pinned default multipliers (test_default_multipliers_...), and the first position's rows with
           state()'s explicit multipliers (test_first_position_...)

moncho/mlxgo's engram.json (a float32 Engram.forward) is checked in ctest instead (PortFloat32Forward, from
its tensors in conformance/cli/testdata). Usage:

  scripts/port_fixtures.py CHECKOUTS_DIR [--engram PATH]    (CHECKOUTS_DIR/lucebox, CHECKOUTS_DIR/pypto-serving)

Exit 0 when every value of every fixture found is reproduced, 1 on a difference (each printed), 2 when a
fixture file cannot be read or parsed (naming the file and what is missing), or none is found.
"""
import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LUCEBOX_TEST = "server/test/test_ds4_engram.cpp"
PYPTO_TEST = "tests/unit/model/deepseek_v41/test_engram.py"


class FixtureError(Exception):
    """A fixture file that is not what this script reads: named, with what is missing."""


def engram(args, cli):
    r = subprocess.run([cli] + args, capture_output=True, text=True)
    if r.returncode != 0:
        raise FixtureError(f"engram {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()[-500:]}")
    return json.loads(r.stdout)


def compare(name, got, want):
    """(values compared, differences as text)."""
    flat_got, flat_want = json.loads(json.dumps(got)), json.loads(json.dumps(want))
    if flat_got == flat_want:
        return [], count(want)
    return [f"{name}: expected {json.dumps(flat_want)[:300]}, engram gives {json.dumps(flat_got)[:300]}"], count(want)


def count(x):
    return sum(count(v) for v in x) if isinstance(x, (list, tuple)) else 1


def arithmetic_of_i(expr, i, path):
    """The value of a test's token-map expression at i: integer constants, i, + - * % and parentheses only
    (parsed, never run), each step an int32 value as the C++ computes it, % only of non-negative values by a
    positive one (where C++ and Python agree); anything else is not this script's business."""
    def value(node):
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            v = node.value
        elif isinstance(node, ast.Name) and node.id == "i":
            v = i
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Mod)):
            a, b = value(node.left), value(node.right)
            if isinstance(node.op, ast.Mod):
                if a < 0 or b <= 0:
                    raise FixtureError(f"{path}: token map `{expr}`: % of {a} by {b}")
                v = a % b
            else:
                v = a + b if isinstance(node.op, ast.Add) else a - b if isinstance(node.op, ast.Sub) else a * b
        else:
            raise FixtureError(f"{path}: token map `{expr}`: only integers, i, + - * % and parentheses are read")
        if not -(1 << 31) <= v < (1 << 31):
            raise FixtureError(f"{path}: token map `{expr}` leaves int32 at i = {i}")
        return v
    try:
        return value(ast.parse(expr, mode="eval"))
    except SyntaxError as e:
        raise FixtureError(f"{path}: token map `{expr}`: {e.msg}") from None


# ----------------------------------------------------------------------------- lucebox (C++ literals)

def lucebox(path, cli, tmp):
    text = open(path, encoding="utf-8").read()

    def scalar(name):
        m = re.search(r"constexpr\s+\w+\s+" + name + r"\s*=\s*(-?\d+)\s*;", text)
        if not m:
            raise FixtureError(f"{path}: no `constexpr ... {name} = <integer>;`")
        return int(m.group(1))

    def vector(name):
        m = re.search(r"std::vector<\w+>\s+" + name + r"\s*=\s*\{([^}]*)\}", text)
        if not m:
            raise FixtureError(f"{path}: no `std::vector<...> {name} = {{...}}`")
        items = [v.strip() for v in m.group(1).split(",") if v.strip()]
        bad = [v for v in items if not re.fullmatch(r"-?\d+(ull|ULL|u|U)?", v)]
        if bad:
            raise FixtureError(f"{path}: {name}: `{bad[0]}` is not a decimal integer literal")
        return [int(re.sub(r"[uUlL]+$", "", v)) for v in items]

    layers, heads, max_ngram, pad, vocab = (scalar(n) for n in ("kLayers", "kHeads", "kMaxNgram", "kPad", "kVocab"))
    multipliers, primes, tokens, expected = (vector(n) for n in ("kMultipliers", "kPrimes", "kTokens", "kExpectedRows"))
    m = re.search(r"init_raw\(\{([\d,\s]+)\}", text)
    if not m:
        raise FixtureError(f"{path}: no layer ids in an `init_raw({{...}}, ...)` call")
    layer_ids = [int(v) for v in m.group(1).split(",")]
    m = re.search(r"map\[\(size_t\) i\]\s*=\s*([^;]+);", text)
    if not m:
        raise FixtureError(f"{path}: no token map `map[(size_t) i] = <arithmetic of i>;`")
    token_map = [arithmetic_of_i(m.group(1), i, path) for i in range(vocab)]
    if any(c < 0 for c in token_map):
        raise FixtureError(f"{path}: the token map gives a negative compressed id")
    outside = [t for t in tokens if not 0 <= t < vocab]
    if outside:  # lucebox would hash such a token as the pad (RawIdOutsideTokenizerPad): not a fixture of §HASH.1
        raise FixtureError(f"{path}: kTokens holds {outside[0]}, outside the token map [0, {vocab})")
    cols = (max_ngram - 1) * heads
    if (len(layer_ids), len(multipliers), len(primes)) != (layers, layers * max_ngram, layers * cols):
        raise FixtureError(f"{path}: {len(layer_ids)} layer ids, {len(multipliers)} multipliers and {len(primes)} "
                           f"primes do not fit {layers} layers x max n-gram {max_ngram} x {heads} heads")
    config = {"engram_layer_ids": layer_ids, "engram_max_ngram_size": max_ngram, "engram_n_heads": heads,
              "engram_head_dim": 256, "engram_pad_id": pad,
              "engram_hash_multipliers": [multipliers[l * max_ngram:(l + 1) * max_ngram] for l in range(layers)],
              "engram_primes": [[primes[l * cols + o * heads:l * cols + (o + 1) * heads] for o in range(max_ngram - 1)]
                                for l in range(layers)]}
    cfg = os.path.join(tmp, "lucebox.json")
    with open(cfg, "w", encoding="utf-8") as f:
        json.dump(config, f)
    # The pad is a compressed id here (kPad goes to init_raw as such): V covers the map's ids and the pad.
    v = max(token_map + [pad]) + 1
    ids = [token_map[t] for t in tokens]
    out = engram(["hash", "--config", cfg, "--compressed-vocab-size", str(v), "--ids=" + ",".join(map(str, ids))], cli)
    got = [row for position in out["rows"] for layer in position for row in layer]
    return [compare(f"{LUCEBOX_TEST} kExpectedRows ({len(tokens)} tokens x {layers} layers x {cols} columns)", got,
                    expected)]


# ----------------------------------------------------------------------------- pypto (Python literals)

def pypto(path, cli, tmp):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    def function(name):
        if name not in functions:
            raise FixtureError(f"{path}: no function {name}")
        return functions[name]

    def returned(name):
        for n in ast.walk(function(name)):
            if isinstance(n, ast.Return):
                return n.value
        raise FixtureError(f"{path}: {name} returns nothing")

    def asserted(name, left_source):
        """The literal each `assert <left_source> == <literal>` of a test compares with."""
        for n in ast.walk(function(name)):
            if (isinstance(n, ast.Assert) and isinstance(n.test, ast.Compare) and len(n.test.ops) == 1 and
                    isinstance(n.test.ops[0], ast.Eq) and ast.unparse(n.test.left) == left_source):
                return ast.literal_eval(n.test.comparators[0])
        raise FixtureError(f"{path}: {name} has no `assert {left_source} == <literal>`")

    config = ast.literal_eval(returned("layout_config"))
    call = returned("state")
    wanted = ("compressed_vocab_size", "pad_token_id", "multipliers")
    keywords = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg in wanted}
    for k in wanted:
        if k not in keywords:
            raise FixtureError(f"{path}: state() passes no {k}=")
    token_map = ast.literal_eval(call.args[1])
    v, pad = keywords["compressed_vocab_size"], keywords["pad_token_id"]
    if list(token_map) != list(range(v)):
        raise FixtureError(f"{path}: state()'s token map is not the identity of V = {v}")
    results = []
    plain = dict(config, engram_pad_id=pad)
    cfg = os.path.join(tmp, "pypto.json")
    with open(cfg, "w", encoding="utf-8") as f:
        json.dump(plain, f)
    layout = engram(["layout", "--config", cfg, "--compressed-vocab-size", str(v)], cli)
    primes = asserted("test_prime_ranges_are_global_disjoint_and_match_checkpoint_row_counts", "layout.primes")
    results.append(compare(f"{PYPTO_TEST} layout.primes", [l["primes"] for l in layout["layers"]], primes))
    pinned = None
    for n in ast.walk(function("test_default_multipliers_match_pinned_numpy_rng_stream")):
        if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "expected":
            pinned = ast.literal_eval(n.value)
    if pinned is None:
        raise FixtureError(f"{path}: test_default_multipliers_match_pinned_numpy_rng_stream assigns no `expected`")
    results.append(compare(f"{PYPTO_TEST} the pinned default multipliers", [l["multipliers"] for l in layout["layers"]],
                           pinned))
    explicit = dict(plain, engram_hash_multipliers=keywords["multipliers"])
    with open(cfg, "w", encoding="utf-8") as f:
        json.dump(explicit, f)
    first = "test_first_position_uses_padding_and_bucket_offsets"
    advance = [n for n in ast.walk(function(first)) if isinstance(n, ast.Call) and ast.unparse(n.func).endswith(".advance")]
    if not advance:
        raise FixtureError(f"{path}: {first} calls no advance(...)")
    ids = ast.literal_eval(advance[0].args[0])
    out = engram(["hash", "--config", cfg, "--compressed-vocab-size", str(v), "--ids=" + ",".join(map(str, ids))], cli)
    for layer in range(len(config["engram_layer_ids"])):
        want = asserted(first, f"hashes[0][{layer}]")
        results.append(compare(f"{PYPTO_TEST} {first}: hashes[0][{layer}]", out["rows"][0][layer], want))
    return results


FIXTURES = [("lucebox", LUCEBOX_TEST, lucebox), ("pypto-serving", PYPTO_TEST, pypto)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkouts")
    ap.add_argument("--engram", default=os.path.join(ROOT, "build/release/conformance/engram"))
    args = ap.parse_args()
    found, failed, broken = 0, 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for checkout, rel, check in FIXTURES:
            path = os.path.join(args.checkouts, checkout, rel)
            if not os.path.isfile(path):
                print(f"port_fixtures: {checkout}: no {path}: not checked")
                continue
            found += 1
            try:
                results = check(path, args.engram, tmp)
            except FixtureError as e:
                print(f"port_fixtures: {checkout}: {e}", file=sys.stderr)
                broken += 1
                continue
            except Exception as e:  # anything else the file holds that this script does not read: say which file
                print(f"port_fixtures: {checkout}: {path}: not read as a fixture: {type(e).__name__}: {e}",
                      file=sys.stderr)
                broken += 1
                continue
            for problems, n in results:
                failed += len(problems)
                for p in problems:
                    print(f"port_fixtures: {checkout}: DIFFERS: {p}")
            values = sum(n for _, n in results)
            bad = sum(1 for problems, _ in results if problems)
            print(f"port_fixtures: {checkout}: {values} values in {len(results)} fixture check(s), "
                  f"{len(results) - bad} reproduced, {bad} differ")
    if broken or not found:
        if not found:
            print(f"port_fixtures: no fixture file under {args.checkouts}", file=sys.stderr)
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
