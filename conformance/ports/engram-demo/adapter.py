#!/usr/bin/env python3
"""JSON-lines adapter for deepseek-ai/Engram's engram_demo_v1.py (NgramHashMapping, MultiHeadEmbedding),
the demo-v1 profile's source. See README.md beside this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/engram-demo/adapter.py --checkout DIR"
"""
import math
import os
import sys
from dataclasses import dataclass, field
from typing import List

import numpy as np
import torch
import torch.nn as nn
from sympy import isprime

from engram_adapter.portlib import Adapter, IdentityTable, Unsupported, as_int_rows, config_of, load_defs, main

PATH = "engram_demo_v1.py"
NAMES = ["CompressedTokenizer", "find_next_prime", "NgramHashMapping", "MultiHeadEmbedding"]



class Demo(Adapter):
    name = "deepseek-ai/Engram engram_demo_v1.py"
    version = "checkout"
    suites = ["multipliers", "layout", "hash_demo"]
    profiles = ["demo-v1"]

    def __init__(self, checkout):
        super().__init__(checkout)
        ns = {"np": np, "torch": torch, "nn": nn, "isprime": isprime, "List": List, "math": math,
              "dataclass": dataclass, "field": field}
        self.ns = load_defs(os.path.join(checkout, PATH), NAMES, ns)
        port_tokenizer = self.ns["CompressedTokenizer"]

        class IdentityCompressedTokenizer(port_tokenizer):
            """The port's CompressedTokenizer (its _compress and __len__) over the identity table of V ids:
            the hash suites give compressed ids; building the table from a tokenizer is the token_map
            suite's business (AutoTokenizer.from_pretrained downloads one)."""
            size = None

            def __init__(self, tokenizer_name_or_path):
                self.lookup_table = IdentityTable(self.size)
                self.num_new_token = self.size

        self.tokenizer_class = IdentityCompressedTokenizer
        self.ns["CompressedTokenizer"] = IdentityCompressedTokenizer
        self.mappings = {}

    def mapping(self, cfg, v, pad, layer_ids=None, max_ngram=None, seed=None):
        layer_ids = cfg["layer_ids"] if layer_ids is None else layer_ids
        max_ngram = cfg["max_ngram_size"] if max_ngram is None else max_ngram
        seed = cfg["seed"] if seed is None else seed
        key = repr((sorted(cfg.items()), v, pad, layer_ids, max_ngram, seed))
        if key not in self.mappings:
            self.tokenizer_class.size = v
            # the raw pad under the identity table is the compressed pad
            self.mappings[key] = self.ns["NgramHashMapping"](
                engram_vocab_size=cfg["engram_vocab_size"], max_ngram_size=max_ngram,
                n_embed_per_ngram=cfg["n_embed_per_ngram"], n_head_per_ngram=cfg["n_head_per_ngram"],
                layer_ids=layer_ids, tokenizer_name_or_path=None, pad_id=pad, seed=seed)
        return self.mappings[key]

    def offsets(self, mapping, layer):
        # the row ids the demo looks up are residue + MultiHeadEmbedding.offsets; D = 0 builds the offsets
        # without allocating the table (its width plays no part in the ids)
        list_of_n = [x for y in mapping.vocab_size_across_layers[layer] for x in y]
        emb = self.ns["MultiHeadEmbedding"](list_of_N=list_of_n, D=0)
        return emb.offsets, sum(list_of_n)

    def answer(self, suite, type_, group, test):
        if type_ == "MultipliersTest":
            m = test["maxNgram"]
            cfg = {"engram_vocab_size": [2] * max(m - 1, 0), "n_embed_per_ngram": 1, "n_head_per_ngram": 1,
                   "layer_ids": [test["layerId"]], "max_ngram_size": m, "seed": test["seed"]}
            mp = self.mapping(cfg, test["compressedVocabSize"], 0)
            return {"multipliers": as_int_rows(mp.layer_multipliers[test["layerId"]])}
        if type_ == "LayoutTest":
            if test["profile"] != "demo-v1":
                raise Unsupported("v4.1 layouts: the demo implements demo-v1 only")
            cfg = config_of(test)
            mp = self.mapping(cfg, test["compressedVocabSize"], test["compressedPad"])
            layers = []
            for layer in mp.layer_ids:
                offsets, rows = self.offsets(mp, layer)
                layers.append({"layerId": layer, "multipliers": as_int_rows(mp.layer_multipliers[layer]),
                               "primes": as_int_rows(mp.vocab_size_across_layers[layer]),
                               "offsets": as_int_rows(offsets), "numEmbeddings": int(rows)})
            return {"layers": layers}
        if type_ == "HashTest":
            cfg = config_of(group)
            mp = self.mapping(cfg, group["compressedVocabSize"], group["compressedPad"])
            ids = test["ids"]
            if not ids:
                return {"rows": []}
            by_layer = mp.hash(np.array([ids], dtype=np.int64))
            per_layer = []
            for layer in mp.layer_ids:
                offsets, _ = self.offsets(mp, layer)
                per_layer.append(torch.from_numpy(by_layer[layer][0]) + offsets)  # [T, C]
            return {"rows": as_int_rows(torch.stack(per_layer, dim=1))}
        raise Unsupported(f"{type_}: the demo hashes whole sequences (no per-sequence state)")


if __name__ == "__main__":
    sys.exit(main(Demo, __doc__))
