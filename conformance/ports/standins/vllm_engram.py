"""Stand-in of vLLM's vllm/models/deepseek_v41/common/engram.py CPU API as conformance/ports/vllm/adapter.py calls
it (DEAD_ID, _is_prime, find_next_prime, compute_hash_multipliers, EngramLayout), with none of its code: primes,
multipliers and the configuration checks come from the in-tree numpy port (_ref.py), which follows the spec. CI
runs the adapter on it; the real measurement needs the port's checkout."""

DEAD_ID = -1


def _is_prime(n):
    return __import__("_ref").ref.is_prime(n)


def find_next_prime(start, seen_primes):
    return __import__("_ref").next_prime(start, seen_primes)


def compute_hash_multipliers(layer_ids, max_ngram_size, compressed_vocab_size):
    """[layers, max_ngram] int64."""
    return torch.tensor(__import__("_ref").multipliers_of(layer_ids, max_ngram_size, compressed_vocab_size),
                        dtype=torch.int64)


class EngramLayout:
    """The layout fields the adapter reads: layer_ids, num_embeddings, max_ngram_size, n_heads, head_dim,
    compressed_vocab_size, pad_token_id, primes [layer][order][head], offsets [layers, cols]."""

    def __init__(self, config):
        layout = __import__("_ref").v41_layout(config.engram_layer_ids, config.engram_max_ngram_size,
                                               config.engram_n_heads, config.engram_vocab_size,
                                               config.engram_num_embeddings)
        self.layer_ids = tuple(config.engram_layer_ids)
        self.num_embeddings = tuple(config.engram_num_embeddings)
        self.max_ngram_size = config.engram_max_ngram_size
        self.n_heads = config.engram_n_heads
        self.head_dim = config.engram_head_dim
        self.compressed_vocab_size = config.engram_compressed_vocab_size
        self.pad_token_id = config.engram_pad_token_id
        self.primes = layout["primes"]
        self.offsets = torch.tensor(layout["offsets"], dtype=torch.int64)

    @classmethod
    def from_config(cls, config):
        return cls(config) if getattr(config, "engram_layer_ids", None) else None
