#!/usr/bin/env python3
"""JSON-lines adapter for JustVugg/colibri's torch reference of DeepSeek-V4.1, c/tools/dsv41_ref.py: class NgramHash
(the hash the C engine is held to) and RefModel.engram (the Engram gate the C engine is held to). See README.md
beside this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/colibri/adapter.py --checkout DIR"
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

from engram_adapter.portlib import Adapter, Unsupported, as_int_rows, config_of, hash_state_test, load_defs, main
from engram_adapter.torch_gate import gate_inputs, out_bits, read_gates, shaped, stream_gates

PATH = "c/tools/dsv41_ref.py"
NAMES = ["NgramHash", "RefModel", "precompute_freqs_cis", "_pow2", "fp8_dequant_blocked", "fp8_dequant_rowgroups"]
P = "layers.0.engram."  # the checkpoint names RefModel.engram reads, for layer 0


class GivesWay:
    """A wkv weight through which `rows @ weight.T` is the rows themselves: the table's row is the test's kv (no
    product with an identity, where a NaN or inf element would reach every column)."""

    @property
    def T(self):
        return self

    def __rmatmul__(self, rows):
        return rows


def ngram_hash(ns, layers, pad):
    m = len(layers[0]["multipliers"])
    heads = len(layers[0]["primes"][0]) if layers[0]["primes"] else 0
    # the tables the port reads from its container (prepare_dsv41.py computes them): here the reference's
    return ns["NgramHash"](
        # push() takes compressed ids and never reads token_map (the C engine maps raw ids): left empty
        token_map=torch.empty(0, dtype=torch.int64),
        primes=torch.tensor([l["primes"] for l in layers], dtype=torch.int64),
        offsets=torch.tensor([l["offsets"] for l in layers], dtype=torch.int64),
        multipliers=torch.tensor([l["multipliers"] for l in layers], dtype=torch.int64),
        pad_id=pad, max_ngram_size=m, n_heads=heads)


class Session:
    def __init__(self, ns, group):
        self.h = ngram_hash(ns, group["layers"], group["compressedPad"])
        self.max_ngram = len(group["layers"][0]["multipliers"])

    @property
    def position(self):
        return len(self.h.history)

    def append(self, ids):
        return as_int_rows(self.h.push(list(ids)))

    def rollback(self, k):
        raise Unsupported("NgramHash has no rollback (only reset)")

    def history(self):
        h = min(self.position, self.max_ngram - 1)
        return [int(x) for x in self.h.history[len(self.h.history) - h:]] if h else []


class Colibri(Adapter):
    name = "colibri c/tools/dsv41_ref.py NgramHash, RefModel.engram"
    version = "checkout"
    suites = ["hash_v41", "gate_v41", "engram_forward"]
    profiles = ["v4.1"]

    def __init__(self, checkout):
        super().__init__(checkout)
        self.ns = load_defs(os.path.join(checkout, PATH), NAMES, {"torch": torch, "F": F, "math": math},
                            future_annotations=True)

    def model(self, dim, hc, eps, w):
        """RefModel built by its own constructor; the attention part of its configuration (RoPE tables, window and
        compressor state) is the smallest it takes, no layer: only engram() is called."""
        cfg = {"hc_mult": hc, "dim": dim, "norm_eps": eps, "rope_head_dim": 2, "n_layers": 0, "max_seq_len": 1,
               "original_seq_len": 0, "compress_rope_theta": 10000.0, "rope_theta": 10000.0, "rope_factor": 1.0,
               "beta_fast": 32, "beta_slow": 1, "compress_ratios": [], "head_dim": 2, "window_size": 1,
               "kv_source_layers": [], "index_head_dim": 1}
        return self.ns["RefModel"](cfg, w)

    def answer(self, suite, type_, group, test):
        if type_ == "HashTest":
            return {"rows": Session(self.ns, group).append(test["ids"])}
        if type_ == "HashStateTest":
            return hash_state_test(group, test, lambda capacity: Session(self.ns, group))
        if type_ == "V41GateTest":
            return self.gate(group, test)
        if type_ == "EngramForwardTest":
            return self.forward(group, test)
        raise Unsupported(f"{type_}: no entry in the port's reference (GateFunctionTest: the gate is one expression "
                          "of RefModel.engram; WkvTest: engram() returns x + gate * value, never kv; the table and "
                          "the layout are read from the container prepare_dsv41.py writes)")

    def gate(self, group, test):
        """V41GateTest through RefModel.engram (fp32 throughout): a table of one row holding the test's packed kv, and
        the wkv giving way to it."""
        if test["masked"]:
            raise Unsupported("a masked position: RefModel.engram(layer, x, hash_ids) takes no token mask")
        x, kv, q, k, eps = gate_inputs(group, test, (1,))
        dim, hc = group["dim"], group["hc"]

        def run(xf, packed):
            n = packed.shape[-1]
            w = {P + "embed.weight": packed.reshape(1, n).to(torch.float32), P + "wkv.weight": GivesWay(),
                 P + "q_weight": q.to(torch.float32), P + "k_weight": k.to(torch.float32)}
            return self.model(dim, hc, eps, w).engram(0, xf.to(torch.float32), torch.zeros((1, 1), dtype=torch.int64))
        out = run(x, kv)
        # engram() returns x + gate * value in float32, never the gate: read off the same function; its float32
        # output is rounded to the bf16 the vectors compare (the port carries float32, dsv41_ref.py's docstring)
        return {"gate": read_gates(run, x, kv, group, test), "out": out_bits(out.to(torch.bfloat16))}

    def forward(self, group, test):
        """EngramForwardTest (v4.1) as RefModel.forward runs its first Engram layer: NgramHash.push, then engram() on
        the first layer's hash ids, the weights dequantized by the port's own fp8_dequant_* as its loader does."""
        if not hasattr(torch, "float8_e4m3fn"):
            raise Unsupported(f"torch {torch.__version__} has no float8_e4m3fn: the port's fp8 dequantizers need "
                              "torch >= 2.1")
        import engram_numpy_port as reference  # the layout the port reads from its container, and the table's bytes
        cfg = config_of(group)
        dim, hc, hd, eps = cfg["dim"], cfg["hc_mult"], cfg["engram_head_dim"], float(cfg["norm_eps"])
        ids = [int(i) for i in test["ids"]]
        x = shaped(test, "x", (len(ids), hc, dim))
        layout = reference.layout_of(group)
        hashes = ngram_hash(self.ns, layout["layers"], group["compressedPad"]).push(ids)[:, 0, :]  # the first layer's
        rows, cols = layout["layers"][0]["numEmbeddings"], hashes.shape[-1]
        used = sorted(set(hashes.reshape(-1).tolist()))
        codes, scales = reference.SyntheticTable(group["tableSeed"], rows, hd).raw(used)
        local = {r: i for i, r in enumerate(used)}  # the table holds the rows read, at these ids
        dq = self.ns["fp8_dequant_rowgroups"]
        table = dq(torch.tensor(codes).view(torch.float8_e4m3fn), torch.tensor(scales))
        n_out, n_in = (hc + 1) * dim, cols * hd
        # the port stores an fp8 weight in whole 32 x 32 tiles (fp8_quant_blocked asserts it): out = (hc + 1) * dim
        # rows padded with zero codes to the tiles the test's scales cover, and dropped after the dequant (each
        # element reads only its own tile's scale)
        tiles = -(-n_out // 32)
        codes_w = torch.zeros((tiles * 32, n_in), dtype=torch.uint8)
        codes_w[:n_out] = torch.tensor(group["wkvWeightCodes"], dtype=torch.uint8).reshape(n_out, n_in)
        wkv = self.ns["fp8_dequant_blocked"](
            codes_w.view(torch.float8_e4m3fn),
            torch.tensor(group["wkvWeightScales"], dtype=torch.uint8).reshape(tiles, n_in // 32))[:n_out]
        q, k = shaped(group, "qWeight", (hc, dim)), shaped(group, "kWeight", (hc, dim))
        w = {P + "embed.weight": table, P + "wkv.weight": wkv, P + "q_weight": q.to(torch.float32),
             P + "k_weight": k.to(torch.float32)}
        local_ids = torch.tensor([[local[int(r)] for r in row] for row in hashes.tolist()], dtype=torch.int64)
        model = self.model(dim, hc, eps, w)
        out = model.engram(0, x.to(torch.float32), local_ids)
        key = (table[local_ids.reshape(-1)].reshape(len(ids), -1) @ wkv.T)[:, :hc * dim]

        def run(xf, probe):  # the same engram() with the kv giving way to the probe's
            m = probe.shape[-1]
            wp = dict(w, **{P + "embed.weight": probe.reshape(-1, m), P + "wkv.weight": GivesWay()})
            return self.model(dim, hc, eps, wp).engram(0, xf, torch.arange(len(ids)).reshape(-1, 1))
        gates = stream_gates(run, x.to(torch.float32), key, dim, hc, dim)
        return {"out": out_bits(out.to(torch.bfloat16)), "gate": gates}


if __name__ == "__main__":
    sys.exit(main(Colibri, __doc__))
