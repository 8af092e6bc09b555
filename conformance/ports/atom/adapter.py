#!/usr/bin/env python3
"""JSON-lines adapter for ROCm/ATOM's DeepSeek-V4.1 Engram: the hasher, atom/models/deepseek_v41_engram.py
(compute_hash_multipliers, EngramLayout, NgramHashState with its serving-side build_history), and the module's
table and gate, atom/models/deepseek_v41.py (EngramEmbedding, Engram: their torch paths), run by torch on the CPU.
See README.md beside this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/atom/adapter.py --checkout DIR"
"""
import json
import os
import sys
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import torch
from torch import nn

from engram_adapter.portlib import (DEAD, Adapter, Unsupported, as_int_rows, config_of, fp8_decode_by_rows,
                                    hash_state_test, identity_map, load_defs, lookup_table, main, PortRefusal,
                                    defined_at, test_ids)
from engram_adapter.official_api import byte_tensor, fill, v41_layout, v41_multipliers
from engram_adapter.serving import Packed, boundary_problem
from engram_adapter.torch_gate import layer_gate

PATH = "atom/models/deepseek_v41_engram.py"
NAMES = ["_is_prime", "_next_prime", "compute_hash_multipliers", "EngramLayout", "NgramHashState"]
MODEL = "atom/models/deepseek_v41.py"
MODEL_NAMES = ["_V41_ENGRAM_AITER", "_V41_ENGRAM_FUSED_GATE", "_ENGRAM_SCALE_BLOCK", "_aiter_op", "EngramEmbedding",
               "Engram"]
WKV = ("the wkv is ReplicatedLinear (atom/models/deepseek_v41.py:1441-1447), whose forward is aiter's: "
       "atom/model_ops/linear.py imports its GEMMs from aiter at module level (:9-23) and LinearBase.forward runs "
       "tgemm.mm (a bf16 weight) or quant_fp8_blockwise + gemm_a8w8_blockscale (the 32 x 32 fp8 grid), with no "
       "CPU path")


class _NoOps:
    """aiter as the module's torch paths see it here: no engram op (`_aiter_op` gives None, deepseek_v41.py:1345),
    so EngramEmbedding and Engram take their torch fallbacks. aiter itself (ROCm kernels) does not import on a CPU."""


class _AiterLinear(nn.Module):
    """Stand-in for ReplicatedLinear (atom/model_ops/linear.py, aiter GEMMs): built by Engram.__init__, never run
    here (the gate's wkv gives way to the test's kv; WkvTest and engram_forward are unsupported: WKV)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        raise Unsupported(WKV)


def _one_rank():
    return SimpleNamespace(rank_in_group=0, world_size=1)


# the names deepseek_v41.py imports that its Engram classes read, for one rank: tensor parallel size 1 (aiter.dist),
# atom_parameter as atom/model_ops/utils.py builds it with ATOM_REQUIRES_GRAD unset (a parameter without grad)
MODEL_STUBS = {"aiter": _NoOps(), "get_tensor_model_parallel_world_size": lambda: 1, "get_tp_group": _one_rank,
               "atom_parameter": lambda data: nn.Parameter(data, requires_grad=False),
               "ReplicatedLinear": _AiterLinear, "tensor_model_parallel_all_reduce": None}


class IdentityList:
    """The identity token map as the port's `token_map: list[int]` (torch.tensor(token_map) takes any sequence):
    raw id c is compressed id c for c < prefix, then one entry holding the compressed pad (portlib.identity_map)."""

    def __init__(self, prefix, pad_entry):
        self.prefix, self.pad_entry = prefix, pad_entry

    def tensor(self):
        t = torch.arange(self.prefix, dtype=torch.int64)
        return t if self.pad_entry is None else torch.cat([t, torch.tensor([self.pad_entry], dtype=torch.int64)])


class Session:
    """One sequence: the port's slot_state ([1, lookback], newest first, DEAD where unavailable) carried across
    calls, as the engine carries it per request slot; positions are absolute."""

    def __init__(self, state):
        self.state = state
        self.lb = state.lookback
        self.slot = torch.full((1, self.lb), DEAD, dtype=torch.int64)
        self.position = 0

    def append(self, ids):
        if not ids:
            return []
        t = torch.tensor(ids, dtype=torch.int64)
        pos = torch.arange(self.position, self.position + len(ids), dtype=torch.int64)
        cu = torch.tensor([0, len(ids)], dtype=torch.int64)
        hist = self.state.build_history(t, pos, cu, self.slot)
        rows = self.state(t, pos, hist, t != DEAD)
        self.position += len(ids)
        return as_int_rows(rows)

    def rollback(self, k):
        if k:
            raise Unsupported("the port keeps only the last max_ngram - 1 ids per slot (slot_state): no rollback")

    def history(self):
        h = min(self.position, self.lb)
        return [int(x) for x in reversed(self.slot[0, :h].tolist())]

    def __deepcopy__(self, memo):
        other = Session(self.state)
        other.slot, other.position = self.slot.clone(), self.position
        return other


class Atom(Adapter):
    name = "ROCm/ATOM atom/models/deepseek_v41_engram.py (torch, CPU)"
    version = "checkout"
    suites = ["multipliers", "layout", "hash_v41", "serving_v41", "gate_v41", "table_lookup", "fp8_decode"]
    profiles = ["v4.1"]

    def __init__(self, checkout):
        super().__init__(checkout)
        self.ns = load_defs(os.path.join(checkout, PATH), NAMES,
                            {"np": np, "torch": torch, "nn": nn, "dataclass": dataclass})
        self.layouts = {}
        self._model = None

    @property
    def model(self):
        """deepseek_v41.py's Engram classes, loaded at their first use: the hash suites run without them, on a torch
        without float8_e4m3fn, the dtype of EngramEmbedding's table (torch < 2.1: unsupported)."""
        if not hasattr(torch, "float8_e4m3fn"):
            raise Unsupported(f"torch {torch.__version__} has no float8_e4m3fn (EngramEmbedding's table, "
                              "atom/models/deepseek_v41.py:1373-1375)")
        if self._model is None:
            self._model = load_defs(os.path.join(self.checkout, MODEL), MODEL_NAMES,
                                    {"os": os, "torch": torch, "nn": nn, **MODEL_STUBS}, future_annotations=True)
        return self._model

    def decode(self, raw, d, local):
        """EngramEmbedding of the given rows (codes, scales) on one rank, read at the row ids `local` by its torch
        path: each row's bf16 bit patterns."""
        emb = self.model["EngramEmbedding"](len(raw), d, block=self.model["_ENGRAM_SCALE_BLOCK"])
        fill(emb.weight, byte_tensor([c for c, _ in raw], (len(raw), d)), "codes")
        fill(emb.weight_scale, byte_tensor([s for _, s in raw], (len(raw), len(raw[0][1]))), "scales")
        out = emb(torch.tensor(local, dtype=torch.int64))
        return out.contiguous().view(torch.int16).reshape(len(local), d).tolist()

    def lookup(self, type_, group, test):
        import engram_numpy_port as synthetic  # (only its synthetic-table generator: a test's input bytes)
        d, raw, local = lookup_table(type_, group, test, synthetic.table_of)
        return {"rows": ["".join(f"{int(b) & 0xFFFF:04x}" for b in row) for row in self.decode(raw, d, local)]}

    def gate(self, group, test):
        """V41GateTest through Engram.forward (its torch gate) with one hash column of 32 on one rank: the table read
        and the wkv give way to the test's kv (torch_gate.layer_gate)."""
        model = self.model
        layout = self.ns["EngramLayout"](max_ngram_size=2, layer_ids=(0,), num_embeddings=(1,), primes=(((2,),),),
                                         n_heads=1, head_dim=32)

        def make(dim, hc, eps):
            e = model["Engram"](SimpleNamespace(dim=dim, hc_mult=hc, norm_eps=eps, quant_config=None), 0, layout)
            e.embed = nn.Identity()
            return e
        return layer_gate(make, group, test)

    def layout(self, cfg):
        key = json.dumps(cfg, sort_keys=True)
        if key not in self.layouts:
            args = SimpleNamespace(
                engram_layer_ids=cfg["engram_layer_ids"], engram_max_ngram_size=cfg["engram_max_ngram_size"],
                engram_n_heads=cfg["engram_n_heads"], engram_vocab_size=cfg["engram_vocab_size"],
                engram_num_embeddings=cfg["engram_num_embeddings"], engram_head_dim=cfg.get("engram_head_dim", 0))
            self.layouts[key] = self.ns["EngramLayout"].from_args(args)
        return self.layouts[key]

    def state(self, cfg, v, pad, ids=()):
        if "engram_num_embeddings" not in cfg:
            raise Unsupported("a config without engram_num_embeddings: the port's args always carry it")
        layout = self.layout(cfg)
        if layout is None:
            raise PortRefusal("EngramLayout.from_args returned None (no engram layers)",
                              defined_at(self.ns["EngramLayout"].from_args, self.checkout))
        prefix, raw_pad = identity_map(v, list(ids), pad)
        table = IdentityList(prefix, pad if raw_pad == prefix else None).tensor()
        # the compressed vocabulary size as the engine passes it, from the config (the token map is built apart)
        return self.ns["NgramHashState"](layout, table, cfg.get("engram_compressed_vocab_size", v), raw_pad), layout

    def packed(self, group, test, type_):
        """A serving_v41 test as the engine's step: build_history over the flat batch (cu_seqlens, each request's
        slot_state row carried in, newest first, and updated in place), then forward with the token mask. The
        slot_state after the call is the state written back."""
        if type_ == "DraftTreeTest":
            raise Unsupported("tree drafts: build_history reads a slot's look-back from the slots before it in its "
                              "request's run, and takes no parent indices")
        cfg, v, pad = config_of(group), group["compressedVocabSize"], group["compressedPad"]
        cu = test["cuSeqlens"]
        if boundary_problem(test):  # the call goes as the test writes it: the port's own handling of the boundaries
            ids = torch.tensor(test["ids"], dtype=torch.int64)
            st = self.state(cfg, v, pad, [i for i in test["ids"] if i >= 0])[0]
            slot = torch.full((max(len(cu) - 1, 0), st.lookback), DEAD, dtype=torch.int64)
            pos = torch.tensor(test["positions"], dtype=torch.int64)
            hist = st.build_history(ids, pos, torch.tensor(cu, dtype=torch.int64), slot)
            return {"rows": as_int_rows(st(ids, pos, hist, ids != DEAD))}
        pk = Packed(group, test)
        # the flat batch is the requests' contiguous runs: build_history sizes its per-slot request index by the
        # boundaries (torch.repeat_interleave over cu_seqlens), so the padding after cuSeqlens[B] is not passed
        raw = pk.raw_ids(fill=DEAD)[:pk.n]
        history = [u for q in pk.reqs for u in q["under"] if u >= 0]
        st = self.state(cfg, v, pad, [i for i in raw if i >= 0] + history)[0]
        w = st.lookback
        slot = torch.full((pk.b, w), DEAD, dtype=torch.int64)
        for r, q in enumerate(pk.reqs):  # newest first, DEAD where masked or before the start
            for c, x in enumerate(reversed(q["ids"])):
                slot[r, c] = x
        ids = torch.tensor(raw, dtype=torch.int64)
        pos = torch.tensor(pk.pos[:pk.n], dtype=torch.int64)
        hist = st.build_history(ids, pos, torch.tensor(cu, dtype=torch.int64), slot)
        rows = st(ids, pos, hist, torch.tensor([not d for d in pk.dead[:pk.n]], dtype=torch.bool))
        states = []
        for r in range(pk.b):  # the port's slot_state, as the request's last ids
            s = pk.consumed_state(r)
            k = len(s["ids"])
            got = [int(x) for x in reversed(slot[r, :k].tolist())]
            s["under"] = [y if y != DEAD else u for y, u in zip(got, s["under"])]
            s["ids"] = got
            states.append(s)
        return {"rows": as_int_rows(rows), **pk.write(states)}

    def layout_parts(self, cfg, v, pad):
        """The hasher's multipliers and offsets and the EngramLayout it was built from (official_api.v41_layout)."""
        state, layout = self.state(cfg, v, pad)
        return state.multipliers, state.offsets, layout

    def answer(self, suite, type_, group, test):
        if type_ == "MultipliersTest":
            return v41_multipliers(self.ns, test)
        if type_ == "LayoutTest":
            return v41_layout(test, self.layout_parts)
        if type_ in ("HashTest", "HashStateTest"):
            cfg, v, pad = config_of(group), group["compressedVocabSize"], group["compressedPad"]
            ids = test_ids(test)

            def new_session(capacity):
                return Session(self.state(cfg, v, pad, ids)[0])

            if type_ == "HashTest":
                return {"rows": new_session(0).append(test["ids"])}
            return hash_state_test(group, test, new_session)
        if type_ in ("PackedBatchTest", "DraftTreeTest"):
            return self.packed(group, test, type_)
        if type_ == "V41GateTest":
            return self.gate(group, test)
        if type_ in ("SafetensorsLookupTest", "PackedLookupTest", "SyntheticLookupTest"):
            return self.lookup(type_, group, test)
        if type_ in ("E4M3DecodeTest", "E8M0DecodeTest", "ElementDecodeTest"):
            # the module decodes FP8 only in EngramEmbedding.forward: the test's codes go through a row of the table
            return fp8_decode_by_rows(type_, test, lambda codes, scales: self.decode([(codes, scales)], len(codes),
                                                                                   [0])[0])
        if type_ == "WkvTest":
            raise Unsupported(WKV)
        if type_ == "GateFunctionTest":
            raise Unsupported("the gate is one expression inside Engram.forward (atom/models/deepseek_v41.py:1467-"
                              "1478), with no entry of its own")
        raise Unsupported(f"{type_}: not part of the port's Engram hash code")


if __name__ == "__main__":
    sys.exit(main(Atom, __doc__))
