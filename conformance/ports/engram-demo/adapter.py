#!/usr/bin/env python3
"""JSON-lines adapter for deepseek-ai/Engram's engram_demo_v1.py (NgramHashMapping, MultiHeadEmbedding, ShortConv,
Engram, TransformerBlock), the demo-v1 profile's source. See README.md beside this file.

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

from engram_adapter.demo_torch import DemoAnswers, Probe, Weights, fill_synthetic_table, floats, hexes
from engram_adapter.portlib import Adapter, IdentityTable, Unsupported, config_of, line_of, load_defs, main

PATH = "engram_demo_v1.py"
NAMES = ["EngramConfig", "BackBoneConfig", "CompressedTokenizer", "ShortConv", "find_next_prime", "NgramHashMapping",
         "_HASH_MAPPING_CACHE", "get_or_create_hash_mapping", "MultiHeadEmbedding", "Engram", "TransformerBlock"]



class Demo(DemoAnswers, Adapter):
    name = "deepseek-ai/Engram engram_demo_v1.py"
    version = "checkout"
    suites = ["multipliers", "layout", "hash_demo", "gate_demo", "short_conv_demo", "engram_forward"]
    profiles = ["demo-v1"]
    source, who = PATH, "the demo"
    unsupported = {
        "GateFunctionTest": "the gate function alone has no entry: Engram.forward computes it inline from key and "
                            "query (engram_demo_v1.py:408-410)",
        "ShortConvStateTest": "ShortConv keeps no state across calls: it convolves each forward's whole sequence "
                              "(engram_demo_v1.py:156-179)",
        "BoundedIntegersTest": "no entry draws a bounded integer alone: NgramHashMapping.__init__ calls numpy's "
                               "Generator.integers itself (engram_demo_v1.py:223-228)"}

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
                # Engram's configurations name the size (the demo's mapping cache is keyed on the name)
                size = self.size if tokenizer_name_or_path is None else int(tokenizer_name_or_path.split(":")[1])
                self.lookup_table = IdentityTable(size)
                self.num_new_token = size

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

    def hash_mapping(self, cfg, v, pad):
        return self.mapping(cfg, v, pad)

    def hash_input(self, ids):
        return np.array([ids], dtype=np.int64)

    def answer(self, suite, type_, group, test):
        return self.demo_answer(type_, group, test)

    # ------------------------------------------------------------------ gate, ShortConv, forward

    def configure(self, cfg, v, pad, w):
        """The demo's module-level engram_cfg and backbone_config (Engram and TransformerBlock read them when built
        and when run, engram_demo_v1.py:57-58): the test's configuration, a tokenizer name that gives the identity
        table of v ids, and a backbone of the group's hidden size and hc."""
        self.ns["engram_cfg"] = self.ns["EngramConfig"](
            tokenizer_name_or_path=f"identity:{v}", engram_vocab_size=list(cfg["engram_vocab_size"]),
            max_ngram_size=cfg["max_ngram_size"], n_embed_per_ngram=cfg["n_embed_per_ngram"],
            n_head_per_ngram=cfg["n_head_per_ngram"], layer_ids=list(cfg["layer_ids"]), pad_id=pad, seed=cfg["seed"],
            kernel_size=w.kernel)
        self.ns["backbone_config"] = self.ns["BackBoneConfig"](hidden_size=w.hidden, hc_mult=w.hc)

    def gate(self, group, test):
        """DemoGateTest: Engram.forward (hc slots at once) on one position whose looked-up embeddings are the test's
        e (a hook replaces multi_head_embedding's output by e as [B = 1, L = 1, heads = 1, K], which the forward
        flattens, engram_demo_v1.py:401); the configuration is one order (max_ngram_size 2) of one head of width
        K. e is handed over with as many values as the test holds, so a wrong width is for key_projs to refuse."""
        w = Weights(group)
        hc, H, K = w.hc, w.hidden, w.inn
        cfg = {"engram_vocab_size": [2], "max_ngram_size": 2, "n_embed_per_ngram": K, "n_head_per_ngram": 1,
               "layer_ids": [0], "seed": 0}
        self.configure(cfg, 2, 0, w)
        engram = self.ns["Engram"](layer_id=0)
        w.load(engram)
        e = floats(test["e"]).reshape(1, 1, 1, -1)
        hidden = floats(test["hidden"], (1, 1, hc, H), "hidden",
                        line_of(self.checkout, PATH, "query = hidden_states[:,:,hc_idx,:]"))
        out = {}
        for ones in (False, True):
            with Probe(engram, ones, embeddings=e) as p, torch.no_grad():
                engram(hidden_states=hidden, input_ids=np.zeros((1, 1), dtype=np.int64))
            out[ones] = p.value[0, 0]  # [hc, H]
        return {"gate": hexes(out[True][:, 0]), "value": hexes(out[False])}

    def forward(self, group, test):
        """EngramForwardTest (demo-v1): TransformerBlock.forward of the first layer (§FUS.10) on the test's ids and
        hidden states [B = 1, T, hc, H]: its Engram hashes the ids and looks them up in its table, filled with the
        synthetic table, and the block adds the residual (hiddenAfter). The demo's attention and MoE are mocks
        (identity lambdas, engram_demo_v1.py:420-421) that the block adds to the stream again; the adapter makes
        them zero so the block's output is the Engram residual. `output` is Engram's output (a forward hook); a
        second forward with value_proj's output replaced by ones gives the gate."""
        w = Weights(group)
        cfg = config_of(group)
        if w.dilation != cfg["max_ngram_size"]:
            raise Unsupported(f"ShortConv dilation {w.dilation} with max_ngram_size {cfg['max_ngram_size']}: "
                              f"Engram takes the dilation from max_ngram_size (engram_demo_v1.py:384)")
        ids = [int(i) for i in test["ids"]]
        T, hc, H = len(ids), w.hc, w.hidden
        hidden = floats(test["hidden"], (1, T, hc, H), "hidden",
                        line_of(self.checkout, PATH, "query = hidden_states[:,:,hc_idx,:]"))
        self.tokenizer_class.size = group["compressedVocabSize"]
        self.configure(cfg, group["compressedVocabSize"], group["compressedPad"], w)
        block = self.ns["TransformerBlock"](layer_id=cfg["layer_ids"][0])
        block.attn = block.moe = torch.zeros_like
        engram = block.engram
        w.load(engram)
        fill_synthetic_table(engram, group["tableSeed"])
        input_ids = torch.tensor([ids], dtype=torch.int64)
        res = {}
        for ones in (False, True):
            with Probe(engram, ones) as p, torch.no_grad():
                after = block(input_ids=input_ids, hidden_states=hidden)
            if ones:
                res["gate"] = hexes(p.value[0, :, :, 0])
            else:
                res["output"], res["hiddenAfter"] = hexes(p.output[0]), hexes(after[0])
        return res


if __name__ == "__main__":
    sys.exit(main(Demo, __doc__))
