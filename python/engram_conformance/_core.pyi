"""Type stubs of engram_conformance._core, the nanobind bindings of the C++ reference (python/src/core.cc).

The public API is engram (engram/__init__.py), engram.vectors and engram_conformance.pytest_plugin; each function there
cites its spec § id.
"""
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import numpy.typing as npt

SPEC_VERSION: str
RANDOM_VERSION: str
VERSION: str

class Error(ValueError):
    """§GEN.4 A refusal: the message names where (file, key, field, position) and what (the value), as the CLI
    prints it after ``engram: error:``."""

class Layout:
    """§LAY The layout of a configuration (use engram.Layout)."""
    def __init__(self, config: Any, compressed_vocab_size: Optional[int] = None, compressed_pad: Optional[int] = None,
                 profile: Optional[str] = None) -> None:
        """config: a config.json path, a dict of its keys, or 'v4.1' / 'demo-v1'; integers by the CLI's rule."""
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
    def layer_ids(self) -> List[int]: ...
    @property
    def multipliers(self) -> List[List[int]]:
        """§RNG.4 per layer, one per look-back slot."""
    @property
    def primes(self) -> List[List[List[int]]]:
        """§LAY.2 per layer, [order index n-2][head]."""
    @property
    def offsets(self) -> List[List[int]]:
        """§LAY.3 per layer, per column."""
    @property
    def num_embeddings(self) -> List[int]: ...
    @property
    def fingerprint(self) -> str: ...

def hash(layout: Layout, ids: Any, out: Optional[npt.NDArray[np.int64]] = None) -> npt.NDArray[np.int64]:
    """§HASH.4 rows[T, layers, columns]; ids: any integer array or sequence whose values are int64s."""
def trace_json(layout: Layout, ids: Any, position: Optional[int] = None) -> str: ...

class HashState:
    """§HASH.6 (use engram.HashState)."""
    def __init__(self, layout: Layout, rollback_capacity: int = 0) -> None: ...
    def append(self, ids: Any, out: Optional[npt.NDArray[np.int64]] = None) -> npt.NDArray[np.int64]: ...
    def rollback(self, k: int) -> None: ...
    def fork(self) -> "HashState": ...
    @property
    def position(self) -> int: ...
    @property
    def rollback_capacity(self) -> int: ...
    def history(self) -> List[int]: ...
    def export_json(self) -> str:
        """§HASH.7"""
    @staticmethod
    def import_json(layout: Layout, history: dict, rollback_capacity: int = 0) -> "HashState":
        """§HASH.7"""

def build_token_map(tokenizer_json: Any) -> Tuple[npt.NDArray[np.int64], int, str]:
    """§TOK.1-§TOK.4 (map, compressed size, source) of a tokenizer.json path or its JSON text."""
def decode_rows(codes: Any, scales: Any) -> npt.NDArray[np.uint16]:
    """§STO.3"""
def decode_e4m3(code: int) -> float:
    """§STO.1"""
def decode_e8m0(scale: int) -> float:
    """§STO.2"""
def decode_element(code: int, scale: int) -> int:
    """§STO.3"""
def row_shards(rows: int, world: int, rank: Optional[int] = None) -> Any:
    """§STO.7 (begin, end) of rank, or a list over every rank when rank is None."""
def head_shard(columns: int, world: int, rank: int) -> Tuple[int, int]:
    """§STO.8"""
def owner_rank(rows: int, world: int, row: int) -> int:
    """§STO.7"""
def gate_v41(dot: float, precision: str = "float64") -> dict:
    """§FUS.4"""
def gate_demo(g: float, precision: str = "float64") -> dict:
    """§FUS.6"""
def fuse_v41_stream(h: Any, key: Any, value: Any, q_weight: Any, k_weight: Any, eps: float, masked: bool = False,
                    precision: str = "float64") -> dict:
    """§FUS.3-§FUS.4; bf16 inputs as bit patterns (uint16/int16, ints 0-65535)."""
def demo_params(params: dict) -> dict:
    """§FUS.5-§FUS.7 the checked parameters (sizes as ints, arrays as float64)."""
def short_conv(value: Any, params: dict, precision: str = "float64") -> dict:
    """§FUS.7"""
def demo_forward(e: Any, hidden: Any, params: dict, precision: str = "float64") -> dict:
    """§FUS.5-§FUS.7"""
def split(type: str, test: str) -> Tuple[str, str]:
    """§CONF.1 (inputs, expected) as JSON text."""
def judge(suite: str, group: str, test: str, answer: str, notes: str) -> Tuple[str, str, str, bool]:
    """§CONF.4 (status, reason, detail, trivial)."""
def random_suites() -> List[str]:
    """§CONF.7"""
def random_doc(suite: str, seed: int, n: int) -> str:
    """§CONF.7"""
def random_typed(suite: str, seed: int, n: int, type: str) -> Tuple[str, List[int]]:
    """§CONF.7 the first n cases of type in the stream (the document, each case's number)."""
def serialize(doc: str) -> str: ...
def write_vectors_dir(out: str, docs: List[Tuple[str, str]], schema_dir: str) -> str:
    """§CONF.7, §VEC.9"""
def released_set(manifest_sha256: str) -> Optional[str]:
    """§VEC.13"""
def vectors_kind(manifest_sha256: str) -> str:
    """§VEC.13"""
def check_vectors(dir: str, suites: List[str]) -> Tuple[str, Optional[str], List[str], Dict[str, str]]:
    """§CONF.4 (manifest sha256, released set or None, every suite, {suite: document text} of `suites`), checked as
    engram conform checks them (`suites` against their schemas too)."""
def choose_shard(index: Optional[str], count: Optional[str], env: Dict[str, str]) -> Tuple[int, int, str]:
    """§CONF.9 item 1 (index, count, source), by engram conform's rules."""
def touch_shard_status_file(env: Dict[str, str]) -> None:
    """§CONF.9 item 1 Bazel's TEST_SHARD_STATUS_FILE."""
def decimal_in(name: str, value: str, lo: int, hi: int) -> int: ...
def check_save_failures(dir: str) -> None:
    """§CONF.7 item 5"""
def random_case_doc(suite: str, seed: int, index: int) -> str:
    """§CONF.7 case `index` alone, as a vector document."""
def random_types(suite: str, seed: int, n: int) -> List[str]: ...
def random_numbers(suite: str, seed: int, n: int, type: str) -> List[int]:
    """§CONF.7 the numbers of the first n cases of type in the stream (at most max(10^4, 100 n) looked at)."""
def session_problems(outcomes: List[Tuple[str, str, str, bool, bool]], random: int) -> List[str]:
    """§CONF.4 the problems of a session, by engram conform's rule."""
def cli_main(argv: List[str], self: List[str], schemas: str, vectors: str) -> int:
    """The engram command line in this process (python -m engram_conformance); the exit status."""
