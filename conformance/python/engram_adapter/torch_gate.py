"""The v4.1 post-wkv gate (spec/fusion.md) through a torch port that returns only x + gate * value: the test's
inputs as the port's bf16 tensors, and the gate read back off the port's own output. Shared by the adapters of
sglang's manual test, sglang's production layer, vLLM's torch reference, the official module
(conformance/ports/*/adapter.py, engram_adapter.official_api: a forward's gate at every position) and NeMo
Automodel's layer (layer_gate: a module's forward with its wkv giving way to the test's kv).

The key and value reach such a port packed in one kv tensor [..., hc * dim + dim], which the port slices: a test
whose key (or value) has the wrong length is handed to the port as it is, and the port's own code decides
(a refusal, or a gate computed from the wrong slice: accepted invalid input). x, q and k have their shapes
[..., hc, dim] and [hc, dim] in the port's API: another length cannot be written there and is unsupported.
"""
import contextlib

import numpy as np
import torch
from torch import nn

from .protocol import Unsupported


def bf16_tensor(bits, shape):
    """bf16 values from their 16-bit patterns."""
    return torch.tensor(np.asarray(bits, dtype=np.uint16).astype(np.int16), dtype=torch.int16).view(
        torch.bfloat16).reshape(shape)


def shaped(test, field, shape):
    n = int(np.prod(shape))
    if len(test[field]) != n:
        raise Unsupported(f"{field} of {len(test[field])} values: the port takes it as a tensor of shape {list(shape)}")
    return bf16_tensor(test[field], shape)


def gate_inputs(group, test, lead):
    """(x, kv, q, k, eps) for a V41GateTest, with `lead` the port's leading dimensions of x and kv (tokens, ...)."""
    dim, hc = group["dim"], group["hc"]
    eps = float.fromhex(group["eps"]) if isinstance(group["eps"], str) else float(group["eps"])
    x = shaped(test, "x", lead + (hc, dim))
    packed = list(test["key"]) + list(test["value"])
    kv = bf16_tensor(packed, lead + (len(packed),))
    return x, kv, shaped(test, "qWeight", (hc, dim)), shaped(test, "kWeight", (hc, dim)), eps


def read_gates(call, x, kv, group, test):
    """The gate of each hc copy, as hex floats, read off call(x, kv) -> x + gate * value (the port's function), for
    a V41GateTest (one position): stream_gates on the test's packed kv."""
    return stream_gates(call, x.to(torch.float32), kv[..., :len(test["key"])].to(torch.float32), len(test["value"]),
                        group["hc"], group["dim"])


def stream_gates(call, xf, key, n_value, hc, dim):
    """The gate of every position and hc copy, as hex floats in position order, read off call(x, kv) -> x + gate *
    value: xf float32 [..., hc, dim] (its positions in order), key [..., K] the kv's part before the value. For each
    copy, the same call on the stream with the value replaced by 2^s (per position, s 40 binades above every |x| of
    that copy) gives gate = (out - x) / 2^s, within a float32 rounding of gate * 2^s (about 2^-24 relative)."""
    h = xf.reshape(-1, hc, dim)
    gates = [[None] * hc for _ in range(h.shape[0])]
    for c in range(hc):
        at, scale = [], []
        for t in range(h.shape[0]):
            finite = h[t, c][torch.isfinite(h[t, c])].abs()
            if not finite.numel():  # x + gate * value is x whatever the gate: nothing to read
                raise Unsupported("a hidden-state copy with no finite element: the port returns x + gate * value "
                                  "only, and the gate cannot be read off a non-finite stream")
            at.append(int(torch.isfinite(h[t, c]).nonzero()[0, 0]))  # an element the gate can be read off
            top = int(torch.frexp(finite.max())[1]) if finite.max() > 0 else -126
            scale.append(max(0, top + 40))
            if scale[-1] > 126:  # x + gate * 2^s would overflow float32: the gate is not recoverable
                raise Unsupported("|x| near the float32 range: the port returns x + gate * value only, and the gate "
                                  "cannot be separated from so large a stream")
        value = torch.tensor([2.0 ** s for s in scale], dtype=torch.float32).reshape(key.shape[:-1] + (1,))
        o = call(xf, torch.cat([key, value.expand(key.shape[:-1] + (n_value,))], dim=-1))
        if o.numel() != h.numel():  # the port took the input and returned another shape (e.g. a kv with no value
            return []               # left after its key slice): its output is the answer, with no gate to read
        o = o.reshape(-1, hc, dim)
        for t in range(h.shape[0]):
            gates[t][c] = float((o[t, c, at[t]].double() - h[t, c, at[t]].double()) / (2.0 ** scale[t])).hex()
    return [g for row in gates for g in row]


class Given(nn.Module):
    """A module that returns the tensor it holds, whatever its input (the table read or the wkv an input replaces)."""

    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, _):
        return self.value


def layer_gate(make, group, test, context=contextlib.nullcontext):
    """A V41GateTest through one layer's forward(x, hash_ids, token_mask) -> x + gate * value: make(dim, hc, eps)
    builds the port's layer with one hash column (id 0) whose table read gives way to the wkv's input; its wkv
    gives way to the test's packed kv and q / k hold the test's weights. The gate is read off further calls
    (read_gates); context() is what the port's entry point sets around a forward."""
    x, kv, q, k, eps = gate_inputs(group, test, (1, 1))
    dim, hc = group["dim"], group["hc"]
    mask = torch.tensor([[not test["masked"]]], dtype=torch.bool)

    def run(xs, packed):
        e = make(dim, hc, eps)
        e.wkv = Given(packed)
        e.q_weight, e.k_weight = nn.Parameter(q, requires_grad=False), nn.Parameter(k, requires_grad=False)
        with context():
            return e(xs, torch.zeros((1, 1, 1), dtype=torch.int64), mask)
    out = run(x, kv)
    # forward returns x + gate * value, never the gate: read off the same forward
    return {"gate": read_gates(run, x, kv, group, test), "out": out_bits(out)}


def out_bits(out):
    """The port's bf16 output as 16-bit patterns, flattened."""
    return [int(b) & 0xFFFF for b in out.contiguous().view(torch.int16).reshape(-1).tolist()]
