"""The Engram reference in-process (docs/python.md).

Every function here calls the C++ reference that the ``engram`` CLI links
(``engram._core``, nanobind): there is no second implementation. Names follow
spec/: ``Layout`` (§LAY), ``hash`` (§HASH.4), ``HashState`` (§HASH.6),
``token_map`` (§TOK), ``decode_rows`` (§STO.3), ``tp_shard`` (§STO.7),
the gates, ShortConv and forward (§FUS) in the float64 reference and its
float32 mirror (§FUS.8), ``explain`` (the hash's intermediates, §HASH.2-§HASH.4).

Errors raise :class:`engram.Error` whose message is the one the CLI prints
after ``engram: error:``.

The vectors are :mod:`engram.vectors`; :func:`random_cases` draws the cases
``engram conform --random`` asks (§CONF.7); :func:`judge` is the runner's
verdict (§CONF.4); the pytest plugin is :mod:`engram.pytest_plugin`.
"""
from __future__ import annotations

import json
import os
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from . import _core
from ._core import Error

__all__ = [
    "Error", "Layout", "hash", "HashState", "TokenMap", "token_map", "decode_rows", "tp_shard", "head_shard",
    "gate_v41", "gate_demo", "fuse_v41_stream", "DemoParams", "short_conv", "demo_forward", "explain",
    "random_cases", "judge", "Verdict", "cases", "Case", "SPEC_VERSION", "RANDOM_VERSION", "vectors",
    "batches", "Batch",
]

SPEC_VERSION: str = _core.SPEC_VERSION
RANDOM_VERSION: str = _core.RANDOM_VERSION
__version__: str = _core.VERSION

_Config = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def _ids(ids: Any) -> np.ndarray:
    if type(ids) is np.ndarray and ids.dtype == np.int64 and ids.ndim == 1 and ids.flags.c_contiguous:
        return ids  # the common case, checked first: a decode step's overhead is counted in microseconds
    a = np.asarray(ids)
    if a.dtype != np.int64:
        if a.size and not np.issubdtype(a.dtype, np.integer):
            raise Error(f"ids: dtype {a.dtype} is not an integer type (compressed ids are int64, §HASH.1)")
        a = a.astype(np.int64)
    if a.ndim != 1:
        raise Error(f"ids: shape {a.shape}; expected one sequence [T] (§HASH.4)")
    return np.ascontiguousarray(a)


class Layout(_core.Layout):
    """§LAY The layout of a configuration: multipliers (§RNG.4), primes (§LAY.2), offsets (§LAY.3).

    ``config`` is a config.json path, a dict of its keys (or a vector group's ``config``), or the
    name of a shipped configuration (``"v4.1"``: DeepSeek-V4.1-Flash, ``"demo-v1"``).
    ``compressed_vocab_size`` V is required unless the configuration gives it (§LAY.4);
    ``compressed_pad`` defaults to the configuration's pad id used as a compressed id (§TOK.5).
    """

    def __init__(self, config: _Config, compressed_vocab_size: Optional[int] = None,
                 compressed_pad: Optional[int] = None, profile: Optional[str] = None) -> None:
        builtin = path = text = ""
        source = "config"
        if isinstance(config, Mapping):
            text = json.dumps(config)
        elif isinstance(config, str) and config in ("v4.1", "demo-v1"):
            builtin = config
        elif isinstance(config, (str, os.PathLike)):
            path = source = os.fspath(config)
        else:
            raise Error(f"config: {type(config).__name__} is not a path, a dict or 'v4.1'/'demo-v1'")
        super().__init__(builtin, path, text, source, profile or "", int(compressed_vocab_size or 0),
                         None if compressed_pad is None else int(compressed_pad))

    @classmethod
    def from_group(cls, group: Mapping[str, Any]) -> "Layout":
        """The layout of a vector group (its ``config``, ``profile``, ``compressedVocabSize``, ``compressedPad``)."""
        return cls(group["config"], group["compressedVocabSize"], group["compressedPad"], group.get("profile"))

    def __repr__(self) -> str:
        return (f"engram.Layout(profile={self.profile!r}, V={self.compressed_vocab_size}, pad={self.compressed_pad}, "
                f"layers={self.layer_ids}, max_ngram={self.max_ngram}, heads={self.heads})")


def hash(layout: Layout, ids: Any, out: Optional[np.ndarray] = None) -> np.ndarray:  # noqa: A001 - the spec's name
    """§HASH.4 Row ids ``rows[T, layers, columns]`` (int64) of compressed ``ids`` from the sequence start.

    Column ``(n-2)*heads + head``; offsets added (§LAY.3). ``-1`` is DEAD in v4.1 (§HASH.1). ``out``: a
    C-contiguous int64 array of that shape to write into (returned), as a serving engine reuses its buffer.
    """
    try:  # int64 ids in one C-contiguous row go straight through (a decode step counts microseconds)
        return _core.hash(layout, ids, out)
    except TypeError:
        return _core.hash(layout, _ids(ids), out)


class HashState:
    """§HASH.6 Incremental hashing: ``append`` continues a sequence, ``rollback(k)`` forgets the last k ids
    (at most ``rollback_capacity`` beyond the mandatory depth), ``fork`` copies, ``export``/``import_`` hand the
    history over (§HASH.7)."""

    def __init__(self, layout: Layout, rollback_capacity: int = 0, _state: Any = None) -> None:
        self.layout = layout
        self._s = _state if _state is not None else _core.HashState(layout, rollback_capacity)

    def append(self, ids: Any, out: Optional[np.ndarray] = None) -> np.ndarray:
        """Rows ``[n, layers, columns]`` of the next n ids (into ``out`` when given)."""
        try:
            return self._s.append(ids, out)
        except TypeError:
            return self._s.append(_ids(ids), out)

    def rollback(self, k: int) -> None:
        self._s.rollback(int(k))

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
        return cls(layout, _state=_core.HashState.import_json(layout, json.dumps(history), rollback_capacity))


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
    if isinstance(tokenizer_json, str) and tokenizer_json.lstrip().startswith("{"):
        text, source = tokenizer_json, "tokenizer.json"
    else:
        source = os.fspath(tokenizer_json)
        with open(source, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    m, v = _core.build_token_map(text, source)
    return TokenMap(m, v, source)


def decode_rows(codes: Any, scales: Any) -> np.ndarray:
    """§STO.3 bf16 bits (uint16) of E4M3fn ``codes[..., d]`` times E8M0 ``scales[..., d/32]``."""
    return _core.decode_rows(np.ascontiguousarray(codes, dtype=np.uint8), np.ascontiguousarray(scales, dtype=np.uint8))


def tp_shard(rows: int, world: int, rank: Optional[int] = None):
    """§STO.7 The rows ``[begin, end)`` rank ``rank`` owns of a table of ``rows`` rows split over ``world`` ranks
    (a list over every rank when ``rank`` is None)."""
    if rank is None:
        return [_core.row_shard(rows, r, world) for r in range(world)]
    return _core.row_shard(rows, rank, world)


def head_shard(columns: int, world: int, rank: int):
    """§STO.8 The columns ``[begin, end)`` rank ``rank`` owns under head parallelism."""
    return _core.head_shard(columns, rank, world)


def gate_v41(dot: float, precision: str = "float64") -> dict:
    """§FUS.4 The v4.1 gate of ``dot``: clamped, root, signed_root, gate; precision float64 or float32 (§FUS.8)."""
    return _core.gate_v41(float(dot), precision)


def gate_demo(g: float, precision: str = "float64") -> dict:
    """§FUS.6 The demo-v1 gate of ``g``."""
    return _core.gate_demo(float(g), precision)


def _bf16(a: Any) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.uint16).reshape(-1)


def fuse_v41_stream(h: Any, key: Any, value: Any, q_weight: Any, k_weight: Any, eps: float, masked: bool = False,
                    precision: str = "float64") -> dict:
    """§FUS.3-§FUS.4 One hyper-connection stream of the v4.1 fusion (bf16 bits in): dot, gate, out, out_bf16."""
    return _core.fuse_v41_stream(_bf16(h), _bf16(key), _bf16(value), _bf16(q_weight), _bf16(k_weight), float(eps),
                                 bool(masked), precision)


_DEMO_SIZES = ("hc", "hidden", "in", "kernel", "dilation")
_DEMO_ARRAYS = ("key_w", "key_b", "norm1_w", "norm2_w", "value_w", "value_b", "conv_norm_w", "conv_w")


def DemoParams(**kw: Any) -> dict:
    """§FUS.5-§FUS.7 demo-v1 parameters: sizes hc, hidden, in, kernel, dilation and float64 arrays
    key_w [hc, hidden, in], key_b, norm1_w, norm2_w [hc, hidden], value_w [hidden, in], value_b,
    conv_norm_w [hc, hidden], conv_w [hc*hidden, kernel]."""
    out: dict = {}
    for k in _DEMO_SIZES:
        out[k] = int(kw[k])
    for k in _DEMO_ARRAYS:
        out[k] = np.ascontiguousarray(kw[k], dtype=np.float64).reshape(-1)
    return out


def short_conv(value: Any, params: Mapping[str, Any], precision: str = "float64") -> dict:
    """§FUS.7 ShortConv of ``value[T, hc*hidden]``: normed, conv, act (the output)."""
    v = np.ascontiguousarray(value, dtype=np.float64)
    return _core.short_conv(v.reshape(-1), v.shape[0] if v.ndim else 0, dict(params), precision)


def demo_forward(e: Any, hidden: Any, params: Mapping[str, Any], precision: str = "float64") -> dict:
    """§FUS.5-§FUS.7 The demo-v1 forward: gates [T, hc], value, conv, output, hidden_after [T, hc, hidden]."""
    ea = np.ascontiguousarray(e, dtype=np.float64)
    ha = np.ascontiguousarray(hidden, dtype=np.float64)
    return _core.demo_forward(ea.reshape(-1), ha.reshape(-1), ea.shape[0], dict(params), precision)


def explain(layout: Layout, ids: Any, position: Optional[int] = None):
    """§HASH.2-§HASH.4 What the hash did at each position (the intermediates ``engram explain`` and the vectors
    show): the window as read, blocked slots, tokens after blocking, the mixes per layer and order, the residues
    and rows per column. One dict per position, or the one at ``position``."""
    traces = json.loads(_core.trace_json(layout, _ids(ids)))
    return traces if position is None else traces[position]


from . import vectors  # noqa: E402
from .vectors import Case, Verdict, judge, random_cases  # noqa: E402
from .batch import Batch  # noqa: E402


def cases(suite: str, type: Optional[str] = None, **kw: Any):  # noqa: A002
    """Decorator: one pytest test per tcId of ``suite`` (only groups of ``type`` when given), handed to the test
    as the ``engram_case`` fixture. See engram.pytest_plugin."""
    import pytest
    return pytest.mark.engram_cases(suite, type=type, **kw)


def batches(suite: str, type: Optional[str] = None, size: Optional[int] = 64, **kw: Any):  # noqa: A002
    """Decorator: one pytest test per batch of ``suite``'s cases (consecutive cases of one group, ``size`` at a
    time; the whole group when None), handed to the test as the ``engram_batch`` fixture (engram.batch.Batch):
    the port answers them in one call, each is judged alone. See engram.batch."""
    import pytest
    return pytest.mark.engram_batches(suite, type=type, size=size, **kw)
