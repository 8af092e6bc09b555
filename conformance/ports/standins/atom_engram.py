"""Stand-in of ROCm/ATOM's atom/models/deepseek_v41_engram.py API as conformance/ports/atom/adapter.py calls it
(_is_prime, _next_prime, compute_hash_multipliers, EngramLayout.from_args, NgramHashState with forward and
build_history), with none of its code: primes, multipliers, checks and row ids come from the in-tree numpy port
(_ref.py), which follows the spec (DEAD, -1, blocks its own slot and every older one). CI runs the adapter on it;
the real measurement needs the port's checkout."""
from dataclasses import dataclass


def _is_prime(n):
    return __import__("_ref").ref.is_prime(n)


def _next_prime(start, seen):
    return __import__("_ref").next_prime(start, seen)


def compute_hash_multipliers(layer_ids, max_ngram_size, compressed_vocab_size):
    return torch.tensor(__import__("_ref").multipliers_of(layer_ids, max_ngram_size, compressed_vocab_size),
                        dtype=torch.int64)


@dataclass(frozen=True)
class EngramLayout:
    max_ngram_size: int
    layer_ids: tuple
    num_embeddings: tuple
    primes: tuple
    n_heads: int
    head_dim: int

    @property
    def n_hash_cols(self):
        return (self.max_ngram_size - 1) * self.n_heads

    @classmethod
    def from_args(cls, args):
        if not args.engram_layer_ids:
            return None
        layout = __import__("_ref").v41_layout(args.engram_layer_ids, args.engram_max_ngram_size, args.engram_n_heads,
                                               args.engram_vocab_size, args.engram_num_embeddings)
        return cls(args.engram_max_ngram_size, tuple(args.engram_layer_ids), tuple(args.engram_num_embeddings),
                   layout["primes"], args.engram_n_heads, args.engram_head_dim)


class NgramHashState(nn.Module):
    DEAD = -1

    def __init__(self, layout, token_map, compressed_vocab_size, pad_token_id):
        super().__init__()
        standin = __import__("_ref")
        self.layout = layout
        self.lookback = layout.max_ngram_size - 1
        tm = torch.tensor(token_map, dtype=torch.int64) if not torch.is_tensor(token_map) else token_map
        self.pad_id = int(tm[pad_token_id].item())
        self.ref_layout = {"layers": [
            {"multipliers": m, "primes": [list(o) for o in p],
             "offsets": __import__("numpy").cumsum([0] + [x for o in p for x in o][:-1]).tolist()}
            for m, p in zip(standin.multipliers_of(layout.layer_ids, layout.max_ngram_size, compressed_vocab_size),
                            layout.primes)], "max_ngram": layout.max_ngram_size, "pad": self.pad_id,
            "v": compressed_vocab_size, "profile": "v4.1", "heads": layout.n_heads}
        self.token_map = tm
        self.register_buffer("primes", torch.tensor(layout.primes, dtype=torch.int64), persistent=False)
        self.register_buffer("offsets", torch.tensor([l["offsets"] for l in self.ref_layout["layers"]]),
                             persistent=False)
        self.register_buffer("multipliers", torch.tensor([l["multipliers"] for l in self.ref_layout["layers"]]),
                             persistent=False)

    def _compress(self, i):
        if i == self.DEAD:
            return self.DEAD
        if not 0 <= i < self.token_map.numel():
            raise IndexError(f"id {i} outside the token map of {self.token_map.numel()}")
        return int(self.token_map[i])

    def forward(self, input_ids, positions, history, token_mask=None):
        ref = __import__("_ref").ref
        out = []
        for t, i in enumerate(input_ids.tolist()):
            c = self.DEAD if token_mask is not None and not bool(token_mask[t]) else self._compress(i)
            pos = int(positions[t])
            hist = list(reversed(history[t, :min(pos, self.lookback)].tolist()))
            rows, _ = ref.hash_rows(self.ref_layout, hist, pos, [c])
            out.append(rows[0])
        return torch.tensor(out, dtype=torch.int64)

    def build_history(self, input_ids, positions, cu_seqlens, slot_state):
        """Per request run of cu_seqlens: each slot's look-back (newest first) from the run, then its slot_state row,
        which is updated in place; like the port's, it takes no token mask."""
        ids = [self._compress(i) for i in input_ids.tolist()]
        cu = [int(x) for x in cu_seqlens.tolist()]
        if cu[0] != 0 or cu[-1] != len(ids) or any(cu[b + 1] < cu[b] for b in range(len(cu) - 1)):
            raise ValueError(f"stand-in build_history: boundaries {cu} for {len(ids)} ids")
        hist = torch.empty((len(ids), self.lookback), dtype=torch.int64)
        for b in range(len(cu) - 1):
            run = ids[cu[b]:cu[b + 1]]
            past = slot_state[b].tolist()  # newest first
            for t in range(len(run)):
                seen = list(reversed(run[:t])) + past  # newest first
                hist[cu[b] + t] = torch.tensor(seen[:self.lookback], dtype=torch.int64)
            slot_state[b] = torch.tensor((list(reversed(run)) + past)[:self.lookback], dtype=torch.int64)
        return hist
