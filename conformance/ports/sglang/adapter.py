#!/usr/bin/env python3
"""JSON-lines adapter for sglang's DeepSeek-V4.1 manual-test model, test/manual/deepseek_v41/dsv41_engram.py
(the official engram.py API for the hash; its Engram gate and EngramEmbedding table read too). See README.md
beside this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/sglang/adapter.py --checkout DIR"
"""
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from engram_adapter.official_api import OfficialApiAdapter
from engram_adapter.torch_gate import gate_inputs, out_bits, read_gates
from engram_adapter.portlib import Unsupported, fp8_decode_by_rows, lookup_rows, main

import engram_numpy_port as SYNTHETIC  # (only its synthetic-table generator: a test's input bytes)


class _Struct:
    """Stand-in for msgspec.Struct (not installed with the CPU measurement): keyword fields, frozen."""

    def __init_subclass__(cls, **options):
        super().__init_subclass__()

    def __init__(self, **fields):
        for k, v in fields.items():
            object.__setattr__(self, k, v)


class _Msgspec:
    Struct = _Struct



class SGLang(OfficialApiAdapter):
    name = "sglang test/manual/deepseek_v41/dsv41_engram.py"
    version = "checkout"
    path = "test/manual/deepseek_v41/dsv41_engram.py"
    suites = ["multipliers", "layout", "hash_v41", "gate_v41", "table_lookup", "fp8_decode"]
    # the file's imports the Engram code does not use at run time, stubbed (README.md); FP8_BLOCK_SIZE as
    # python/sglang/srt/layers/attention/dsv4/torch_quant.py:16 defines it at the same commit
    extra = {"msgspec": _Msgspec, "DeepseekV41Args": object, "F": F, "Linear": None, "FP8_BLOCK_SIZE": 32}

    def __init__(self, checkout):
        super().__init__(checkout)
        from engram_adapter.portlib import load_defs
        ns = dict(self.ns)
        self.mod = load_defs(f"{checkout}/{self.path}", ["EngramEmbedding", "Engram"],
                             {"torch": torch, "nn": nn, "F": F, "np": np, "FP8_BLOCK_SIZE": 32,
                              "DeepseekV41Args": object, "Linear": None, "EngramLayout": ns["EngramLayout"]})

    def engram(self, dim, hc, eps, q, k, kv):
        e = self.mod["Engram"].__new__(self.mod["Engram"])
        nn.Module.__init__(e)
        e.dim, e.hc_mult, e.eps, e.clamp_value = dim, hc, eps, 1e-6
        e.q_weight, e.k_weight = nn.Parameter(q, requires_grad=False), nn.Parameter(k, requires_grad=False)
        # the table read and the wkv projection are the test's input here: kv is given
        e.embed = lambda hash_ids: hash_ids
        e.wkv = lambda x: kv
        return e

    def gate(self, group, test):
        x, kv, q, k, eps = gate_inputs(group, test, (1, 1))
        dim, hc = group["dim"], group["hc"]
        mask = torch.tensor([[not test["masked"]]], dtype=torch.bool)
        ids = torch.zeros((1, 1, 1), dtype=torch.int64)
        out = self.engram(dim, hc, eps, q, k, kv).forward(x, ids, mask)
        # Engram.forward returns x + gate * value, never the gate: read off the same forward (torch_gate.read_gates)
        gates = read_gates(lambda xf, probe: self.engram(dim, hc, eps, q, k, probe).forward(xf, ids, mask),
                           x, kv, group, test)
        return {"gate": gates, "out": out_bits(out)}

    def lookup(self, type_, group, test):
        if not hasattr(torch, "float8_e8m0fnu"):
            raise Unsupported(f"torch {torch.__version__} has no float8_e8m0fnu (EngramEmbedding's scale dtype)")
        d, raw = lookup_rows(type_, group, test, SYNTHETIC.table_of,
                             "F.embedding would be asked for a row the adapter's "
                             "table of the test's rows does not hold")
        bits = self.decode_rows(raw, d)
        return {"rows": ["".join(f"{int(b) & 0xFFFF:04x}" for b in row) for row in bits]}

    def decode_rows(self, raw, d):
        """EngramEmbedding.forward on a table holding the given rows (codes, scales), one per id, in order: the
        module's own parameters, as loaded. Returns each row's bf16 bit patterns."""
        n_s = d // 32
        emb = self.mod["EngramEmbedding"].__new__(self.mod["EngramEmbedding"])
        nn.Module.__init__(emb)
        emb.block_size = 32
        emb.weight = nn.Parameter(torch.tensor(np.frombuffer(b"".join(c for c, _ in raw), dtype=np.uint8).reshape(
            len(raw), d).copy()).view(torch.float8_e4m3fn), requires_grad=False)
        emb.scale = nn.Parameter(torch.tensor(np.frombuffer(b"".join(s for _, s in raw), dtype=np.uint8).reshape(
            len(raw), n_s).copy()).view(torch.float8_e8m0fnu), requires_grad=False)
        out = emb(torch.arange(len(raw), dtype=torch.int64))
        return out.contiguous().view(torch.int16).reshape(len(raw), d).tolist()

    def answer(self, suite, type_, group, test):
        if type_ == "V41GateTest":
            return self.gate(group, test)
        if type_ in ("SafetensorsLookupTest", "PackedLookupTest", "SyntheticLookupTest"):
            return self.lookup(type_, group, test)
        if type_ in ("E4M3DecodeTest", "E8M0DecodeTest", "ElementDecodeTest"):
            if not hasattr(torch, "float8_e8m0fnu"):
                raise Unsupported(f"torch {torch.__version__} has no float8_e8m0fnu (EngramEmbedding's scale dtype)")
            # the file decodes FP8 only in EngramEmbedding.forward: the test's codes go through a row of the table
            return fp8_decode_by_rows(type_, test, lambda codes, scales: self.decode_rows([(codes, scales)],
                                                                                         len(codes))[0])
        return super().answer(suite, type_, group, test)


if __name__ == "__main__":
    sys.exit(main(SGLang, __doc__))
