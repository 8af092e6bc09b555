#!/usr/bin/env python3
"""JSON-lines adapter for sglang's DeepSeek-V4.1 manual-test model: test/manual/deepseek_v41/dsv41_engram.py (the
official engram.py API for the hash; its Engram and EngramEmbedding), dsv41_linear.py (the Linear of the wkv) and
python/sglang/srt/layers/attention/dsv4/torch_quant.py (naive_linear, which that Linear calls). See README.md beside
this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/sglang/adapter.py --checkout DIR"
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from engram_adapter.official_api import OfficialModuleAdapter
from engram_adapter.portlib import load_defs, main

LINEAR = "test/manual/deepseek_v41/dsv41_linear.py"
QUANT = "python/sglang/srt/layers/attention/dsv4/torch_quant.py"
# what naive_linear reaches for an fp8 or a bf16 weight (the fp4 branch, and its table import, are not reached)
QUANT_NAMES = ["FP8_MAX", "FP8_BLOCK_SIZE", "FP8_AMAX_FLOOR", "ceil_pow2", "block_scale", "quant_fp8_act",
               "dequant_fp8_weight", "naive_linear"]


class _Struct:
    """Stand-in for msgspec.Struct (not installed with the CPU measurement): keyword fields, frozen."""

    def __init_subclass__(cls, **options):
        super().__init_subclass__()

    def __init__(self, **fields):
        for k, v in fields.items():
            object.__setattr__(self, k, v)


class _Msgspec:
    Struct = _Struct


class SGLang(OfficialModuleAdapter):
    name = "sglang test/manual/deepseek_v41/dsv41_engram.py"
    version = "checkout"
    path = "test/manual/deepseek_v41/dsv41_engram.py"
    # the file's imports the Engram code does not use at run time, stubbed (README.md); FP8_BLOCK_SIZE as
    # python/sglang/srt/layers/attention/dsv4/torch_quant.py:16 defines it at the same commit
    extra = {"msgspec": _Msgspec, "DeepseekV41Args": object, "F": F, "Linear": None, "FP8_BLOCK_SIZE": 32}

    def load_module(self):
        quant = load_defs(os.path.join(self.checkout, QUANT), QUANT_NAMES, {"torch": torch, "F": F})
        linear = load_defs(os.path.join(self.checkout, LINEAR), ["Linear"],
                           {"torch": torch, "nn": nn, "FP4_BLOCK_SIZE": None,
                            "FP8_BLOCK_SIZE": quant["FP8_BLOCK_SIZE"], "naive_linear": quant["naive_linear"]})
        mod = load_defs(os.path.join(self.checkout, self.path), ["EngramEmbedding", "Engram"],
                        {"torch": torch, "nn": nn, "F": F, "np": np, "FP8_BLOCK_SIZE": quant["FP8_BLOCK_SIZE"],
                         "DeepseekV41Args": object, "Linear": linear["Linear"],
                         "EngramLayout": self.ns["EngramLayout"]})
        return {"Engram": mod["Engram"], "Embedding": mod["EngramEmbedding"], "Linear": linear["Linear"]}


if __name__ == "__main__":
    sys.exit(main(SGLang, __doc__))
