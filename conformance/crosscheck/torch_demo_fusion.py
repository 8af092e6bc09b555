#!/usr/bin/env python3
"""The demo-v1 fusion computed by real PyTorch on CPU, as a port spoken to by `engram conform --exec`.

A measurement tool for spec/fusion.md §FUS.5-§FUS.9: §FUS.8 says the float32 mirror is what the published
PyTorch code computes, and §FUS.9's tolerances must accept what that code returns. This peer runs the
arithmetic of deepseek-ai/Engram `engram_demo_v1.py` (spec/sources.md [SRC-DEMO]: `Engram.forward`,
`ShortConv`) with the same torch modules and operations, re-implemented here from reading the upstream source
(no code is copied), in float32 on CPU, on whatever cases the runner sends: the fixed vectors, or the random
cases of §CONF.7 (`--random N`). Every failure the runner reports is a disagreement between the verdict and
the upstream code.

  gate (§FUS.6):   key = nn.Linear(in, hidden)(e); gate = (RMSNorm1(key) * RMSNorm2(h)).sum(-1) / math.sqrt(hidden);
                   gate = gate.abs().clamp_min(1e-6).sqrt() * gate.sign(); gate.sigmoid(); nn.RMSNorm(eps=None)
  value:           gate * nn.Linear(in, hidden)(e)
  ShortConv (§FUS.7): per-stream nn.RMSNorm(hidden, eps=1e-5), concatenated, nn.Conv1d(groups=channels,
                   bias=False, padding=(kernel - 1) * dilation, dilation), truncated to T, nn.SiLU
  output = value + ShortConv(value); hidden after = output + hidden

It claims gate_demo, short_conv_demo and engram_forward for the demo-v1 profile only. The rows of an
EngramForwardTest (hash, §STO.10 float table) come from the numpy port (conformance/python/engram_numpy_port),
which passes every vector: only the float arithmetic is torch's here.

Requires torch (CPU) — not installed by scripts/setup.sh. Run:
  python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch numpy
  build/release/conformance/engram conform --vectors vectors --random 2000 --random-only --seed 1 \\
      --suite short_conv_demo \\
      --exec "env PYTHONPATH=conformance/python /tmp/torchvenv/bin/python conformance/crosscheck/torch_demo_fusion.py"
ctest runs it when ENGRAM_TORCH_PYTHON names such a python (TorchCrosscheck.* in conformance/runner/random_test.cc).
"""
import math
import sys

import torch
import torch.nn as nn

# conformance/python on PYTHONPATH: the protocol, and the numpy port for hashing and the float table only
import engram_numpy_port as na
from engram_adapter import protocol

torch.set_num_threads(1)
F32 = torch.float32
SUITES = ["gate_demo", "short_conv_demo", "engram_forward"]


def fx(h):
    return float.fromhex(h) if h not in ("inf", "-inf", "nan") else float(h)


def hexf(x):
    x = float(x)
    return x.hex() if math.isfinite(x) else ("nan" if x != x else ("inf" if x > 0 else "-inf"))


def tensor(values, shape):
    return torch.tensor([fx(v) if isinstance(v, str) else float(v) for v in values], dtype=F32).reshape(shape)


def hexes(t):
    return [hexf(v) for v in t.reshape(-1).tolist()]


class Params:
    """The upstream modules of one group, their parameters set from the vector (float32)."""

    def __init__(self, g):
        hc, H, inn, K, dil = g["hc"], g["hidden"], g["in"], g["kernel"], g["dilation"]
        self.hc, self.H, self.inn = hc, H, inn
        with torch.no_grad():
            self.value_proj = nn.Linear(inn, H)
            self.value_proj.weight.copy_(tensor(g["valueWeight"], (H, inn)))
            self.value_proj.bias.copy_(tensor(g["valueBias"], (H,)))
            self.key_projs, self.norm1, self.norm2 = [], [], []
            kw, kb = tensor(g["keyWeight"], (hc, H, inn)), tensor(g["keyBias"], (hc, H))
            n1, n2 = tensor(g["norm1Weight"], (hc, H)), tensor(g["norm2Weight"], (hc, H))
            for c in range(hc):
                lin = nn.Linear(inn, H)
                lin.weight.copy_(kw[c])
                lin.bias.copy_(kb[c])
                self.key_projs.append(lin)
                a, b = nn.RMSNorm(H), nn.RMSNorm(H)  # eps=None: torch.finfo(float32).eps
                a.weight.copy_(n1[c])
                b.weight.copy_(n2[c])
                self.norm1.append(a)
                self.norm2.append(b)
            C = hc * H
            self.conv = nn.Conv1d(C, C, kernel_size=K, groups=C, bias=False, padding=(K - 1) * dil, dilation=dil)
            self.conv.weight.copy_(tensor(g["convWeight"], (C, 1, K)))
            cn = tensor(g["convNormWeight"], (hc, H))
            self.conv_norms = []
            for c in range(hc):
                m = nn.RMSNorm(H, eps=1e-5)
                m.weight.copy_(cn[c])
                self.conv_norms.append(m)
        self.act = nn.SiLU()

    def gates_values(self, emb, hidden):
        """emb [B, L, in], hidden [B, L, hc, H] -> gates [B, L, hc, 1], value [B, L, hc, H] (Engram.forward)."""
        gates = []
        for c in range(self.hc):
            key = self.key_projs[c](emb)
            normed_key = self.norm1[c](key)
            normed_query = self.norm2[c](hidden[:, :, c, :])
            gate = (normed_key * normed_query).sum(dim=-1) / math.sqrt(self.H)
            gate = gate.abs().clamp_min(1e-6).sqrt() * gate.sign()
            gates.append(gate.sigmoid().unsqueeze(-1))
        gates = torch.stack(gates, dim=2)
        return gates, gates * self.value_proj(emb).unsqueeze(2)

    def short_conv(self, x):
        """x [B, T, hc, H] -> [B, T, hc, H] (ShortConv.forward)."""
        B, T, G, H = x.shape
        x_norm = torch.cat([self.conv_norms[i](x[:, :, i, :]) for i in range(G)], dim=-1)
        y = self.conv(x_norm.transpose(1, 2))[..., :T]
        return self.act(y).transpose(1, 2).reshape(B, T, G, H)


def demo_gate_function(dot):
    g = torch.tensor([dot], dtype=torch.float64).to(F32)  # the gate's input is a float32 tensor upstream
    return ((g.abs().clamp_min(1e-6).sqrt() * g.sign()).sigmoid())[0]


def run_test(type_, group, test):
    with torch.no_grad():
        if type_ == "GateFunctionTest":
            return {"gate": hexf(demo_gate_function(fx(test["dot"])))}
        if type_ == "DemoGateTest":
            m = Params(group)
            if len(test["e"]) != m.inn or len(test["hidden"]) != m.hc * m.H:
                raise ValueError("e or hidden has the wrong length")
            gates, value = m.gates_values(tensor(test["e"], (1, 1, m.inn)), tensor(test["hidden"], (1, 1, m.hc, m.H)))
            return {"gate": hexes(gates), "value": hexes(value)}
        if type_ == "ShortConvTest":
            m = Params(group)
            T = test["steps"]
            if len(test["value"]) != T * m.hc * m.H:
                raise ValueError("value has the wrong length")
            return {"output": hexes(m.short_conv(tensor(test["value"], (1, T, m.hc, m.H))))}
        if type_ == "EngramForwardTest":
            ids = [int(a) for a in test["ids"]]
            first, rows = na.first_layer_rows(group, ids)
            cols = len(rows[0]) if rows else 0
            m = Params(group)
            T = len(ids)
            if len(test["hidden"]) != T * m.hc * m.H:
                raise ValueError("hidden has the wrong length")
            e = na.float_table_rows(group["tableSeed"], first["numEmbeddings"], m.inn // cols,
                                    [r for row in rows for r in row]).reshape(T, -1)
            emb = torch.tensor(e, dtype=torch.float64).to(F32).reshape(1, T, m.inn)  # exact: float32 values
            hidden = tensor(test["hidden"], (1, T, m.hc, m.H))
            gates, value = m.gates_values(emb, hidden)
            output = value + m.short_conv(value)
            return {"output": hexes(output), "hiddenAfter": hexes(output + hidden), "gate": hexes(gates)}
    return None


def handle(req):
    op = req.get("op")
    if op == "hello":
        return protocol.hello("torch-demo-v1 (engram_demo_v1.py arithmetic, torch " + torch.__version__ + ")", "1",
                              SUITES, ["demo-v1"])
    try:
        if op == "test":
            if req["suite"] not in SUITES:
                return protocol.unsupported(req["suite"])
            out = run_test(req["type"], req["group"], req["test"])
            return protocol.unsupported(req["type"]) if out is None else protocol.outputs(out)
        if op == "bye":
            return protocol.bye()
        return protocol.unsupported(f"op {op}")
    except (ValueError, KeyError, TypeError, IndexError, RuntimeError) as e:
        return protocol.refused(e)


if __name__ == "__main__":
    sys.exit(protocol.serve(handle))
