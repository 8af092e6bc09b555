#!/usr/bin/env python3
"""JSON-lines adapter for sglang's production Engram layer, python/sglang/srt/layers/engram.py (EngramHasher with
the scheduler's n-gram token table, engram_gate, EngramEmbedding's FP8 read), run by torch on the CPU. See
README.md beside this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/sglang-serving/adapter.py --checkout DIR"
"""
import logging
import os
import sys
from types import SimpleNamespace
from typing import Optional

import numpy as np
import torch
from torch import nn

from engram_adapter.official_api import v41_layout, v41_multipliers
from engram_adapter.torch_gate import gate_inputs, out_bits, read_gates
from engram_adapter.portlib import (Adapter, DEAD, Unsupported, as_int_rows, config_of, fp8_decode_by_rows,
                                    hash_state_test, load_defs, lookup_rows, main, PortRefusal, defined_at,
                                    replayed_rollback, test_ids)
from engram_adapter.serving import Packed, boundary_problem

import engram_numpy_port as SYNTHETIC  # (only its synthetic-table generator: a test's input bytes)

PATH = "python/sglang/srt/layers/engram.py"
NAMES = ["_OFFLOAD_LOG_EVERY", "_find_next_prime", "compute_hash_multipliers", "EngramLayout", "build_engram_layout",
         "compute_engram_hash_ids", "EngramHasher", "EngramEmbedding", "engram_gate"]
# python/sglang/srt/managers/schedule_batch.py: pad values of multimodal spans start here; the scheduler refuses a
# vocabulary as large (sanity_check_mm_pad_shift_value)
MM_PAD_SHIFT_VALUE = 1_000_000
TABLE_MAX = 1 << 22  # the longest token-table row the adapter builds (the scheduler's is the context length)
IMAGE_TOKEN_ID = -1  # config.image_token_id: a raw id no test id is once DEAD becomes a pad value


class _Struct:
    """Stand-in for msgspec.Struct (not installed with the CPU measurement): keyword fields, frozen."""

    def __init_subclass__(cls, **options):
        super().__init_subclass__()

    def __init__(self, **fields):
        for k, v in fields.items():
            object.__setattr__(self, k, v)



class SGLangServing(Adapter):
    name = "sglang python/sglang/srt/layers/engram.py (production layer, torch CPU)"
    version = "checkout"
    suites = ["multipliers", "layout", "hash_v41", "gate_v41", "table_lookup", "fp8_decode", "serving_v41"]
    profiles = ["v4.1"]

    def __init__(self, checkout):
        super().__init__(checkout)
        self.vocab = 0
        ns = {"np": np, "torch": torch, "nn": nn, "Optional": Optional, "logging": logging,
              "logger": logging.getLogger("sglang-serving"), "msgspec": SimpleNamespace(Struct=_Struct),
              "MM_PAD_SHIFT_VALUE": MM_PAD_SHIFT_VALUE, "FP8_BLOCK_SIZE": 32, "ForwardBatch": object,
              "QuantizationConfig": object,
              # the tokenizer-derived map: the identity of V ids (the hash suites give compressed ids)
              "build_compressed_token_map": lambda tokenizer: (list(range(self.vocab)), self.vocab),
              # the FP8 table layout of the arch35 branch (fp8 rows + e8m0 scales), one rank, no offload
              "is_npu_arch35": lambda: True, "is_npu": lambda: False, "get_tensor_model_parallel_world_size": lambda: 1,
              "get_tensor_model_parallel_rank": lambda: 0, "get_attention_dp_size": lambda: 1}
        self.ns = load_defs(os.path.join(checkout, PATH), NAMES, ns, future_annotations=True)
        self.hashers = {}

    # ------------------------------------------------------------------ layout

    def layout(self, cfg):
        if "engram_num_embeddings" not in cfg:
            raise Unsupported("a config without engram_num_embeddings: the port's config always carries it")
        config = SimpleNamespace(engram_layer_ids=cfg["engram_layer_ids"],
                                 engram_num_embeddings=cfg["engram_num_embeddings"],
                                 engram_max_ngram_size=cfg["engram_max_ngram_size"], engram_n_heads=cfg["engram_n_heads"],
                                 engram_head_dim=cfg.get("engram_head_dim", 1), engram_vocab_size=cfg["engram_vocab_size"])
        return self.ns["build_engram_layout"](config)

    def hasher(self, cfg, v, pad):
        if v > MM_PAD_SHIFT_VALUE:
            raise Unsupported(f"V = {v}: sglang refuses a vocabulary above MM_PAD_SHIFT_VALUE = 1,000,000 "
                              f"(schedule_batch.py sanity_check_mm_pad_shift_value), whose ids it reads as images")
        key = repr((sorted(cfg.items()), v, pad))
        if key not in self.hashers:
            lay = self.layout(cfg)
            if lay is None:
                raise PortRefusal("build_engram_layout returned None (no engram layers)",
                                  defined_at(self.ns["build_engram_layout"], self.checkout))
            self.vocab = v
            h = self.ns["EngramHasher"](lay, None, pad, cfg.get("engram_compressed_vocab_size", v))
            h.image_token_id = IMAGE_TOKEN_ID
            self.hashers = {key: (h, lay)}  # one at a time: the identity map can be a million ids
        return self.hashers[key]

    # ------------------------------------------------------------------ serving: one extend forward

    def packed(self, group, test, type_):
        """A serving_v41 test as one EngramHasher.forward over the whole buffer, padding included, as the scheduler
        hands it over: per request a row of the n-gram token table (the raw id at every position, the call's own
        ids included: the table is filled before the forward), req_pool_indices, extend_seq_lens and absolute
        positions. The token table is the sglang encoding itself; the others are written into one."""
        if type_ == "DraftTreeTest":
            raise Unsupported("tree drafts: the token table holds one id per position, and siblings share a position")
        cu = test["cuSeqlens"]
        if not cu or cu[0] != 0:
            raise Unsupported("a first boundary other than 0: the port's batch has no boundaries, only extend_seq_lens "
                              "(a length per request, the first starting at slot 0)")
        h, _ = self.hasher(config_of(group), group["compressedVocabSize"], group["compressedPad"])
        pk = Packed(group, test)
        bad = boundary_problem(test)  # the call still goes as written: the port's own handling of the boundaries

        def raw(i):
            return MM_PAD_SHIFT_VALUE if i == DEAD else i

        def slots(r):  # a boundary past the buffer's end names slots that are not there
            return [t for t in pk.slots(r) if t < len(pk.ids)]

        far = max([pk.pos[t] for r in range(pk.b) for t in slots(r)] + [0])
        if far >= TABLE_MAX:
            raise Unsupported(f"a request at position {far}: the token table holds a request's ids by position, and "
                              f"a row that long ({far + 1} ids) is not built here")
        if pk.enc == "sglang":
            table = [[raw(i) for i in row] for row in test["tokenTable"]]
        else:
            table = []
            for r in range(pk.b):
                req = pk.reqs[r]
                if not slots(r):  # no slot reads the row of a request without one
                    table.append([])
                    continue
                p = req["position"] or 0
                row = [0] * max(p - len(req["ids"]), 0) + [raw(i) for i in req["ids"]]
                table.append(row + [raw(pk.ids[t]) for t in slots(r)])
        width = max([len(row) for row in table] + [1])
        table = torch.tensor([row + [0] * (width - len(row)) for row in table], dtype=torch.int64).reshape(pk.b, width)
        batch = SimpleNamespace(ngram_embedding_info=SimpleNamespace(token_table=table),
                                req_pool_indices=torch.arange(pk.b), forward_mode=SimpleNamespace(is_decode=lambda: False),
                                extend_seq_lens=torch.tensor([cu[r + 1] - cu[r] for r in range(pk.b)]),
                                positions=torch.tensor(pk.pos, dtype=torch.int64))
        rows = self.ns["EngramHasher"].forward(h, torch.tensor([raw(i) for i in pk.ids], dtype=torch.int64), batch)
        if bad:  # the port took the boundaries: its rows go back, and the runner reports the accepted invalid input
            return {"rows": as_int_rows(rows[:pk.n])}
        return {"rows": as_int_rows(rows[:pk.n]), **pk.write([pk.consumed_state(r) for r in range(pk.b)])}

    # ------------------------------------------------------------------ gate and table

    def gate(self, group, test):
        # test["masked"] has no input here: Engram.forward / engram_gate take no token mask, so a masked position is
        # gated like any other (what the port does with it)
        x, kv, q, k, eps = gate_inputs(group, test, (1,))
        gate_fn = self.ns["engram_gate"]
        out = gate_fn(x, kv, q, k, eps, 1e-6)
        # engram_gate returns x + gate * value, never the gate: read off the same function (torch_gate.read_gates)
        gates = read_gates(lambda xf, probe: gate_fn(xf, probe, q, k, eps, 1e-6), x, kv, group, test)
        return {"gate": gates, "out": out_bits(out)}

    def lookup(self, type_, group, test):
        d, raw = lookup_rows(type_, group, test, SYNTHETIC.table_of,
                             "_lookup zeroes the rows its shard does not own (it is "
                             "not asked to refuse them)")
        bits = self.decode_rows(raw, d)
        return {"rows": ["".join(f"{int(b) & 0xFFFF:04x}" for b in row) for row in bits]}

    def decode_rows(self, raw, d):
        """EngramEmbedding.forward on a shard holding the given rows (codes, scales), one per id, in order, as
        _load_rows would copy them from a checkpoint. Returns each row's bf16 bit patterns."""
        n_s = d // 32
        emb = self.ns["EngramEmbedding"].__new__(self.ns["EngramEmbedding"])
        nn.Module.__init__(emb)
        emb.tp_size, emb.offload, emb.rows, emb.row_start = 1, None, len(raw), 0
        emb.weight = nn.Parameter(torch.tensor(np.frombuffer(b"".join(c for c, _ in raw), dtype=np.uint8).reshape(
            len(raw), d).copy()).view(torch.float8_e4m3fn), requires_grad=False)
        emb.scale = nn.Parameter(torch.tensor(np.frombuffer(b"".join(s for _, s in raw), dtype=np.uint8).reshape(
            len(raw), n_s).copy()).view(torch.float8_e8m0fnu), requires_grad=False)
        out = emb(torch.arange(len(raw), dtype=torch.int64).reshape(-1, 1))
        return out.contiguous().view(torch.int16).reshape(len(raw), d).tolist()

    # ------------------------------------------------------------------ the protocol

    def layout_parts(self, cfg, v, pad):
        """EngramHasher's multipliers and offsets and the EngramLayout it was built from (official_api.v41_layout)."""
        h, lay = self.hasher(cfg, v, pad)
        return h.multipliers, h.offsets, lay

    def answer(self, suite, type_, group, test):
        if type_ == "MultipliersTest":
            return v41_multipliers(self.ns, test)
        if type_ == "LayoutTest":
            return v41_layout(test, self.layout_parts)
        if type_ in ("HashTest", "HashStateTest"):
            cfg, v, pad = config_of(group), group["compressedVocabSize"], group["compressedPad"]
            h, _ = self.hasher(cfg, v, pad)
            if type_ == "HashTest":
                return {"rows": Request(h).append(test["ids"])}
            return hash_state_test(group, test, lambda capacity: Request(h))
        if type_ == "V41GateTest":
            return self.gate(group, test)
        if type_ in ("PackedBatchTest", "DraftTreeTest"):
            return self.packed(group, test, type_)
        if type_ in ("E4M3DecodeTest", "E8M0DecodeTest", "ElementDecodeTest"):
            if not hasattr(torch, "float8_e8m0fnu"):
                raise Unsupported(f"torch {torch.__version__} has no float8_e8m0fnu (EngramEmbedding's scale dtype)")
            # the layer decodes FP8 only in EngramEmbedding.forward: the test's codes go through a row of the table
            return fp8_decode_by_rows(type_, test, lambda codes, scales: self.decode_rows([(codes, scales)],
                                                                                         len(codes))[0])
        if type_ in ("SafetensorsLookupTest", "PackedLookupTest", "SyntheticLookupTest"):
            if not hasattr(torch, "float8_e8m0fnu"):
                raise Unsupported(f"torch {torch.__version__} has no float8_e8m0fnu (EngramEmbedding's scale dtype)")
            return self.lookup(type_, group, test)
        raise Unsupported(f"{type_}: not computed by the port's Engram layer")


class Request:
    """One request as sglang's scheduler serves it: its n-gram token table row holds the raw ids by position (an
    image position as a multimodal pad value, MM_PAD_SHIFT_VALUE and up), and each chunk is one extend forward with
    absolute positions. A rollback is the scheduler's: the request's ids are cut back."""

    def __init__(self, hasher):
        self.h, self.ids = hasher, []

    @property
    def position(self):
        return len(self.ids)

    def append(self, ids):
        if not ids:
            return []
        start = self.position
        seq = self.ids + list(ids)
        raw = [MM_PAD_SHIFT_VALUE if i == DEAD else i for i in seq]
        table = torch.tensor([raw], dtype=torch.int64)
        mode = SimpleNamespace(is_decode=lambda: False)
        batch = SimpleNamespace(ngram_embedding_info=SimpleNamespace(token_table=table),
                                req_pool_indices=torch.tensor([0]), forward_mode=mode,
                                extend_seq_lens=torch.tensor([len(ids)]),
                                positions=torch.arange(start, start + len(ids), dtype=torch.int64))
        rows = self.h.forward(torch.tensor(raw[start:], dtype=torch.int64), batch)
        self.ids = seq
        return as_int_rows(rows)

    def rollback(self, k):
        replayed_rollback(k, self.position)
        del self.ids[self.position - k:]

    def history(self):
        m = self.h.max_ngram_size - 1
        return self.ids[self.position - min(self.position, m):]

    def __deepcopy__(self, memo):
        other = Request(self.h)
        other.ids = list(self.ids)
        return other


if __name__ == "__main__":
    sys.exit(main(SGLangServing, __doc__))
