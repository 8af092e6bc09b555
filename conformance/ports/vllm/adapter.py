#!/usr/bin/env python3
"""JSON-lines adapter for vLLM's DeepSeek-V4.1 Engram: the CPU parts of vllm/models/deepseek_v41/common/engram.py
(compute_hash_multipliers, EngramLayout) and the torch references of tests/kernels/test_engram.py that the Triton
kernels are tested against (_reference_hashes, _reference_engram_post_wkv, _reference_lookup); the kernels
themselves run in conformance/ports/vllm-triton. See README.md beside this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/vllm/adapter.py --checkout DIR"
"""
import bisect
import os
import sys
from types import SimpleNamespace

import numpy as np
import torch
from torch import nn

from engram_adapter.torch_gate import gate_inputs, out_bits, read_gates
from engram_adapter.portlib import (Adapter, DEAD, Unsupported, as_int_rows, config_of, fp8_decode_by_rows,
                                    identity_len, line_of, load_defs, lookup_rows, main, PortRefusal)

import engram_numpy_port as SYNTHETIC  # (only its synthetic-table generator: a test's input bytes)

COMMON = "vllm/models/deepseek_v41/common/engram.py"
TESTS = "tests/kernels/test_engram.py"
BLOCK = 16  # the oracle's block size (its slots are table[p // 16] * 16 + p % 16)


class Vllm(Adapter):
    name = "vLLM deepseek_v41 common/engram.py + tests/kernels/test_engram.py oracle"
    version = "checkout"
    suites = ["multipliers", "layout", "hash_v41", "gate_v41", "table_lookup", "fp8_decode"]
    profiles = ["v4.1"]

    def __init__(self, checkout):
        super().__init__(checkout)
        self.common = load_defs(os.path.join(checkout, COMMON),
                                ["DEAD_ID", "_is_prime", "find_next_prime", "compute_hash_multipliers", "EngramLayout"],
                                {"np": np, "torch": torch, "nn": nn})
        self.tests = load_defs(os.path.join(checkout, TESTS),
                               ["_reference_hashes", "_reference_engram_post_wkv", "_reference_lookup"],
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
                raise PortRefusal(f"Compressed vocab size mismatch: built {v}, config expects {lay.compressed_vocab_size}",
                                  line_of(self.checkout, COMMON, "Compressed vocab size mismatch"))
            if not -v <= lay.pad_token_id < v:  # NgramHashState.__init__ indexes the token map with the pad
                raise PortRefusal(f"token_map[{lay.pad_token_id}]: index out of range for a map of {v}",
                                  line_of(self.checkout, COMMON, "self.pad_id = token_map[layout.pad_token_id]"))
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
        if type_ == "V41GateTest":
            return self.gate(group, test)
        if type_ in ("SafetensorsLookupTest", "PackedLookupTest", "SyntheticLookupTest"):
            return self.lookup(type_, group, test)
        if type_ in ("E4M3DecodeTest", "E8M0DecodeTest", "ElementDecodeTest"):
            if not hasattr(torch, "float8_e4m3fn"):
                raise Unsupported(f"torch {torch.__version__} has no float8_e4m3fn (the reference needs torch >= 2.1)")
            # the CPU code decodes FP8 only inside _reference_lookup: the test's codes go through a row of the table
            return fp8_decode_by_rows(type_, test, lambda codes, scales: self.decode_rows([(codes, scales)],
                                                                                         len(codes))[0])
        raise Unsupported(f"{type_}: not computed by the port's CPU code or its tests' torch references (the "
                          f"stateful hash runs only as a Triton kernel: conformance/ports/vllm-triton)")

    def gate(self, group, test):
        """_reference_engram_post_wkv: the torch expression the fused post-wkv kernel is tested against."""
        x, kv, q, k, eps = gate_inputs(group, test, (1,))
        mask = torch.tensor([not test["masked"]], dtype=torch.bool)
        ref = self.tests["_reference_engram_post_wkv"]
        out = ref(x, kv, q, k, mask, eps, 1e-6, 0)
        # it returns hidden + gate * value, never the gate: read off the same function (torch_gate.read_gates)
        gates = read_gates(lambda xf, probe: ref(xf, probe, q, k, mask, eps, 1e-6, 0), x, kv, group, test)
        return {"gate": gates, "out": out_bits(out)}

    def lookup(self, type_, group, test):
        """_reference_lookup: the torch expression the fused lookup kernel replaces (FP8 rows, E8M0 scales)."""
        if not hasattr(torch, "float8_e4m3fn"):
            raise Unsupported(f"torch {torch.__version__} has no float8_e4m3fn (the reference needs torch >= 2.1)")
        d, raw = lookup_rows(type_, group, test, SYNTHETIC.table_of,
                             "the reference masks rows outside its shard to zeros "
                             "(it is not asked to refuse them)")
        bits = self.decode_rows(raw, d)
        return {"rows": ["".join(f"{int(b) & 0xFFFF:04x}" for b in row) for row in bits]}

    def decode_rows(self, raw, d):
        """_reference_lookup on a table of the given rows (codes, scales), one per id: each row's bf16 bit patterns."""
        n_s = d // 32
        weight = torch.tensor(np.frombuffer(b"".join(c for c, _ in raw), dtype=np.uint8).reshape(len(raw), d).copy()
                              ).view(torch.float8_e4m3fn)
        scale = torch.tensor(np.frombuffer(b"".join(s for _, s in raw), dtype=np.uint8).reshape(len(raw), n_s).copy())
        local = torch.arange(len(raw), dtype=torch.int64).reshape(-1, 1)
        out = self.tests["_reference_lookup"](weight, scale, local, 0, len(raw))
        return out.contiguous().view(torch.int16).reshape(len(raw), d).tolist()



if __name__ == "__main__":
    sys.exit(main(Vllm, __doc__))
