"""
The Engram reference in-process: nanobind bindings of the C++ reference, vectors and runner
(python/src, one bind_<area>.cc per area).

The public API is engram_conformance (engram_conformance/__init__.py), engram_conformance.vectors and
engram_conformance.pytest_plugin; each function there cites its spec § id.
"""

from collections.abc import Mapping, Sequence
import os
from typing import Any

import numpy
import numpy.typing


class Error(ValueError):
    """
    §GEN.4 A refusal: the message names where (file, key, field, position) and what (the value), as the CLI
    prints it after ``engram: error:``.
    """

SPEC_VERSION: str = ...

RANDOM_VERSION: str = ...

VERSION: str = ...

class Layout:
    """§LAY The layout of a configuration (use engram_conformance.Layout)."""

    def __init__(self, config: str | os.PathLike[str] | Mapping[str, Any], compressed_vocab_size: int | None = None, compressed_pad: int | None = None, profile: str | None = None) -> None:
        """
        config: a config.json path, a dict of its keys, or 'v4.1' / 'demo-v1'; integers by the CLI's rule.
        """

    @property
    def profile(self) -> str: ...

    @property
    def compressed_vocab_size(self) -> int: ...

    @property
    def compressed_pad(self) -> int: ...

    @property
    def max_ngram(self) -> int: ...

    @property
    def heads(self) -> int: ...

    @property
    def columns(self) -> int: ...

    @property
    def layer_ids(self) -> list[int]: ...

    @property
    def multipliers(self) -> list[list[int]]:
        """§RNG.4 per layer, one per look-back slot."""

    @property
    def primes(self) -> list[list[list[int]]]:
        """§LAY.2 per layer, [order index n-2][head]."""

    @property
    def offsets(self) -> list[list[int]]:
        """§LAY.3 per layer, per column."""

    @property
    def num_embeddings(self) -> list[int]: ...

    @property
    def fingerprint(self) -> str: ...

def hash(layout: Layout, ids: numpy.typing.ArrayLike, out: numpy.typing.NDArray[numpy.int64] | None = None) -> numpy.typing.NDArray[numpy.int64]:
    """
    §HASH.4 rows[T, layers, columns]; ids: any integer array or sequence whose values are int64s.
    """

def trace_json(layout: Layout, ids: numpy.typing.ArrayLike, position: int | None = None) -> str:
    """
    §HASH.2-§HASH.4 the intermediates of every position, or of `position`, as JSON text.
    """

class HashState:
    """§HASH.6 (use engram_conformance.HashState)."""

    def __init__(self, layout: Layout, rollback_capacity: int = 0) -> None: ...

    def append(self, ids: numpy.typing.ArrayLike, out: numpy.typing.NDArray[numpy.int64] | None = None) -> numpy.typing.NDArray[numpy.int64]:
        """
        §HASH.6 rows[len(ids), layers, columns] of the next ids, into `out` when given.
        """

    def rollback(self, k: int) -> None:
        """§HASH.6 back k positions."""

    def fork(self) -> HashState: ...

    @property
    def position(self) -> int: ...

    @property
    def rollback_capacity(self) -> int: ...

    def history(self) -> list[int]: ...

    def export_json(self) -> str:
        """§HASH.7"""

    @staticmethod
    def import_json(layout: Layout, history: dict[str, Any], rollback_capacity: int = 0) -> HashState:
        """§HASH.7"""

def build_token_map(tokenizer_json: str | os.PathLike[str]) -> tuple[numpy.typing.NDArray[numpy.int64], int, str]:
    """
    §TOK.1-§TOK.4 (map, compressed size, source) of a tokenizer.json path or its JSON text.
    """

def decode_rows(codes: numpy.typing.ArrayLike, scales: numpy.typing.ArrayLike) -> numpy.typing.NDArray[numpy.uint16]:
    """§STO.3 bf16 bits of codes[..., d] times scales[..., d/32]."""

def decode_e4m3(code: int) -> float:
    """§STO.1"""

def decode_e8m0(scale: int) -> float:
    """§STO.2"""

def decode_element(code: int, scale: int) -> int:
    """§STO.3"""

def row_shards(rows: int, world: int, rank: int | None = None) -> tuple[int, int] | list[tuple[int, int]]:
    """
    §STO.7 (begin, end) of rank, or a list over every rank when rank is None.
    """

def head_shard(columns: int, world: int, rank: int) -> tuple[int, int]:
    """§STO.8"""

def owner_rank(rows: int, world: int, row: int) -> int:
    """§STO.7"""

def gate_v41(dot: float, precision: str = 'float64') -> dict[str, float]:
    """§FUS.4 {clamped, root, signed_root, gate}."""

def gate_demo(g: float, precision: str = 'float64') -> dict[str, float]:
    """§FUS.6 {clamped, root, signed_root, gate}."""

def fuse_v41_stream(h: numpy.typing.ArrayLike, key: numpy.typing.ArrayLike, value: numpy.typing.ArrayLike, q_weight: numpy.typing.ArrayLike, k_weight: numpy.typing.ArrayLike, eps: float, masked: bool = False, precision: str = 'float64') -> dict[str, Any]:
    """
    §FUS.3-§FUS.4; bf16 inputs as bit patterns (uint16/int16, ints 0-65535).
    """

def demo_params(params: dict[str, Any]) -> dict[str, Any]:
    """
    §FUS.5-§FUS.7 the checked parameters (sizes as ints, arrays as float64).
    """

def short_conv(value: numpy.typing.ArrayLike, params: dict[str, Any], precision: str = 'float64') -> dict[str, numpy.typing.NDArray[numpy.float64]]:
    """§FUS.7 {normed, conv, act}, each [T, hc * hidden]."""

def demo_forward(e: numpy.typing.ArrayLike, hidden: numpy.typing.ArrayLike, params: dict[str, Any], precision: str = 'float64') -> dict[str, numpy.typing.NDArray[numpy.float64]]:
    """
    §FUS.5-§FUS.7 {gates [T, hc], value, conv, output, hidden_after [T, hc, hidden]}.
    """

def random_suites() -> list[str]:
    """§CONF.7 the suites with a random generator."""

def random_doc(suite: str, seed: int, n: int) -> str:
    """§CONF.7 cases 1 ... n, as the bytes `engram vectors random` writes."""

def random_numbers(suite: str, seed: int, n: int, type: str) -> list[int]:
    """
    §CONF.7 the numbers of the first n cases of type in the stream (at most max(10^4, 100 n) looked at).
    """

def random_typed(suite: str, seed: int, n: int, type: str) -> tuple[str, list[int]]:
    """
    §CONF.7 the first n cases of type in the stream (the document, each case's number).
    """

def random_case_doc(suite: str, seed: int, index: int) -> str:
    """§CONF.7 case `index` alone, as a vector document."""

def random_types(suite: str, seed: int, n: int) -> list[str]:
    """§CONF.7 the types of cases 1 ... n."""

def serialize(doc: str) -> str:
    """§VEC.8 a vector document's text as the generator writes it."""

def write_vectors_dir(out: str, docs: Sequence[tuple[str, str]], schema_dir: str) -> str:
    """§CONF.7, §VEC.9"""

def released_set(manifest_sha256: str) -> str | None:
    """§VEC.13"""

def vectors_kind(manifest_sha256: str) -> str:
    """§VEC.13"""

def split(type: str, test: str) -> tuple[str, str]:
    """
    §CONF.1 (inputs, expected) as JSON text: what a port is sent and what it must produce.
    """

def judge(suite: str, group: str, test: str, answer: str, notes: str) -> tuple[str, str, str, bool]:
    """
    §CONF.4 (status, reason, detail, trivial): the runner's verdict on one answer.
    """

def check_vectors(dir: str, suites: Sequence[str]) -> tuple[str, str | None, list[str], dict[str, str]]:
    """
    §CONF.4 (manifest sha256, released set or None, every suite, {suite: document text} of `suites`), checked
    as engram conform checks them (`suites` against their schemas too).
    """

def choose_shard(index: str | None, count: str | None, env: Mapping[str, str]) -> tuple[int, int, str]:
    """§CONF.9 item 1 (index, count, source), by engram conform's rules."""

def touch_shard_status_file(env: Mapping[str, str]) -> None:
    """§CONF.9 item 1 Bazel's TEST_SHARD_STATUS_FILE."""

def decimal_in(name: str, value: str, lo: int, hi: int) -> int:
    """
    `value` as a decimal integer in [lo, hi], by the CLI's rule, or an Error naming `name`.
    """

def check_save_failures(dir: str) -> None:
    """§CONF.7 item 5"""

def session_problems(outcomes: Sequence[tuple[str, str, str, bool, bool]], random: int) -> list[str]:
    """§CONF.4 the problems of a session, by engram conform's rule."""

def cli_main(argv: Sequence[str], self: Sequence[str], schemas: str, vectors: str) -> int:
    """
    The engram command line in this process (python -m engram_conformance); the exit status.
    """
