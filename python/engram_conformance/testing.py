"""Helpers for a port's own pytest tests, in the shape vLLM's and sglang's kernel tests have: parametrize over
(case, device, dtype), then assert with the runner's diagnosis instead of torch.testing's "Mismatched elements".

    import engram_conformance as engram, pytest, torch

    @engram.parametrize("hash_v41", type="HashTest", devices=["cpu", "cuda"], dtypes=[torch.int64, torch.int32])
    def test_my_kernel(case, device, dtype):
        ids = torch.tensor(case.inputs["ids"], dtype=dtype, device=device)
        engram.assert_conforms(case, {"rows": my_kernel(ids, case.layout)})

A device this machine cannot use (no CUDA, torch not installed) gives skipped tests that say why. Invalid cases
(``case.valid`` False) must be refused: ``engram.assert_conforms(case, refused=str(error))``.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Iterable, List, Optional, Sequence

from . import vectors as _vectors

__all__ = ["case_params", "parametrize", "assert_conforms"]


@functools.lru_cache(maxsize=None)
def _device_problem(device: str) -> Optional[str]:
    """Why tensors cannot be made on ``device`` here (None: they can)."""
    if device == "cpu":
        return None
    try:
        import torch
    except ImportError:
        return f"device {device}: torch is not installed"
    try:
        torch.empty(1, device=device)
    except Exception as e:  # noqa: BLE001 - any failure means the device is not usable here
        return f"device {device}: not usable here ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
    return None


def _name(dtype: Any) -> str:
    if dtype is None:
        return "default"
    return str(getattr(dtype, "name", None) or dtype).replace("torch.", "")


def case_params(suite: str, type: Optional[str] = None, *, devices: Sequence[str] = ("cpu",),  # noqa: A002
                dtypes: Iterable[Any] = (None,), random: int = 0, seed: int = 1) -> List[Any]:
    """``pytest.param((case, device, dtype))`` for every case of ``suite`` (of groups of ``type``) x device x
    dtype, ids ``hash_v41-tc3-cuda-int32``: the fixed vectors, then ``random`` random cases of the type
    (:func:`engram.random_cases`, ``seed``). Each case's flags are its marks; a device that cannot be used here
    is a skip mark saying why."""
    import pytest

    cases = list(_vectors.cases(suite, type))
    if random:
        cases += _vectors.random_cases(suite, seed, random, type)
    dtypes = list(dtypes)
    out = []
    for case in cases:
        for device in devices:
            problem = _device_problem(str(device))
            for dtype in dtypes:
                with warnings.catch_warnings():  # the flags are the vectors' own marks, not the project's markers
                    warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
                    marks = [getattr(pytest.mark, f) for f in case.flags]
                if problem:
                    marks.append(pytest.mark.skip(reason=problem))
                out.append(pytest.param(case, str(device), dtype, id=f"{case.id}-{device}-{_name(dtype)}",
                                        marks=marks))
    return out


def parametrize(suite: str, type: Optional[str] = None, *, devices: Sequence[str] = ("cpu",),  # noqa: A002
                dtypes: Iterable[Any] = (None,), random: int = 0, seed: int = 1,
                argnames: str = "case, device, dtype") -> Any:
    """``pytest.mark.parametrize(argnames, case_params(...))``: a test taking (case, device, dtype)."""
    import pytest

    return pytest.mark.parametrize(argnames, case_params(suite, type, devices=devices, dtypes=dtypes, random=random,
                                                         seed=seed))


def assert_conforms(case: "_vectors.Case", outputs: Any = None, *, refused: Optional[str] = None) -> "_vectors.Verdict":
    """§CONF.4 Asserts the runner's verdict on ``outputs`` (a dict of output name -> value: numpy arrays, torch
    tensors on any device, lists) or on a refusal: an AssertionError carrying the runner's diagnosis (the first
    differing path, expected vs got, the vector's intermediates there, the flags the case guards)."""
    verdict = case.judge(outputs, refused=refused)
    if not verdict.ok:
        raise AssertionError(str(verdict))
    return verdict
