#!/usr/bin/env python3
"""JSON-lines adapter for vLLM's DeepSeek-V4.1 Engram Triton kernels (vllm/models/deepseek_v41/common/engram.py:
_hash_ids_kernel through NgramHashState.forward, _engram_lookup_kernel through ParallelEngramEmbedding.lookup,
_engram_dequant_packed_kernel through dequantize_packed_engram_rows), run on the CPU by Triton's interpreter
(TRITON_INTERPRET=1). _fused_engram_post_wkv_kernel does not run there (README.md says which construct stops it).
See README.md beside this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/vllm-triton/adapter.py --checkout DIR"
"""
import os
import sys
import weakref
from types import SimpleNamespace

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: every @triton.jit runs on the CPU

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from engram_adapter.portlib import (DEAD, Adapter, Unsupported, hash_state_test, identity_map, main, replayed_rollback,
                                    test_ids)
from engram_adapter.serving import Packed, boundary_problem

import engram_numpy_port as SYNTHETIC  # (only its synthetic-table generator: a test's input bytes)

# The launchers size their grids from the GPU's SM count (torch.cuda.get_device_properties); on the CPU the
# interpreter runs any grid, so the query answers a fixed count (the grid-stride loops cover every row).
if not torch.cuda.is_available():
    torch.cuda.get_device_properties = lambda index: SimpleNamespace(multi_processor_count=4)
    torch.accelerator.current_device_index = lambda: 0

PATH = "vllm/models/deepseek_v41/common/engram.py"
NAMES = ["DEAD_ID", "_is_prime", "find_next_prime", "compute_hash_multipliers", "EngramLayout", "_write_hash_cache_kernel",
         "_hash_ids_kernel",
         "NgramHashState", "_engram_lookup_kernel", "_engram_head_shard_weight_loader", "ParallelEngramEmbedding", "_engram_dequant_packed_kernel",
         "dequantize_packed_engram_rows"]


def bf16_tensor(bits, shape):
    """bf16 values from their 16-bit patterns."""
    return torch.tensor(np.asarray(bits, dtype=np.uint16).astype(np.int16), dtype=torch.int16).view(
        torch.bfloat16).reshape(shape)


def bf16_bits(t):
    return [int(x) & 0xFFFF for x in t.contiguous().view(torch.int16).reshape(-1).tolist()]


class Kernels(Adapter):
    name = "vLLM deepseek_v41 Triton kernels (Triton interpreter, CPU)"
    suites = ["hash_v41", "table_lookup", "serving_v41"]
    profiles = ["v4.1"]

    def __init__(self, checkout):
        super().__init__(checkout)
        from engram_adapter.portlib import load_defs
        ns = {"np": np, "torch": torch, "nn": nn, "triton": triton, "tl": tl, "weakref": weakref,
              "VllmConfig": object, "QuantizationConfig": object, "ReplicatedLinear": None,
              "get_tensor_model_parallel_world_size": lambda: 1, "get_tensor_model_parallel_rank": lambda: 0,
              "tensor_model_parallel_all_gather": None, "set_weight_attrs": None,
              "get_current_vllm_config": None, "logger": None}
        self.ns = load_defs(os.path.join(checkout, PATH), NAMES, ns)
        self.version = f"checkout (triton {triton.__version__} interpreter, torch {torch.__version__})"

    # ------------------------------------------------------------------ hash: NgramHashState.forward, V2 runner

    def hasher(self, group, ids):
        """The port's NgramHashState as the V2 runner uses it (no slot cache: every lookback id is supplied),
        built around the group's tables; __init__ (a tokenizer download, a KV-cache module) is not run."""
        layers, v, pad = group["layers"], group["compressedVocabSize"], group["compressedPad"]
        prefix, _ = identity_map(v, [i for i in ids if i != DEAD], pad)
        st = self.ns["NgramHashState"].__new__(self.ns["NgramHashState"])
        nn.Module.__init__(st)
        st.use_slot_cache, st._cache, st.block_size = False, None, 16
        st.pad_id = pad
        st.register_buffer("token_map", torch.arange(max(prefix, 1), dtype=torch.int32), persistent=False)
        st.register_buffer("multipliers", torch.tensor([l["multipliers"] for l in layers], dtype=torch.int64),
                           persistent=False)
        st.register_buffer("primes", torch.tensor([l["primes"] for l in layers], dtype=torch.int64), persistent=False)
        st.register_buffer("offsets", torch.tensor([l["offsets"] for l in layers], dtype=torch.int64),
                           persistent=False)
        st.lookback_depth = len(layers[0]["multipliers"]) - 1
        return st

    def hash_chunk(self, st, group, history, ids, position):
        """One request's chunk: rows [T][layer][col]; history: the ids before it (oldest first, DEAD kept)."""
        if not ids:
            return []
        v = group["compressedVocabSize"]
        for i in ids + history:
            if i != DEAD and not 0 <= i < v:
                raise Unsupported(f"id {i} outside [0, {v}): the kernel reads token_map[id] unchecked (an "
                                  f"out-of-bounds load, undefined on the GPU), so such an input is not run")
        if any(i >= st.token_map.numel() for i in ids + history if i != DEAD):
            raise Unsupported("an id beyond the identity map prefix the adapter can build (portlib.identity_map)")
        depth = st.lookback_depth
        t = torch.tensor([0 if i == DEAD else i for i in ids], dtype=torch.int64)
        dead = torch.tensor([i == DEAD for i in ids], dtype=torch.bool)
        pos = torch.arange(position, position + len(ids), dtype=torch.int64)
        qsl = torch.tensor([0, len(ids)], dtype=torch.int32)
        # lookback_token_ids[r, c]: the id at chunk_start - 1 - c, -1 where there is none
        back = list(reversed(history))[:depth]
        look = torch.full((1, max(depth, 1)), -1, dtype=torch.int64)
        look_dead = torch.zeros((1, max(depth, 1)), dtype=torch.bool)
        for c, i in enumerate(back):
            look[0, c] = 0 if i == DEAD else i
            look_dead[0, c] = i == DEAD
        out = st.forward(t, pos, qsl, dead, look, look_dead, None, None)
        return [[[int(x) for x in layer] for layer in tok] for tok in out.tolist()]

    # ------------------------------------------------------------------ serving: one packed call

    def packed(self, group, test, type_):
        """A serving_v41 test as one NgramHashState.forward call over the whole buffer, padding included: the V2
        runner's look-back window (lookback_token_ids / lookback_dead_mask) for every encoding but slotCache, which
        is the V1 runner's slot cache (_write_hash_cache_kernel, then _hash_ids_kernel reading it by block_table)."""
        if type_ == "DraftTreeTest":
            raise Unsupported("tree drafts: _hash_ids_kernel has no parent indices; a slot's window is the slots "
                              "before it in the buffer (token - shift), so a sibling would read its sibling")
        bad = boundary_problem(test)
        if bad:
            raise Unsupported(f"{bad}: the kernel takes the runner's query_start_loc unchecked (it reads positions "
                              f"and ids through it), so such a call is not run")
        pk = Packed(group, test)
        v, n_all = pk.v, len(pk.ids)
        slots = [x for x in pk.raw_ids()]
        looks = [pk.lookback(r) for r in range(pk.b)]
        history = [x for ids, _ in looks for x in ids if x >= 0]
        if pk.enc == "slotCache":
            history += [x for x in test["slotCache"] if x >= 0]
        for i in slots[:pk.n] + history:
            if not 0 <= i < v:
                raise Unsupported(f"id {i} outside [0, {v}): the kernel reads token_map[id] unchecked (an "
                                  f"out-of-bounds load, undefined on the GPU), so such an input is not run")
        st = self.hasher(group, [x for x in slots + history if 0 <= x < v])
        if any(not 0 <= x < st.token_map.numel() for x in slots):  # padding slots beyond the map: a valid id instead
            slots = [x if 0 <= x < st.token_map.numel() else 0 for x in slots]
        ids = torch.tensor(slots, dtype=torch.int64)
        dead = torch.tensor(pk.dead, dtype=torch.bool)
        pos = torch.tensor(pk.pos, dtype=torch.int64)
        qsl = torch.tensor(pk.cu, dtype=torch.int32)
        depth = max(pk.w, 1)
        look = torch.tensor([a for a, _ in looks] if looks else [], dtype=torch.int64).reshape(pk.b, depth)
        look_dead = torch.tensor([m for _, m in looks] if looks else [], dtype=torch.bool).reshape(pk.b, depth)
        if pk.enc != "slotCache":
            out = st.forward(ids, pos, qsl, dead, look, look_dead, None, None)
            rows = [[[int(x) for x in layer] for layer in tok] for tok in out[:pk.n].tolist()]
            return {"rows": rows, **pk.write([pk.consumed_state(r) for r in range(pk.b)])}
        # the V1 runner: every history id from the slot cache, none from a look-back window
        st.use_slot_cache, st.block_size = True, test["blockSize"]
        st._cache = torch.tensor(test["slotCache"], dtype=torch.int32)
        width = max(len(row) for row in test["blockTable"]) if test["blockTable"] else 1
        table = torch.tensor([row + [0] * (width - len(row)) for row in test["blockTable"]],
                             dtype=torch.int32).reshape(pk.b, width)
        mapping = torch.tensor(test["slotMapping"], dtype=torch.int64)
        look = torch.full_like(look, -1)
        out = st.forward(ids, pos, qsl, dead, look, torch.zeros_like(look_dead), mapping, table)
        rows = [[[int(x) for x in layer] for layer in tok] for tok in out[:pk.n].tolist()]
        return {"rows": rows, **pk.write([], slot_cache=st._cache.tolist())}

    # ------------------------------------------------------------------ table: lookup / dequant kernels

    def lookup(self, group, test):
        if group["type"] == "SyntheticLookupTest":
            d, rows = group["table"]["headDim"], group["table"]["rows"]
        else:
            d, rows = group["headDim"], group["rows"]
        ids = [int(x) for x in test["rowIds"]]
        for i, r in enumerate(ids):
            if not 0 <= r < rows:
                raise Unsupported(f"row id {r} outside [0, {rows}): the lookup kernel masks rows outside its "
                                  f"shard to zeros (it is not asked to refuse them)")
        n_s = d // 32
        codes, scales = [], []
        if group["type"] == "SyntheticLookupTest":
            # the table's bytes are the test's input (§STO.5), drawn here by the in-tree numpy port's generator
            c, sc_ = SYNTHETIC.table_of(group["table"]).raw(ids)
            test = dict(test, rowBytes=[{"codes": a.tobytes().hex(), "scales": b.tobytes().hex()} for a, b in zip(c, sc_)])
        for rb in test["rowBytes"]:
            if "packed" in rb:
                raw = bytes.fromhex(rb["packed"])
                codes.append(raw[:d])
                scales.append(raw[d:d + n_s])
            else:
                codes.append(bytes.fromhex(rb["codes"]))
                scales.append(bytes.fromhex(rb["scales"]))
        # the table the kernel reads: the test's rows, addressed by their local index (one row per id)
        w = torch.tensor(np.frombuffer(b"".join(codes), dtype=np.uint8).reshape(len(ids), d).copy()).view(
            torch.float8_e4m3fn)
        sc = torch.tensor(np.frombuffer(b"".join(scales), dtype=np.uint8).reshape(len(ids), n_s).copy())
        emb = self.ns["ParallelEngramEmbedding"].__new__(self.ns["ParallelEngramEmbedding"])
        nn.Module.__init__(emb)
        emb.dim, emb.block_size, emb.n_hash_cols, emb.part_n_hash_cols = d, 32, 1, 1
        emb.head_start, emb.vocab_start_idx, emb.vocab_end_idx, emb._num_sms, emb.tp_size = 0, 0, len(ids), 4, 1
        emb._storage = lambda: (w, sc)
        indices = torch.arange(len(ids), dtype=torch.int64).reshape(-1, 1)
        if group["type"] == "PackedLookupTest":
            packed = torch.empty((len(ids), 1, d + n_s), dtype=torch.uint8)
            emb.lookup(indices, packed, packed=True)
            out = torch.empty((len(ids), 1, d), dtype=torch.bfloat16)
            self.ns["dequantize_packed_engram_rows"](packed, out, 32)
        else:
            out = torch.empty((len(ids), 1, d), dtype=torch.bfloat16)
            emb.lookup(indices, out)
        rows_hex = ["".join(f"{b:04x}" for b in bf16_bits(out[i, 0])) for i in range(len(ids))]
        return {"rows": rows_hex}

    def answer(self, suite, type_, group, test):
        if type_ in ("HashTest", "HashStateTest"):
            ids = test_ids(test)

            def new_session(capacity):
                return Session(self, group, self.hasher(group, ids))

            if type_ == "HashTest":
                return {"rows": new_session(0).append(test["ids"])}
            return hash_state_test(group, test, new_session)
        if type_ in ("SafetensorsLookupTest", "PackedLookupTest", "SyntheticLookupTest"):
            group = dict(group, type=type_)
            return self.lookup(group, test)
        if type_ in ("PackedBatchTest", "DraftTreeTest"):
            return self.packed(group, test, type_)
        raise Unsupported(f"{type_}: no Triton kernel of the port computes it")


class Session:
    """A request as vLLM's V2 runner drives the kernel: stateless, the runner supplies the ids before the chunk
    (lookback_token_ids, DEAD through lookback_dead_mask); the adapter keeps the request's ids as the runner's
    token history does, so a rollback is the runner truncating it."""

    def __init__(self, adapter, group, st):
        self.adapter, self.group, self.st = adapter, group, st
        self.ids = []

    @property
    def position(self):
        return len(self.ids)

    def append(self, ids):
        rows = self.adapter.hash_chunk(self.st, self.group, self.ids[-self.st.lookback_depth:] if
                                       self.st.lookback_depth else [], list(ids), self.position)
        self.ids += list(ids)
        return rows

    def rollback(self, k):
        replayed_rollback(k, self.position)
        del self.ids[self.position - k:]

    def history(self):
        h = min(self.position, self.st.lookback_depth)
        return self.ids[self.position - h:]

    def __deepcopy__(self, memo):
        other = Session(self.adapter, self.group, self.st)
        other.ids = list(self.ids)
        return other


if __name__ == "__main__":
    sys.exit(main(Kernels, __doc__))
