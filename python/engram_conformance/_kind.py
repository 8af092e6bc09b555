"""Torch tensors in, torch tensors out (docs/python.md, "torch").

The reference runs on the CPU and reads numpy buffers; every rule about what an argument may hold is checked in
C++ (python/src/args.cc). This module only moves tensors: a CPU tensor is handed over as a numpy view of its
memory (no copy), a tensor on another device (CUDA, MPS, ...) is copied to the CPU first, and the results go back
as tensors on the caller's device. bf16 tensors travel as their int16 bits and FP8 tensors as their uint8 codes,
which is how the reference takes them. torch is never imported here: a caller that holds a tensor has imported it.
"""
from __future__ import annotations

import sys
from typing import Any, Optional

import numpy as np

_BITS = {"bfloat16": "int16"}
_BYTES = ("float8_e4m3fn", "float8_e8m0fnu", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")


def torch_of(*args: Any) -> Optional[Any]:
    """The torch module when one of ``args`` is a torch tensor, else None (cheap when torch is not imported)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    for a in args:
        if isinstance(a, torch.Tensor):
            return torch
    return None


def device_of(*args: Any) -> Any:
    """The device of the first tensor among ``args``."""
    torch = sys.modules["torch"]
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device
    return None


def host(x: Any, real: bool = False) -> Any:
    """``x`` as the reference reads it: a tensor becomes a numpy array on the CPU (bf16 as int16 bits, FP8 as
    uint8 codes; with ``real``, every floating dtype as its float64 values); anything else is returned unchanged,
    for the C++ to check."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(x, torch.Tensor):
        return x
    t = x.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    name = str(t.dtype).replace("torch.", "")
    if real and (t.is_floating_point() and name != "float64"):
        t = t.to(torch.float64)  # exact: every bf16, half and float32 value is a float64 value
    elif name in _BITS:
        t = t.view(getattr(torch, _BITS[name]))
    elif name in _BYTES:
        t = t.view(torch.uint8)
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    return t.numpy()


def back(a: np.ndarray, torch: Any, device: Any, bf16: bool = False) -> Any:
    """A result as a tensor on ``device`` (``bf16``: uint16 bits become a bfloat16 tensor)."""
    if bf16:
        t = torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(a)
    if device is not None and device.type != "cpu":
        t = t.to(device)
    return t


def out_host(out: Any, torch: Any) -> Any:
    """A torch ``out=`` as a numpy array the reference writes into: the tensor's own memory on the CPU, a CPU
    array of its shape and dtype elsewhere (copied into it afterwards by :func:`out_back`)."""
    if out is None or not isinstance(out, torch.Tensor):
        return out
    if out.device.type == "cpu":
        if out.requires_grad:
            raise TypeError("out: a tensor that requires grad (the reference writes into it in place)")
        return out.numpy()
    return torch.empty(out.shape, dtype=out.dtype, device="cpu").numpy()


def out_back(out: Any, written: np.ndarray, torch: Any) -> Any:
    """``out`` after the reference wrote ``written`` (its memory, or a CPU copy of it for another device)."""
    if out.device.type != "cpu":
        out.copy_(torch.from_numpy(written))
    return out
