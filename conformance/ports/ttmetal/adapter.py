#!/usr/bin/env python3
"""JSON-lines adapter for the official DeepSeek-V4.1 inference code as vendored by tenstorrent/tt-metal
(models/demos/deepseek_v3_d_p/reference/deepseek_v41/): engram.py (the hash), model.py (Engram, its fp8 table
ParallelEngramEmbedding and the Linear of its wkv) and kernel_cpu.py (tt-metal's torch port of the official
kernel.py: act_quant and fp8_gemm, which the fp8 Linear calls). See README.md beside this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/ttmetal/adapter.py --checkout DIR"
"""
import os
import sys
import typing

import torch
import torch.nn.functional as F
from torch import nn

from engram_adapter.official_api import OfficialModuleAdapter
from engram_adapter.portlib import load_defs, main

DIR = "models/demos/deepseek_v3_d_p/reference/deepseek_v41"
# what the fp8 Linear's linear() reaches in kernel_cpu.py
KERNEL = ["FP8_MAX", "_FP8_MAX_INV", "fast_round_scale", "_to_e4m3_satfinite", "act_quant", "_block_scaled_gemm",
          "fp8_gemm"]
# model.py's module globals (one rank: Transformer.__init__ leaves world_size 1, rank 0 without torch.distributed)
MODEL = ["world_size", "rank", "default_dtype", "fp8_block_size", "fp4_block_size", "scale_fmt", "scale_dtype",
         "linear", "Linear", "ParallelEngramEmbedding", "Engram"]


class DefaultDtype:
    """torch's default dtype for the duration of a forward: model.py's entry point sets bf16
    (`torch.set_default_dtype(torch.bfloat16)`, model.py:1305), and fp8_gemm returns it (kernel_cpu.py:182)."""

    def __init__(self, dtype):
        self.dtype, self.saved = dtype, None

    def __enter__(self):
        self.saved = torch.get_default_dtype()
        torch.set_default_dtype(self.dtype)

    def __exit__(self, *exc):
        torch.set_default_dtype(self.saved)


class TtMetal(OfficialModuleAdapter):
    name = "tt-metal deepseek_v41/engram.py, model.py (official V4.1 code)"
    version = "checkout"
    path = f"{DIR}/engram.py"

    def load_module(self):
        kernel = load_defs(os.path.join(self.checkout, DIR, "kernel_cpu.py"), KERNEL,
                           {"torch": torch, "Optional": typing.Optional, "Tuple": typing.Tuple})
        # model.py's other imports (torch.distributed, the vision and attention code) are not reached by these
        # definitions with one rank; EngramLayout and ModelArgs are annotations only
        ns = load_defs(os.path.join(self.checkout, DIR, "model.py"), MODEL,
                       {"torch": torch, "nn": nn, "F": F, "dist": None, "act_quant": kernel["act_quant"],
                        "fp8_gemm": kernel["fp8_gemm"], "fp4_gemm": None, "EngramLayout": object, "ModelArgs": object})
        return {"Engram": ns["Engram"], "Embedding": ns["ParallelEngramEmbedding"], "Linear": ns["Linear"]}

    def context(self):
        return DefaultDtype(torch.bfloat16)


if __name__ == "__main__":
    sys.exit(main(TtMetal, __doc__))
