"""The v4.1 post-wkv gate (spec/fusion.md) through a torch port that returns only x + gate * value: the test's
inputs as the port's bf16 tensors, and the gate read back off the port's own output. Shared by the adapters of
sglang's manual test, sglang's production layer and vLLM's torch reference (conformance/ports/*/adapter.py).

The key and value reach such a port packed in one kv tensor [..., hc * dim + dim], which the port slices: a test
whose key (or value) has the wrong length is handed to the port as it is, and the port's own code decides
(a refusal, or a gate computed from the wrong slice: accepted invalid input). x, q and k have their shapes
[..., hc, dim] and [hc, dim] in the port's API: another length cannot be written there and is unsupported.
"""
import numpy as np
import torch

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
    """The gate of each hc copy, as hex floats, read off call(x, kv) -> x + gate * value (the port's function):
    the same call on the stream in float32 with the value replaced by 2^s (s 40 binades above every |x|) gives
    gate = (out - x) / 2^s, within a float32 rounding of gate * 2^s (about 2^-24 relative)."""
    dim, hc = group["dim"], group["hc"]
    xf = x.to(torch.float32)
    key = kv[..., :len(test["key"])].to(torch.float32)
    gates = []
    for c in range(hc):
        h = xf.reshape(-1, hc, dim)[0, c]
        if not bool(torch.isfinite(h).any()):  # x + gate * value is x whatever the gate: nothing to read
            raise Unsupported("a hidden-state copy with no finite element: the port returns x + gate * value only, "
                              "and the gate cannot be read off a non-finite stream")
        d0 = int(torch.isfinite(h).nonzero()[0, 0])  # an element the gate can be read off
        finite = h[torch.isfinite(h)].abs()
        top = int(torch.frexp(finite.max())[1]) if finite.numel() and finite.max() > 0 else -126
        s = max(0, top + 40)
        if s > 126:  # x + gate * 2^s would overflow float32: the gate is not recoverable
            raise Unsupported("|x| near the float32 range: the port returns x + gate * value only, and the gate "
                              "cannot be separated from so large a stream")
        probe = torch.cat([key, torch.full(key.shape[:-1] + (len(test["value"]),), 2.0 ** s)], dim=-1)
        o = call(xf, probe)
        gates.append(float((o.reshape(-1, hc, dim)[0, c, d0].double() - h[d0].double()) / (2.0 ** s)).hex())
    return gates


def out_bits(out):
    """The port's bf16 output as 16-bit patterns, flattened."""
    return [int(b) & 0xFFFF for b in out.contiguous().view(torch.int16).reshape(-1).tolist()]
