#!/usr/bin/env python3
"""JSON-lines adapter for vLLM's DeepSeek-V4.1 Engram: the CPU parts of vllm/models/deepseek_v41/common/engram.py
(compute_hash_multipliers, EngramLayout) and the pure-Python hash oracle of tests/kernels/test_engram.py
(_reference_hashes); the Triton kernels are not run. See README.md beside this file.

Run: engram conform --vectors vectors --exec "python3 conformance/ports/vllm/adapter.py --checkout DIR"
"""
import bisect
import os
import sys
from types import SimpleNamespace

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from portlib import DEAD, Adapter, Unsupported, as_int_rows, config_of, identity_len, load_defs, main  # noqa: E402

COMMON = "vllm/models/deepseek_v41/common/engram.py"
TESTS = "tests/kernels/test_engram.py"
BLOCK = 16  # the oracle's block size (its slots are table[p // 16] * 16 + p % 16)


class Vllm(Adapter):
    name = "vLLM deepseek_v41 common/engram.py + tests/kernels/test_engram.py oracle"
    version = "checkout"
    suites = ["multipliers", "layout", "hash_v41"]
    profiles = ["v4.1"]

    def __init__(self, checkout):
        super().__init__(checkout)
        self.common = load_defs(os.path.join(checkout, COMMON),
                                ["DEAD_ID", "_is_prime", "find_next_prime", "compute_hash_multipliers", "EngramLayout"],
                                {"np": np, "torch": torch, "nn": nn})
        self.tests = load_defs(os.path.join(checkout, TESTS), ["_reference_hashes"],
                               {"torch": torch, "bisect": bisect})

    def layout(self, cfg, v, pad):
        if "engram_num_embeddings" not in cfg:
            raise Unsupported("a config without engram_num_embeddings: the port's config always carries it")
        config = SimpleNamespace(
            engram_layer_ids=cfg["engram_layer_ids"], engram_num_embeddings=cfg["engram_num_embeddings"],
            engram_max_ngram_size=cfg["engram_max_ngram_size"], engram_n_heads=cfg["engram_n_heads"],
            engram_head_dim=cfg.get("engram_head_dim", 1), engram_vocab_size=cfg["engram_vocab_size"],
            engram_compressed_vocab_size=cfg.get("engram_compressed_vocab_size", v), engram_pad_token_id=pad)
        return self.common["EngramLayout"].from_config(config)

    def answer(self, suite, type_, group, test):
        if type_ == "MultipliersTest":
            if test["seed"] != 0:
                raise Unsupported("the port draws multipliers with seed 10007 * layer_id: no seed parameter")
            m = self.common["compute_hash_multipliers"]((test["layerId"],), test["maxNgram"], test["compressedVocabSize"])
            return {"multipliers": as_int_rows(m[0])}
        if type_ == "LayoutTest":
            if test["profile"] != "v4.1":
                raise Unsupported("demo-v1 layouts: the port implements v4.1 only")
            v = test["compressedVocabSize"]
            lay = self.layout(config_of(test), v, test["compressedPad"])
            # NgramHashState.__init__ refuses a token map whose size is not layout.compressed_vocab_size and
            # draws the multipliers from that size; it needs a tokenizer and a KV-cache module, so the adapter
            # makes the same comparison and the same call
            if v != lay.compressed_vocab_size:
                raise ValueError(f"Compressed vocab size mismatch: built {v}, config expects {lay.compressed_vocab_size}")
            range(v)[lay.pad_token_id]  # NgramHashState.__init__: self.pad_id = token_map[layout.pad_token_id]
            mult = self.common["compute_hash_multipliers"](lay.layer_ids, lay.max_ngram_size, v)
            return {"layers": [{"layerId": l, "multipliers": as_int_rows(mult[i]), "primes": as_int_rows(lay.primes[i]),
                                "offsets": as_int_rows(lay.offsets[i]), "numEmbeddings": int(lay.num_embeddings[i])}
                               for i, l in enumerate(lay.layer_ids)]}
        if type_ == "HashTest":
            layers = group["layers"]
            if group["compressedPad"] != 0 or len(layers[0]["multipliers"]) != 4:
                raise Unsupported("the tests' oracle is written for its tests' setup: 4 lookbacks (range(4)) and "
                                  "pad 0 (a blocked slot reads 0)")
            ids = test["ids"]
            t = len(ids)
            blocks = max(1, (t + BLOCK - 1) // BLOCK)
            out = self.tests["_reference_hashes"](
                ids, list(range(t)), list(range(t)), [0, t], [list(range(blocks))], [i == DEAD for i in ids],
                [-1] * (blocks * BLOCK),
                # range(): indexes like the list the oracle's tests pass, without building it
                range(identity_len(group["compressedVocabSize"], ids, group["compressedPad"])),
                [l["multipliers"] for l in layers], [l["primes"] for l in layers], [l["offsets"] for l in layers])
            return {"rows": as_int_rows(out)}
        raise Unsupported(f"{type_}: the stateful hash (NgramHashState) runs only as a Triton kernel")


if __name__ == "__main__":
    sys.exit(main(Vllm, __doc__))
