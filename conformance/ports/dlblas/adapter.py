#!/usr/bin/env python3
"""JSON-lines adapter for DeepLink-org/DLBlas's Engram Triton kernels (dlblas/kernels/engram.py:
engram_gate_value_rms_kernel, the demo-v1 gate and value with the value's RMS, and engram_conv_residual_kernel,
ShortConv fused with the residual), run on the CPU by Triton's interpreter (TRITON_INTERPRET=1) through the
file's own launcher, EngramTri.forward. See README.md beside this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/dlblas/adapter.py --checkout DIR"
"""
import math
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: every @triton.jit runs on the CPU

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from engram_adapter.demo_torch import Weights, floats, hexes  # noqa: E402
from engram_adapter.portlib import Adapter, Unsupported, load_defs, main  # noqa: E402

import engram_numpy_port as INPUTS  # (only the hash rows and the §STO.10 float table: the block's input e)

PATH = "dlblas/kernels/engram.py"
KERNELS = ["engram_gate_value_rms_kernel", "engram_conv_residual_kernel"]
NAMES = KERNELS + ["EngramTri"]
SHAPE_AT = f"{PATH}:452"  # EngramTri.forward reads hidden_states as (B, T, G, C)


class Launches:
    """A kernel as EngramTri.forward launches it (`kernel[grid](*args)`), passed through unchanged; the arguments of
    the last launch are kept, so that a buffer the launcher allocates (the gated value) can be read afterwards."""

    def __init__(self, kernel):
        self.kernel, self.args = kernel, None

    def __getitem__(self, grid):
        launch = self.kernel[grid]

        def run(*args, **kwargs):
            self.args = dict(zip(self.kernel.arg_names, args), **kwargs)
            return launch(*args, **kwargs)

        return run

    def argument(self, name):
        if self.args is None:
            raise RuntimeError("EngramTri.forward did not launch the gate kernel")
        return self.args[name]


class DLBlas(Adapter):
    name = "DeepLink-org/DLBlas dlblas/kernels/engram.py Triton kernels (Triton interpreter, CPU)"
    suites = ["gate_demo", "engram_forward"]
    profiles = ["demo-v1"]

    def __init__(self, checkout):
        super().__init__(checkout)
        # the file's module-level `device = "cuda"` is not run: its modules are built on the CPU
        ns = {"torch": torch, "nn": nn, "F": F, "math": math, "triton": triton, "tl": tl, "device": "cpu"}
        self.ns = load_defs(os.path.join(checkout, PATH), NAMES, ns)
        for name in KERNELS:
            # @triton.autotune times each of its configs on the GPU (Autotuner._bench needs a driver: none on the
            # CPU); the adapter keeps the first config listed, which leaves the autotuner's own launch path intact
            tuner = self.ns[name]
            tuner.prune_configs = (lambda first: lambda kwargs: [first])(tuner.configs[0])
        self.version = f"checkout (triton {triton.__version__} interpreter, torch {torch.__version__})"

    # ------------------------------------------------------------------ the block, as the file builds it

    def block(self, group, value_ones=False):
        """EngramTri with the group's parameters (§FUS.10), loaded into the modules __init__ creates, then the
        file's own _precompute_buffers (the concatenated key projection, the norm and conv weights as it keeps
        them). value_ones: the value projection gives 1 everywhere (weight 0, bias 1), so that the value the gate
        kernel stores is the gate itself."""
        w = Weights(group)
        m = self.ns["EngramTri"](engram_hidden_size=w.inn, hidden_size=w.hidden, kernel_size=w.kernel,
                                 dilation=w.dilation, norm_eps=1e-5, hc_mult=w.hc, activation=True)
        with torch.no_grad():
            for c in range(w.hc):
                m.key_projs[c].weight.copy_(w.key_w[c])
                m.key_projs[c].bias.copy_(w.key_b[c])
                m.norm1[c].weight.copy_(w.norm1[c])
                m.norm2[c].weight.copy_(w.norm2[c])
                m.norms[c].weight.copy_(w.conv_norm[c])
            m.value_proj.weight.copy_(torch.zeros_like(w.value_w) if value_ones else w.value_w)
            m.value_proj.bias.copy_(torch.ones_like(w.value_b) if value_ones else w.value_b)
            m.conv.weight.copy_(w.conv_w)
        m._precompute_buffers()
        return m

    def forward(self, group, e, hidden, value_ones=False):
        """EngramTri.forward(embeddings [1][T][in], hidden_states [1][T][hc][hidden]) -> (its output
        [T][hc][hidden], the value the gate kernel stored for the residual kernel [T][hc][hidden])."""
        name = "engram_gate_value_rms_kernel"
        tuner = self.ns[name]
        seen = Launches(tuner)
        self.ns[name] = seen  # EngramTri.forward looks the kernel up in the file's globals at each call
        try:
            with torch.no_grad():
                out = self.block(group, value_ones)(e, hidden)
        finally:
            self.ns[name] = tuner
        return out[0], seen.argument("output_ptr")[0]

    def inputs(self, group, e, e_width, hidden, steps):
        """The tensors EngramTri.forward takes. e keeps the test's length (a wrong one meets the port's own
        F.linear); a hidden state that is not T x hc x hidden is no (B, T, G, C) tensor: unsupported."""
        h = floats(hidden, (1, steps, group["hc"], group["hidden"]), "hidden", SHAPE_AT)
        return e.reshape(1, steps, e_width), h

    # ------------------------------------------------------------------ the suites

    def demo_gate(self, group, test):
        e = floats(test["e"])
        if not bool(torch.isfinite(e).all()):
            raise Unsupported("an e with an infinity or a NaN: the adapter reads the gate as the value of a value "
                              "projection of ones (weight 0, bias 1), which 0 * inf makes NaN")
        e, h = self.inputs(group, e, e.numel(), test["hidden"], 1)
        value = self.forward(group, e, h)[1][0]  # [hc][hidden]
        gate = self.forward(group, e, h, value_ones=True)[1][0]
        return {"gate": hexes(gate[:, 0]), "value": hexes(value)}

    def engram_forward(self, group, test):
        if group["profile"] != "demo-v1":
            raise Unsupported("v4.1: dlblas/kernels/engram.py is the demo-v1 block (no fp8 wkv, no v4.1 gate)")
        ids = [int(a) for a in test["ids"]]
        steps = len(ids)
        if steps == 0:
            raise Unsupported("no position: EngramTri.forward's kernels take a sequence of at least one step")
        # the block starts at the looked-up rows (EngramTri.forward's `embeddings`): the rows of the first layer's
        # hash and the §STO.10 float table are the test's input, built here by the in-tree numpy port
        first, rows = INPUTS.first_layer_rows(group, ids)
        cols = len(rows[0])
        width = group["in"] // cols
        e = torch.tensor(INPUTS.float_table_rows(group["tableSeed"], first["numEmbeddings"], width,
                                                 [r for row in rows for r in row]), dtype=torch.float32)
        e, h = self.inputs(group, e, cols * width, test["hidden"], steps)
        output = self.forward(group, e, h)[0]
        gate = self.forward(group, e, h, value_ones=True)[1][:, :, 0]  # [T][hc]
        # the caller adds the block's output to the hidden state, as the file's test_engram does
        hidden_after = output + h[0]
        return {"output": hexes(output), "hiddenAfter": hexes(hidden_after), "gate": hexes(gate)}

    def answer(self, suite, type_, group, test):
        if type_ == "DemoGateTest":
            return self.demo_gate(group, test)
        if type_ == "EngramForwardTest":
            return self.engram_forward(group, test)
        if type_ == "GateFunctionTest":
            raise Unsupported("the gate kernel computes g from the key and the hidden state it normalizes: the gate "
                              "function of a given g has no entry")
        raise Unsupported(f"{type_}: no launcher of dlblas/kernels/engram.py computes it")


if __name__ == "__main__":
    sys.exit(main(DLBlas, __doc__))
