"""The Engram reference in-process (docs/python.md).

Every function here calls the C++ reference that the ``engram`` CLI links
(``engram_conformance._core``, nanobind): there is no second implementation. Names follow
spec/: ``Layout`` (§LAY), ``hash`` (§HASH.4), ``HashState`` (§HASH.6),
``token_map`` (§TOK), ``decode_rows`` (§STO.3), ``tp_shard`` (§STO.7),
the gates, ShortConv and forward (§FUS) in the float64 reference and its
float32 mirror (§FUS.8), ``explain`` (the hash's intermediates, §HASH.2-§HASH.4).

Errors raise :class:`engram.Error` whose message is the one the CLI prints
after ``engram: error:``.

The vectors are :mod:`engram.vectors`; :func:`random_cases` draws the cases
``engram conform --random`` asks (§CONF.7); :func:`judge` is the runner's
verdict (§CONF.4); the pytest plugin is :mod:`engram_conformance.pytest_plugin`.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from . import _core, _kind
from ._core import Error

__all__ = [
    "Error", "Layout", "hash", "HashState", "TokenMap", "token_map", "decode_rows", "tp_shard", "head_shard",
    "gate_v41", "gate_demo", "fuse_v41_stream", "DemoParams", "short_conv", "demo_forward", "explain",
    "random_cases", "judge", "Verdict", "cases", "Case", "SPEC_VERSION", "RANDOM_VERSION", "vectors",
    "batches", "Batch", "assert_conforms", "case_params", "parametrize",
]

SPEC_VERSION: str = _core.SPEC_VERSION
RANDOM_VERSION: str = _core.RANDOM_VERSION
__version__: str = _core.VERSION

_Config = Union[str, "os.PathLike[str]", Mapping[str, Any]]
_modules = sys.modules


class Layout(_core.Layout):
    """§LAY The layout of a configuration: multipliers (§RNG.4), primes (§LAY.2), offsets (§LAY.3).

    ``Layout(config, compressed_vocab_size=None, compressed_pad=None, profile=None)``: ``config`` is a
    config.json path, a dict of its keys (or a vector group's ``config``), or the name of a shipped configuration
    (``"v4.1"``: DeepSeek-V4.1-Flash, ``"demo-v1"``). ``compressed_vocab_size`` V (1 ... 2^31) is required unless
    the configuration gives it (§LAY.4); ``compressed_pad`` defaults to the configuration's pad id used as a
    compressed id (§TOK.5); ``profile`` overrides what a file's keys say (§CFG.1). Integers follow the CLI's rule:
    an int or a decimal str, never a bool or a float (engram.Error / TypeError otherwise).
    """

    @classmethod
    def from_group(cls, group: Mapping[str, Any]) -> "Layout":
        """The layout of a vector group (its ``config``, ``profile``, ``compressedVocabSize``, ``compressedPad``)."""
        if not isinstance(group, Mapping):
            raise TypeError(f"group: must be a vector group (a dict), got {type(group).__name__}")
        missing = [k for k in ("config", "compressedVocabSize", "compressedPad") if k not in group]
        if missing:
            raise Error(f"group: no key {', '.join(repr(k) for k in missing)} (a vector group with a configuration "
                        f"has config, compressedVocabSize and compressedPad; see spec/vectors.md)")
        return cls(group["config"], group["compressedVocabSize"], group["compressedPad"], group.get("profile"))

    def __repr__(self) -> str:
        return (f"engram.Layout(profile={self.profile!r}, V={self.compressed_vocab_size}, pad={self.compressed_pad}, "
                f"layers={self.layer_ids}, max_ngram={self.max_ngram}, heads={self.heads})")


def hash(layout: Layout, ids: Any, out: Any = None) -> Any:  # noqa: A001 - the spec's name
    """§HASH.4 Row ids ``rows[T, layers, columns]`` (int64) of compressed ``ids`` from the sequence start.

    Column ``(n-2)*heads + head``; offsets added (§LAY.3). ``-1`` is DEAD in v4.1 (§HASH.1). ``ids``: integers
    (any integer dtype whose values are int64; a list). ``out``: a C-contiguous int64 array of that shape to write
    into (returned), as a serving engine reuses its buffer. A torch tensor in gives a torch tensor out, on its
    device (computed on the CPU).
    """
    torch = _modules.get("torch")  # inline: a decode step (T = 1) counts the microseconds of this wrapper
    if torch is None or not (isinstance(ids, torch.Tensor) or isinstance(out, torch.Tensor)):
        return _core.hash(layout, ids, out)
    return _append_torch(torch, lambda i, o: _core.hash(layout, i, o), ids, out)


def _append_torch(torch: Any, call: Any, ids: Any, out: Any) -> Any:
    device = _kind.device_of(ids, out)
    if out is not None and isinstance(out, torch.Tensor):
        o = _kind.out_host(out, torch)
        return _kind.out_back(out, call(_kind.host(ids), o), torch)
    return _kind.back(call(_kind.host(ids), out), torch, device)


class HashState:
    """§HASH.6 Incremental hashing: ``append`` continues a sequence, ``rollback(k)`` forgets the last k ids
    (at most ``rollback_capacity`` beyond the mandatory depth), ``fork`` copies, ``export``/``import_`` hand the
    history over (§HASH.7)."""

    def __init__(self, layout: Layout, rollback_capacity: int = 0, _state: Any = None) -> None:
        self.layout = layout
        self._s = _state if _state is not None else _core.HashState(layout, rollback_capacity)

    def append(self, ids: Any, out: Any = None) -> Any:
        """Rows ``[n, layers, columns]`` of the next n ids (into ``out`` when given); torch in, torch out."""
        torch = _modules.get("torch")
        if torch is None or not (isinstance(ids, torch.Tensor) or isinstance(out, torch.Tensor)):
            return self._s.append(ids, out)
        return _append_torch(torch, self._s.append, ids, out)

    def rollback(self, k: int) -> None:
        """Forgets the last ``k`` ids (an integer, 0 ... position)."""
        self._s.rollback(k)

    def fork(self) -> "HashState":
        return HashState(self.layout, _state=self._s.fork())

    @property
    def position(self) -> int:
        return self._s.position

    @property
    def rollback_capacity(self) -> int:
        return self._s.rollback_capacity

    def history(self) -> list:
        return self._s.history()

    def export(self) -> dict:
        """§HASH.7 The history as JSON (position, the last ids, the layout fingerprint)."""
        return json.loads(self._s.export_json())

    @classmethod
    def import_(cls, layout: Layout, history: Mapping[str, Any], rollback_capacity: int = 0) -> "HashState":
        """§HASH.7 A state that continues an exported history (refused for another layout)."""
        return cls(layout, _state=_core.HashState.import_json(layout, history, rollback_capacity))


class TokenMap:
    """§TOK The token map of a tokenizer: ``map[raw id]`` = compressed id, ``compressed_size`` = V."""

    def __init__(self, map: np.ndarray, compressed_size: int, source: str) -> None:  # noqa: A002
        self.map = map
        self.compressed_size = compressed_size
        self.source = source

    def __len__(self) -> int:
        return len(self.map)

    def __repr__(self) -> str:
        return f"engram.TokenMap({self.source!r}, tokens={len(self.map)}, V={self.compressed_size})"


def token_map(tokenizer_json: Union[str, "os.PathLike[str]"]) -> TokenMap:
    """§TOK.1-§TOK.4 The token map of a HuggingFace tokenizer.json (a path, or the JSON text itself)."""
    return TokenMap(*_core.build_token_map(tokenizer_json))


def decode_rows(codes: Any, scales: Any) -> Any:
    """§STO.3 bf16 bits (uint16) of E4M3fn ``codes[..., d]`` times E8M0 ``scales[..., d/32]``: integers 0-255 (any
    integer dtype), or float8_e4m3fn / float8_e8m0fnu arrays. Torch in: a torch bfloat16 tensor on the caller's
    device."""
    torch = _kind.torch_of(codes, scales)
    if torch is None:
        return _core.decode_rows(codes, scales)
    bits = _core.decode_rows(_kind.host(codes), _kind.host(scales))
    return _kind.back(bits, torch, _kind.device_of(codes, scales), bf16=True)


def tp_shard(rows: int, world: int, rank: Optional[int] = None):
    """§STO.7 The rows ``[begin, end)`` rank ``rank`` owns of a table of ``rows`` rows split over ``world`` ranks
    (a list over every rank when ``rank`` is None). ``world`` is 1 ... 4096, as ``engram lookup --world``."""
    return _core.row_shards(rows, world, rank)


def head_shard(columns: int, world: int, rank: int):
    """§STO.8 The columns ``[begin, end)`` rank ``rank`` owns under head parallelism."""
    return _core.head_shard(columns, world, rank)


def gate_v41(dot: float, precision: str = "float64") -> dict:
    """§FUS.4 The v4.1 gate of ``dot``: clamped, root, signed_root, gate; precision float64 or float32 (§FUS.8)."""
    return _core.gate_v41(dot, precision)


def gate_demo(g: float, precision: str = "float64") -> dict:
    """§FUS.6 The demo-v1 gate of ``g``."""
    return _core.gate_demo(g, precision)


def fuse_v41_stream(h: Any, key: Any, value: Any, q_weight: Any, k_weight: Any, eps: float, masked: bool = False,
                    precision: str = "float64") -> dict:
    """§FUS.3-§FUS.4 One hyper-connection stream of the v4.1 fusion: dot, gate, out (float64), out_bf16 (bits).

    bf16 inputs come as their bit patterns (uint16 or int16 arrays, ints 0-65535) or as torch bfloat16 tensors;
    ``eps`` is norm_eps (finite, >= 0). Torch in: ``out`` a float64 and ``out_bf16`` a bfloat16 tensor."""
    arrays = (h, key, value, q_weight, k_weight)
    torch = _kind.torch_of(*arrays)
    if torch is None:
        return _core.fuse_v41_stream(h, key, value, q_weight, k_weight, eps, masked, precision)
    d = _core.fuse_v41_stream(*(_kind.host(a) for a in arrays), eps, masked, precision)
    device = _kind.device_of(*arrays)
    d["out"] = _kind.back(d["out"], torch, device)
    d["out_bf16"] = _kind.back(d["out_bf16"], torch, device, bf16=True)
    return d


_DEMO_ARRAYS = ("key_w", "key_b", "norm1_w", "norm2_w", "value_w", "value_b", "conv_norm_w", "conv_w")


def DemoParams(**kw: Any) -> dict:
    """§FUS.5-§FUS.7 demo-v1 parameters: sizes hc, hidden, in, kernel, dilation (integers >= 1) and real
    arrays key_w [hc, hidden, in], key_b, norm1_w, norm2_w [hc, hidden], value_w [hidden, in], value_b,
    conv_norm_w [hc, hidden], conv_w [hc*hidden, kernel]. Keys, types and values are checked now, the arrays'
    sizes against the sizes when the parameters are used (§ERR.3); the dict holds flat float64 numpy arrays."""
    return _core.demo_params({k: _kind.host(v, real=True) if k in _DEMO_ARRAYS else v for k, v in kw.items()})


def _params(params: Any) -> Any:
    if isinstance(params, Mapping) and not isinstance(params, dict):
        params = dict(params)
    if isinstance(params, dict):
        return {k: _kind.host(v, real=True) for k, v in params.items()}
    return params


def short_conv(value: Any, params: Mapping[str, Any], precision: str = "float64") -> dict:
    """§FUS.7 ShortConv of ``value[T, hc*hidden]``: normed, conv, act (the output). Torch in, torch out."""
    torch = _kind.torch_of(value)
    d = _core.short_conv(_kind.host(value, real=True), _params(params), precision)
    if torch is not None:
        device = _kind.device_of(value)
        d = {k: _kind.back(v, torch, device) for k, v in d.items()}
    return d


def demo_forward(e: Any, hidden: Any, params: Mapping[str, Any], precision: str = "float64") -> dict:
    """§FUS.5-§FUS.7 The demo-v1 forward of ``e[T, in]`` and ``hidden[T, hc, hidden]``: gates [T, hc], value, conv,
    output, hidden_after [T, hc, hidden]. Torch in, torch out."""
    torch = _kind.torch_of(e, hidden)
    d = _core.demo_forward(_kind.host(e, real=True), _kind.host(hidden, real=True), _params(params), precision)
    if torch is not None:
        device = _kind.device_of(e, hidden)
        d = {k: _kind.back(v, torch, device) for k, v in d.items()}
    return d


def explain(layout: Layout, ids: Any, position: Optional[int] = None):
    """§HASH.2-§HASH.4 What the hash did at each position (the intermediates ``engram explain`` and the vectors
    show): the window as read, blocked slots, tokens after blocking, the mixes per layer and order, the residues
    and rows per column. One dict per position, or the one at ``position`` (0 ... T-1)."""
    return json.loads(_core.trace_json(layout, _kind.host(ids), position))


from . import vectors  # noqa: E402
from .vectors import Case, Verdict, judge, random_cases  # noqa: E402
from .batch import Batch  # noqa: E402
from .testing import assert_conforms, case_params, parametrize  # noqa: E402


def cases(suite: str, type: Optional[str] = None, **kw: Any):  # noqa: A002
    """Decorator: one pytest test per tcId of ``suite`` (only groups of ``type`` when given), handed to the test
    as the ``engram_case`` fixture. See engram_conformance.pytest_plugin."""
    import pytest
    return pytest.mark.engram_cases(suite, type=type, **kw)


def batches(suite: str, type: Optional[str] = None, size: Optional[int] = 64, **kw: Any):  # noqa: A002
    """Decorator: one pytest test per batch of ``suite``'s cases (consecutive cases of one group, ``size`` at a
    time; the whole group when None), handed to the test as the ``engram_batch`` fixture (engram.batch.Batch):
    the port answers them in one call, each is judged alone. See engram.batch."""
    import pytest
    return pytest.mark.engram_batches(suite, type=type, size=size, **kw)
