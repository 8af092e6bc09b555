"""Stand-in of the official V4.1 inference/engram.py API (tt-metal vendors it; sglang's manual-test model keeps
it, with its Engram module): the names, signatures and tensor shapes the adapter in
conformance/python/engram_adapter/official_api.py calls, and no code of the port. Every answer comes from the
in-tree numpy port (_ref.py). CI runs the adapters on it; the real measurement needs the port's checkout
(scripts/ports.sh)."""
from dataclasses import dataclass


def find_next_prime(start, seen_primes):
    return __import__("_ref").next_prime(start, seen_primes)


def build_compressed_token_map(tokenizer):
    raise NotImplementedError("the stand-in builds no token map (the adapter gives the identity map)")


def compute_hash_multipliers(layer_ids, max_ngram_size, tokenizer_vocab_size):
    ref = __import__("_ref").ref
    return torch.stack([torch.tensor(ref.multipliers(0, l, tokenizer_vocab_size, max_ngram_size), dtype=torch.int64)
                        for l in layer_ids])


@dataclass(frozen=True)
class EngramLayout:
    max_ngram_size: int
    layer_ids: tuple
    num_embeddings: tuple
    primes: tuple
    n_heads: int
    head_dim: int

    @classmethod
    def from_args(cls, args):
        layout = __import__("_ref").v41_layout(args.engram_layer_ids, args.engram_max_ngram_size, args.engram_n_heads,
                                               args.engram_vocab_size, args.engram_num_embeddings)
        return cls(args.engram_max_ngram_size, tuple(args.engram_layer_ids), tuple(args.engram_num_embeddings),
                   layout["primes"], args.engram_n_heads, args.engram_head_dim)


class NgramHashState(nn.Module):
    DEAD = -1

    def __init__(self, args, layout, tokenizer):
        super().__init__()
        standin = __import__("_ref")
        self.layout = layout
        token_map, vocab_size = build_compressed_token_map(tokenizer)
        assert vocab_size == args.engram_compressed_vocab_size, (vocab_size, args.engram_compressed_vocab_size)
        self.pad_id = token_map[args.engram_pad_id]
        cfg = standin.v41_config(layout.layer_ids, layout.max_ngram_size, layout.n_heads, args.engram_vocab_size)
        self.ref_layout = standin.ref.build_layout(cfg, vocab_size, self.pad_id)
        self.register_buffer("primes", torch.tensor(layout.primes), persistent=False)
        self.register_buffer("offsets", torch.tensor([l["offsets"] for l in self.ref_layout["layers"]]), persistent=False)
        self.register_buffer("multipliers", torch.tensor([l["multipliers"] for l in self.ref_layout["layers"]]),
                             persistent=False)
        self.register_buffer("token_map", torch.tensor(token_map), persistent=False)
        self.register_buffer("cache", torch.empty(args.max_batch_size, args.max_seq_len, dtype=torch.int64),
                             persistent=False)

    def forward(self, input_ids, start_pos, token_mask=None):
        ref = __import__("_ref").ref
        ids = input_ids[0].tolist()
        mask = [True] * len(ids) if token_mask is None else token_mask[0].tolist()
        n_map = self.token_map.numel()
        compressed = []
        for i, m in zip(ids, mask):
            if not 0 <= i < n_map and m:
                raise IndexError(f"id {i} outside the token map of {n_map}")
            compressed.append(int(self.token_map[i]) if m else self.DEAD)
        w = self.layout.max_ngram_size - 1
        history = self.cache[0, max(0, start_pos - w):start_pos].tolist()
        rows, _ = ref.hash_rows(self.ref_layout, history, start_pos, compressed)
        self.cache[0, start_pos:start_pos + len(ids)] = torch.tensor(compressed, dtype=torch.int64)
        return torch.tensor(rows, dtype=torch.int64)[None]


class EngramEmbedding(nn.Module):
    """The fp8 table read (sglang's manual-test model keeps it in this file): rows decoded by the numpy port."""

    def __init__(self, num_embeddings, dim):
        super().__init__()
        __import__("_ref").fp8_table(self, num_embeddings, dim)

    def forward(self, indices):
        return __import__("_ref").table_rows(self, indices)


class Engram(nn.Module):
    """The module (sglang's manual-test model keeps it in this file; its wkv is the Linear of dsv41_linear.py):
    x + gate * value by the numpy port's §FUS.3."""

    def __init__(self, args, layer_id, layout):
        super().__init__()
        __import__("_ref").engram_params(self, args, layer_id, layout, EngramEmbedding, Linear)

    def forward(self, x, hash_ids, token_mask=None):
        return __import__("_ref").engram_forward(self, x, hash_ids, token_mask)
