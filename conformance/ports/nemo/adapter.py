#!/usr/bin/env python3
"""JSON-lines adapter for NVIDIA-NeMo/Automodel's DeepSeek-V4.1 Engram,
nemo_automodel/components/models/deepseek_v41/engram.py (EngramLayout, DeepseekV41EngramHasher, and
DeepseekV41Engram's gate and wkv, the wkv built by nemo_automodel/components/models/common/utils.py). See README.md.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/nemo/adapter.py --checkout DIR"
"""
import importlib.util
import logging
import os
import sys
import warnings
from contextlib import nullcontext
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from engram_adapter.portlib import DEAD, Adapter, Unsupported, as_int_rows, config_of, identity_map, load_defs, main, test_ids
from engram_adapter.official_api import fill, v41_layout, v41_multipliers
from engram_adapter.torch_gate import bf16_tensor, layer_gate, out_bits

PATH = "nemo_automodel/components/models/deepseek_v41/engram.py"
NAMES = ["_MULTIPLIER_SEED", "_DEAD_TOKEN", "_is_prime", "find_next_prime", "compute_hash_multipliers",
         "EngramLayout", "DeepseekV41EngramHasher", "DeepseekV41Engram"]
# the backend config and the linear factory engram.py imports (from nemo_automodel.components.models.common)
UTILS = "nemo_automodel/components/models/common/utils.py"
UTILS_NAMES = ["HAVE_TE", "HAVE_DEEP_EP", "HAVE_UCCL_EP", "TEFp8Config", "BackendConfig", "initialize_linear_module"]


class _LocalTable(nn.Module):
    """Stand-in for the table Qwen3_8_FlashNextEngramTableConfig.build returns (another file of the port, not
    read) in the one-process case DeepseekV41Engram asks for without a process group: the whole table local."""

    def __init__(self, num_embeddings, embedding_dim, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(num_embeddings, embedding_dim, dtype=dtype))
        self.global_row_start, self.process_group = 0, None

    def mark_sharding_contract(self):
        pass

    def forward(self, ids):
        return self.weight[ids]


class _TableConfig:
    """Stand-in for Qwen3_8_FlashNextEngramTableConfig (keyword fields, build(process_group, dtype))."""

    def __init__(self, num_embeddings, embedding_dim, initializer_range):
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim

    def build(self, process_group=None, dtype=torch.bfloat16):
        return _LocalTable(self.num_embeddings, self.embedding_dim, dtype)


class _NoDTensor:
    """Stand-in for torch.distributed.tensor.DTensor: one process holds no sharded tensor."""


def _dtype_of(value, default):
    """Stand-in for nemo_automodel.shared.utils.dtype_from_str (not read): the adapter passes torch dtypes."""
    return value if isinstance(value, torch.dtype) else default


# the names engram.py imports from the rest of nemo_automodel that are not restored, stubbed (README.md): the table
# above, the dtype of the config (BackendConfig and initialize_linear_module are the port's, from UTILS)
STUBS = {"dist": torch.distributed, "DTensor": _NoDTensor, "Qwen3_8_FlashNextEngramTableConfig": _TableConfig,
         "get_dtype": _dtype_of}


class Nemo(Adapter):
    name = "NeMo Automodel deepseek_v41/engram.py DeepseekV41EngramHasher"
    version = "checkout"
    suites = ["multipliers", "layout", "hash_v41", "gate_v41"]
    profiles = ["v4.1"]

    def __init__(self, checkout):
        super().__init__(checkout)
        utils = load_defs(os.path.join(checkout, UTILS), UTILS_NAMES,
                          {"importlib": importlib, "torch": torch, "nn": nn, "dataclass": dataclass, "Any": Any,
                           "Literal": Literal, "nullcontext": nullcontext, "warnings": warnings,
                           "logger": logging.getLogger("nemo_automodel"), "dtype_from_str": _dtype_of})
        # the backend NeMo picks by default: on a machine without CUDA (or Transformer Engine), linear = "torch"
        self.backend = utils["BackendConfig"]()
        ns = {"np": np, "torch": torch, "nn": nn, "dataclass": dataclass, **STUBS,
              "BackendConfig": utils["BackendConfig"], "initialize_linear_module": utils["initialize_linear_module"]}
        self.ns = load_defs(os.path.join(checkout, PATH), NAMES, ns, future_annotations=True)
        self.layouts = {}

    def hasher(self, cfg, v, pad, ids=()):
        prefix, raw_pad = identity_map(v, list(ids), pad)  # portlib.identity_map
        table = torch.arange(prefix, dtype=torch.int64)
        if raw_pad == prefix:
            table = torch.cat([table, torch.tensor([pad], dtype=torch.int64)])
        if "engram_num_embeddings" not in cfg:
            raise Unsupported("a config without engram_num_embeddings: the port's config always carries it")
        config = SimpleNamespace(
            engram_layer_ids=cfg["engram_layer_ids"], engram_enabled=True,
            engram_max_ngram_size=cfg["engram_max_ngram_size"], engram_n_heads=cfg["engram_n_heads"],
            engram_vocab_size=cfg["engram_vocab_size"], engram_num_embeddings=cfg["engram_num_embeddings"],
            engram_head_dim=cfg.get("engram_head_dim", 1),
            engram_compressed_vocab_size=cfg.get("engram_compressed_vocab_size", v),
            # the model vocabulary is the identity-mapped V (raw id c is compressed id c; a prefix of it when
            # V is huge, portlib.identity_len) ...
            vocab_size=int(table.numel()),
            # ... so the raw pad is the compressed pad (or the extra entry that holds it)
            engram_pad_token_id=raw_pad)
        key = repr(sorted(cfg.items()))
        if key not in self.layouts:
            self.layouts[key] = self.ns["EngramLayout"].from_config(config)
        hasher = self.ns["DeepseekV41EngramHasher"](config, self.layouts[key])
        if not hasher.has_token_map:  # a prefix map, or the config's size differs from V (the port refuses)
            hasher.set_token_map(table, v)
        return hasher

    def engram(self, dim, hc, eps, head_dim=32):
        """DeepseekV41Engram of one layer with one hash column of head_dim (table row 0), built by its own constructor
        on one process (no process group: the whole table local), bf16 as the model's torch_dtype, with the default
        backend (BackendConfig())."""
        lay = self.ns["EngramLayout"](max_ngram_size=2, layer_ids=(0,), num_embeddings=(1,), primes=(((2,),),),
                                      n_heads=1, head_dim=head_dim)
        config = SimpleNamespace(hidden_size=dim, hc_mult=hc, rms_norm_eps=eps, torch_dtype=torch.bfloat16,
                                 engram_trainable=False)
        return self.ns["DeepseekV41Engram"](config, 0, lay, self.backend)

    def wkv(self, test):
        """WkvTest through the layer's own wkv: DeepseekV41Engram built with one hash column of K = len(e) and hc_mult
        0, dim N (its wkv has K in and dim * (hc_mult + 1) = N out features), its weight holding the test's."""
        if "weight" not in test:
            raise Unsupported("an fp8 wkv: the port's wkv is initialize_linear_module(backend.linear, ...) on the "
                              "model dtype, torch's nn.Linear on a bf16 weight with the torch backend: no fp8 weight "
                              "and no activation quantization")
        e = test["e"]
        k, n = len(e), test["outFeatures"]
        layer = self.engram(n, 0, 1e-6, head_dim=k)
        fill(layer.wkv.weight, bf16_tensor(test["weight"], (len(test["weight"]),)), "weight")
        with torch.no_grad():
            return {"kv": out_bits(layer.wkv(bf16_tensor(e, (1, k))))}

    def layout_parts(self, cfg, v, pad):
        """The hasher's multipliers and offsets and its layout (official_api.v41_layout)."""
        h = self.hasher(cfg, v, pad)
        return h.multipliers, h.offsets, h.layout

    def answer(self, suite, type_, group, test):
        if type_ == "V41GateTest":
            # forward(x, hash_ids, token_mask) with its wkv giving way to the test's kv (torch_gate.layer_gate)
            return layer_gate(self.engram, group, test)
        if type_ == "MultipliersTest":
            return v41_multipliers(self.ns, test)
        if type_ == "LayoutTest":
            return v41_layout(test, self.layout_parts)
        if type_ == "HashTest":
            v, pad = group["compressedVocabSize"], group["compressedPad"]
            h = self.hasher(config_of(group), v, pad, test["ids"])
            ids = test["ids"]
            t = torch.tensor([[0 if i == DEAD else i for i in ids]], dtype=torch.int64)  # DEAD: token_mask
            mask = torch.tensor([[i != DEAD for i in ids]], dtype=torch.bool)
            pos = torch.arange(len(ids), dtype=torch.int64)[None, :]
            return {"rows": as_int_rows(h(t, pos, mask)[0])}
        if type_ == "HashStateTest":
            raise Unsupported("the port's hasher is stateless (training sees the whole sequence; a chunk cannot "
                              "continue an earlier one)")
        if type_ == "GateFunctionTest":
            raise Unsupported("the gate is one expression inside DeepseekV41Engram.forward, with no entry of its own")
        if type_ == "WkvTest":
            return self.wkv(test)
        raise Unsupported(f"{type_}: no entry in the port's file (README.md)")


if __name__ == "__main__":
    sys.exit(main(Nemo, __doc__))
