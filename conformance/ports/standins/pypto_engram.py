"""Stand-in of pypto-serving's pypto_serving/model/deepseek_v41/engram.py API (EngramLayout, EngramHashState with
snapshot/restore, compute_hash_multipliers, shard_plan, SparseEngramLookup) with none of its code: every answer comes from the in-tree numpy port (_ref.py).
CI runs conformance/ports/pypto/adapter.py on it; the real measurement needs the port's checkout."""
from dataclasses import dataclass

import _ref  # conformance/ports/standins, on PYTHONPATH (standin_test.py sets it)


@dataclass(frozen=True)
class EngramLayout:
    max_ngram_size: int
    layer_ids: tuple
    num_embeddings: tuple
    primes: tuple
    n_heads: int
    head_dim: int

    @classmethod
    def from_config(cls, config):
        text = config.get("text_config", config)
        layout = _ref.v41_layout(text["engram_layer_ids"], text["engram_max_ngram_size"], text["engram_n_heads"],
                                 text["engram_vocab_size"], text["engram_num_embeddings"])
        return cls(text["engram_max_ngram_size"], tuple(text["engram_layer_ids"]), tuple(text["engram_num_embeddings"]),
                   layout["primes"], text["engram_n_heads"], text["engram_head_dim"])


def compute_hash_multipliers(layout, compressed_vocab_size):
    return tuple(tuple(_ref.ref.multipliers(0, l, compressed_vocab_size, layout.max_ngram_size))
                 for l in layout.layer_ids)


@dataclass(frozen=True)
class EngramSnapshot:
    owner: object
    position: int
    retained_start: int
    history: tuple


class EngramHashState:
    DEAD = -1

    def __init__(self, layout, token_map, *, compressed_vocab_size, pad_token_id, rollback_window=256,
                 multipliers=None, expected_token_map_sha256=None):
        self.layout, self.token_map = layout, tuple(token_map)
        self.pad_id = self.token_map[pad_token_id]
        primes = [[list(r) for r in l] for l in layout.primes]
        layers = []
        for li, l in enumerate(layout.layer_ids):
            flat = [p for r in primes[li] for p in r]
            layers.append(dict(layerId=l, primes=primes[li], numEmbeddings=sum(flat),
                               offsets=[sum(flat[:i]) for i in range(len(flat))],
                               multipliers=_ref.ref.multipliers(0, l, compressed_vocab_size, layout.max_ngram_size)))
        self.ref_layout = dict(profile="v4.1", v=compressed_vocab_size, pad=self.pad_id,
                               max_ngram=layout.max_ngram_size, heads=layout.n_heads, layers=layers)
        self.state = _ref.ref.State(self.ref_layout, rollback_window)

    @property
    def position(self):
        return self.state.position

    def snapshot(self):
        return EngramSnapshot(self, self.state.position, self.state.position - len(self.state.recent),
                              tuple(self.state.recent))

    def restore(self, snapshot):
        if snapshot.owner is not self:
            raise ValueError("Engram snapshot belongs to another request")
        # as a spec import (§HASH.9) checks the history: its count and its ids
        _ref.ref.State(self.ref_layout).import_({"position": snapshot.position, "history": list(snapshot.history)},
                                                 None, None)
        self.state.position, self.state.recent = snapshot.position, list(snapshot.history)

    def rollback(self, position):
        if position < 0:
            raise ValueError("rollback position must be >= 0")
        self.state.rollback(self.state.position - position)

    def advance(self, token_ids, *, start_pos, token_mask=None):
        if start_pos != self.state.position:
            raise ValueError("position mismatch")
        mask = [True] * len(token_ids) if token_mask is None else list(token_mask)
        for t in token_ids:
            if not 0 <= t < len(self.token_map):
                raise ValueError("token ID is outside the tokenizer vocabulary")
        ids = [self.token_map[t] if m else self.DEAD for t, m in zip(token_ids, mask)]
        return self.state.append(ids)


@dataclass(frozen=True)
class EngramShard:
    rank: int
    global_start: int
    valid_rows: int
    capacity_rows: int


def shard_plan(layout, layer_id, world_size):
    rows = layout.num_embeddings[layout.layer_ids.index(layer_id)]
    part = -(-rows // world_size)
    return tuple(EngramShard(r, r * part, max(0, min(part, rows - r * part)), part) for r in range(world_size))


class SparseEngramLookup:
    def __init__(self, layout, reader, *, world_size, max_rows_per_read=256):
        self.layout, self.reader, self.world_size = layout, reader, world_size

    def lookup(self, layer_id, row_ids):
        shards = shard_plan(self.layout, layer_id, self.world_size)
        total = self.layout.num_embeddings[self.layout.layer_ids.index(layer_id)]
        if any(not 0 <= r < total for r in row_ids):
            raise ValueError("Engram row ID is outside the unpadded table")
        out = []
        for r in row_ids:
            rank, local = divmod(r, shards[0].capacity_rows)
            row = self.reader(layer_id, rank, (local,))[local]
            # as §STO.7's all_reduce at world >= 2: the other ranks' +0 added (-0 becomes +0)
            out.append(tuple(float(x) + 0.0 if self.world_size > 1 else float(x) for x in row))
        return tuple(out)
