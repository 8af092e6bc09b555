#!/usr/bin/env python3
"""JSON-lines adapter for Megatron-LM pull request 3689's Engram model (megatron/core/models/engram/engram_module.py:
EngramConfig, CompressedTokenizer, NgramHashMapping, MultiHeadEmbedding, ShortConv, EngramModule; engram_model.py:
EngramTransformerLayer, EngramGPTModel), the demo-v1 profile. See README.md beside this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/megatron/adapter.py --checkout DIR"
"""
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Optional

import numpy as np
import torch
import torch.nn as nn
from sympy import isprime

from engram_adapter.demo_torch import DemoAnswers, Probe, Weights, fill_synthetic_table, floats, hexes
from engram_adapter.portlib import Adapter, IdentityTable, Unsupported, config_of, line_of, load_defs, main

MODULE = "megatron/core/models/engram/engram_module.py"
MODEL = "megatron/core/models/engram/engram_model.py"
MODULE_NAMES = ["EngramConfig", "CompressedTokenizer", "_find_next_prime", "_calculate_vocab_size_across_layers",
                "NgramHashMapping", "MultiHeadEmbedding", "ShortConv", "EngramModule"]
MODEL_NAMES = ["EngramTransformerLayer", "EngramGPTModel"]



# ---------------------------------------------------------------- stubs of the megatron.core imports of engram_model.py

class TransformerConfig:
    """megatron.core.transformer.transformer_config.TransformerConfig: the one field the Engram layer reads."""

    def __init__(self, hidden_size):
        self.hidden_size = hidden_size


class TransformerLayer(nn.Module):
    """megatron.core.transformer.transformer_layer.TransformerLayer without attention or MLP: its layer_number
    (1-based, as Megatron numbers layers; no pipeline offset) and a forward that returns the hidden states, so the
    layer's output is what EngramTransformerLayer.forward makes of them before attention."""

    def __init__(self, config, submodules, layer_number=1, **_):
        super().__init__()
        self.config, self.layer_number = config, layer_number

    def forward(self, hidden_states, *args, **kwargs):
        return hidden_states


class GPTModel(nn.Module):
    """megatron.core.models.gpt.gpt_model.GPTModel reduced to its decoder's layers (the adapter puts the Engram layer
    there): forward runs them on decoder_input, which GPTModel takes in place of its token embedding."""

    def __init__(self, config, transformer_layer_spec, **_):
        super().__init__()
        self.config = config
        self.decoder = nn.Module()
        self.decoder.layers = nn.ModuleList()

    def forward(self, input_ids, position_ids, attention_mask, decoder_input=None, **_):
        hidden = decoder_input
        for layer in self.decoder.layers:
            hidden = layer(hidden)
        return hidden


class Megatron(DemoAnswers, Adapter):
    name = "Megatron-LM pull request 3689 megatron/core/models/engram (EngramModule, demo-v1)"
    version = "checkout"
    suites = ["multipliers", "layout", "hash_demo", "gate_demo", "short_conv_demo", "engram_forward"]
    profiles = ["demo-v1"]
    source, who = MODULE, "the pull request"
    unsupported = {
        "GateFunctionTest": "the gate function alone has no entry: EngramModule.forward computes it inline from key "
                            "and query (engram_module.py:473-475)",
        "ShortConvStateTest": "ShortConv keeps no state across calls: the model convolves each forward's whole "
                              "sequence (engram_module.py:364-381)",
        "BoundedIntegersTest": "no entry draws a bounded integer alone: NgramHashMapping.__init__ calls numpy's "
                               "Generator.integers itself (engram_module.py:222-223)"}

    def __init__(self, checkout):
        super().__init__(checkout)
        # transformers / tokenizers are not imported: CompressedTokenizer is subclassed below (no download)
        ns = {"np": np, "torch": torch, "nn": nn, "math": math, "isprime": isprime, "dataclass": dataclass,
              "field": field, "Dict": Dict, "List": List, "Optional": Optional}
        self.ns = load_defs(os.path.join(checkout, MODULE), MODULE_NAMES, ns, future_annotations=True)
        port_tokenizer = self.ns["CompressedTokenizer"]

        class IdentityCompressedTokenizer(port_tokenizer):
            """The port's CompressedTokenizer (its __call__ and __len__) over the identity table of V ids: the hash
            suites give compressed ids; building the table from a tokenizer (AutoTokenizer.from_pretrained
            downloads one) is the token_map suite's business."""
            size = None

            def __init__(self, tokenizer_name_or_path):
                self.lookup_table = IdentityTable(self.size)
                self.num_new_token = self.size

        self.tokenizer_class = IdentityCompressedTokenizer
        self.ns["CompressedTokenizer"] = IdentityCompressedTokenizer
        model_ns = {"Any": Any, "Literal": Literal, "Optional": Optional, "Tensor": torch.Tensor,
                    "EngramConfig": self.ns["EngramConfig"], "EngramModule": self.ns["EngramModule"],
                    "NgramHashMapping": self.ns["NgramHashMapping"], "GPTModel": GPTModel,
                    "TransformerLayer": TransformerLayer, "TransformerConfig": TransformerConfig,
                    "ProcessGroupCollection": object, "ModuleSpec": object, "TransformerLayerSubmodules": object}
        self.model_ns = load_defs(os.path.join(checkout, MODEL), MODEL_NAMES, model_ns, future_annotations=True)
        self.models = {}

    # ------------------------------------------------------------------ the hash, through the model's own set-up

    def engram_config(self, cfg, pad, **extra):
        """EngramConfig as a Megatron user writes it (its __post_init__ checks the configuration)."""
        return self.ns["EngramConfig"](
            engram_vocab_size=list(cfg["engram_vocab_size"]), max_ngram_size=cfg["max_ngram_size"],
            n_embed_per_ngram=cfg["n_embed_per_ngram"], n_head_per_ngram=cfg["n_head_per_ngram"],
            engram_layer_ids=list(cfg["layer_ids"]), pad_id=pad, seed=cfg["seed"], tokenizer_name_or_path=None,
            **extra)

    def model(self, cfg, v, pad, hidden=1, **extra):
        """EngramGPTModel over the identity tokenizer of V ids (the raw pad under it is the compressed pad): its
        __init__ builds the NgramHashMapping from the EngramConfig (engram_model.py:144-153)."""
        key = repr((sorted(cfg.items()), v, pad, hidden, sorted(extra.items())))
        if key not in self.models:
            config = self.engram_config(cfg, pad, **extra)
            self.tokenizer_class.size = v
            self.models[key] = self.model_ns["EngramGPTModel"](
                config=TransformerConfig(hidden), transformer_layer_spec=None, vocab_size=v, max_sequence_length=1,
                engram_config=config)
        return self.models[key]

    def hash_mapping(self, cfg, v, pad):
        return self.model(cfg, v, pad).ngram_hash_mapping

    def hash_input(self, ids):
        return torch.tensor([ids], dtype=torch.int64)  # the model hands hash() its input_ids tensor

    # ------------------------------------------------------------------ gate, ShortConv, forward

    def gate(self, group, test):
        """DemoGateTest: per slot c, an EngramModule of hc_mult 1 with slot c's weights (the module gives every slot
        one hidden state, engram_module.py:463-464; each slot's gate and value read only its own weights and hidden
        state). e is the module's cached embeddings [B = 1, S = 1, K] (what precompute_embeddings leaves,
        engram_module.py:444), slot c's hidden state [S = 1, B = 1, H] the test's values c·H .. (c + 1)·H − 1: both
        as many values as the test holds, so a wrong width is for the port's layers to refuse."""
        w = Weights(group)
        hc, H, K = w.hc, w.hidden, w.inn
        cfg = {"engram_vocab_size": [2], "max_ngram_size": 2, "n_embed_per_ngram": K, "n_head_per_ngram": 1,
               "layer_ids": [1], "seed": 0}
        e = floats(test["e"]).reshape(1, 1, -1)
        hidden = floats(test["hidden"])
        gates, values = [], []
        for c in range(hc):
            engram = self.ns["EngramModule"](layer_id=1, hidden_size=H,
                                             engram_config=self.engram_config(cfg, 0, hc_mult=1, kernel_size=w.kernel),
                                             vocab_size_for_layer=[[2]])
            w.load_slot(engram, c)
            for ones in (False, True):
                engram._cached_embeddings = e  # forward clears it (engram_module.py:487)
                with Probe(engram, ones) as p, torch.no_grad():
                    engram(hidden[c * H:(c + 1) * H].reshape(1, 1, -1))
                if ones:
                    gates.append(p.value[0, 0, 0, 0])
                else:
                    values.append(p.value[0, 0, 0])
        return {"gate": hexes(torch.stack(gates)), "value": hexes(torch.stack(values))}

    def forward(self, group, test):
        """EngramForwardTest (demo-v1): per slot c, EngramGPTModel.forward (its hash of input_ids and
        precompute_embeddings) through one EngramTransformerLayer whose EngramModule has hc_mult 1 and slot c's weights;
        hidden_states [S, B = 1, H] is slot c's hidden state. The layer's output is hiddenAfter, the module's output
        `output`; a second forward with value_proj's output replaced by ones gives the gate."""
        w = Weights(group)
        cfg = config_of(group)
        if w.dilation != cfg["max_ngram_size"]:
            raise Unsupported(f"ShortConv dilation {w.dilation} with max_ngram_size {cfg['max_ngram_size']}: "
                              f"EngramModule takes the dilation from max_ngram_size (engram_module.py:421)")
        ids = [int(i) for i in test["ids"]]
        T, hc, H = len(ids), w.hc, w.hidden
        hidden = floats(test["hidden"], (T, hc, H), "hidden",
                        line_of(self.checkout, MODULE, "def forward(self, hidden_states: torch.Tensor)"))
        model = self.model(cfg, group["compressedVocabSize"], group["compressedPad"], hidden=H, hc_mult=1,
                           kernel_size=w.kernel)
        layer_id = cfg["layer_ids"][0]  # §FUS.10: the first layer
        sizes = model.ngram_hash_mapping.vocab_size_across_layers
        out, after, gate = torch.zeros(T, hc, H), torch.zeros(T, hc, H), torch.zeros(T, hc)
        for c in range(hc):
            layer = self.model_ns["EngramTransformerLayer"](
                config=model.config, submodules=None, layer_number=layer_id, engram_config=model.engram_config,
                engram_vocab_size_across_layers=sizes)
            engram = layer.engram
            w.load_slot(engram, c)
            fill_synthetic_table(engram, group["tableSeed"])
            model.decoder.layers = nn.ModuleList([layer])
            x = hidden[:, c, :].reshape(T, 1, H)
            for ones in (False, True):
                with Probe(engram, ones) as p, torch.no_grad():
                    y = model(input_ids=torch.tensor([ids], dtype=torch.int64), position_ids=None,
                              attention_mask=None, decoder_input=x)
                if ones:
                    gate[:, c] = p.value[0, :, 0, 0]
                else:
                    out[:, c, :] = p.output[:, 0, :]
                    after[:, c, :] = y[:, 0, :]
        return {"output": hexes(out), "hiddenAfter": hexes(after), "gate": hexes(gate)}

    def answer(self, suite, type_, group, test):
        return self.demo_answer(type_, group, test)


if __name__ == "__main__":
    sys.exit(main(Megatron, __doc__))
