"""Stand-in of NVIDIA-NeMo/Automodel's nemo_automodel/components/models/deepseek_v41/engram.py API as
conformance/ports/nemo/adapter.py calls it (_MULTIPLIER_SEED, _DEAD_TOKEN, _is_prime, find_next_prime,
compute_hash_multipliers, EngramLayout, DeepseekV41EngramHasher, DeepseekV41Engram), with none of its code:
layouts, multipliers, rows and the gated streams come from the in-tree numpy port (_ref.py), which follows the
spec, so an adapter that maps the API wrongly (the config namespace, the token map and raw pad, the mask, the
positions, the gate's kv, q / k weights and eps) fails. The table and the wkv are the adapter's stubs, as the
port's constructor builds them. CI runs the adapter on it; the real measurement needs the port's checkout."""

_MULTIPLIER_SEED = 10007
_DEAD_TOKEN = -1


def _is_prime(n):
    return __import__("_ref").ref.is_prime(n)


def find_next_prime(start, seen_primes):
    return __import__("_ref").next_prime(start, seen_primes)


def compute_hash_multipliers(layer_ids, max_ngram_size, compressed_vocab_size):
    """[layers, max_ngram] int64."""
    return torch.tensor(__import__("_ref").multipliers_of(layer_ids, max_ngram_size, compressed_vocab_size),
                        dtype=torch.int64)


@dataclass(frozen=True)
class EngramLayout:
    max_ngram_size: int
    layer_ids: tuple
    num_embeddings: tuple
    primes: tuple  # [layer][order][head]
    n_heads: int
    head_dim: int

    @classmethod
    def from_config(cls, config):
        layout = __import__("_ref").v41_layout(config.engram_layer_ids, config.engram_max_ngram_size,
                                               config.engram_n_heads, config.engram_vocab_size,
                                               config.engram_num_embeddings)
        return cls(config.engram_max_ngram_size, tuple(config.engram_layer_ids), tuple(config.engram_num_embeddings),
                   layout["primes"], config.engram_n_heads, config.engram_head_dim)


class DeepseekV41EngramHasher(nn.Module):
    """Raw ids [B, L] -> rows [B, L, layers, cols] through an attached raw -> compressed token map."""

    def __init__(self, config, layout):
        super().__init__()
        standin = __import__("_ref")
        self.layout = layout
        self.vocab_size = int(config.vocab_size)
        self.compressed_vocab_size = int(config.engram_compressed_vocab_size) or self.vocab_size
        self.raw_pad_token_id = int(config.engram_pad_token_id)
        self.cfg = standin.v41_config(layout.layer_ids, layout.max_ngram_size, layout.n_heads, config.engram_vocab_size)
        probe = standin.ref.build_layout(self.cfg, self.compressed_vocab_size, 0)
        self.register_buffer("multipliers", torch.tensor([l["multipliers"] for l in probe["layers"]],
                                                         dtype=torch.int64), persistent=False)
        self.register_buffer("offsets", torch.tensor([l["offsets"] for l in probe["layers"]], dtype=torch.int64),
                             persistent=False)
        self.token_map = torch.empty(0, dtype=torch.int64)
        if self.compressed_vocab_size == self.vocab_size:  # a model vocabulary that is the compressed one
            self.set_token_map(list(range(self.vocab_size)), self.vocab_size)

    @property
    def has_token_map(self):
        return self.token_map.numel() > 0

    def set_token_map(self, lookup, compressed_vocab_size):
        if int(compressed_vocab_size) != self.compressed_vocab_size:
            raise ValueError(f"compressed vocabulary {compressed_vocab_size} != {self.compressed_vocab_size}")
        table = torch.as_tensor(lookup, dtype=torch.int64)
        if table.numel() < self.vocab_size:
            raise ValueError(f"a token map of {table.numel()} ids for a vocabulary of {self.vocab_size}")
        self.token_map = table[:self.vocab_size]
        self.pad_id = int(self.token_map[self.raw_pad_token_id])
        self.ref_layout = __import__("_ref").ref.build_layout(self.cfg, self.compressed_vocab_size, self.pad_id)

    def forward(self, input_ids, position_ids, token_mask=None):
        ref = __import__("_ref").ref
        if not self.has_token_map:
            raise RuntimeError("no token map attached")
        out = []
        for b, raw in enumerate(input_ids.tolist()):
            positions = position_ids[b].tolist()
            if positions != list(range(len(raw))):  # one document from position 0 (what the adapter asks)
                raise NotImplementedError(f"the stand-in hashes one document from 0, got positions {positions}")
            mask = [True] * len(raw) if token_mask is None else token_mask[b].tolist()
            compressed = []
            for i, keep in zip(raw, mask):
                if not 0 <= i < self.token_map.numel():
                    raise ValueError(f"raw id {i} outside the token map of {self.token_map.numel()}")
                compressed.append(int(self.token_map[i]) if keep else _DEAD_TOKEN)
            rows, _ = ref.hash_rows(self.ref_layout, [], 0, compressed)
            cols = (self.layout.max_ngram_size - 1) * self.layout.n_heads
            out.append(torch.tensor(rows, dtype=torch.int64).reshape(len(raw), len(self.layout.layer_ids), cols))
        return torch.stack(out)


class DeepseekV41Engram(nn.Module):
    """One layer: x [B, L, hc, dim], hash ids [B, L, cols] -> x + gate * value (the numpy port's v41_stream)."""

    def __init__(self, config, layer_idx, layout, backend, *, engram_process_group=None):
        super().__init__()
        self.dim, self.hc_mult, self.eps = int(config.hidden_size), int(config.hc_mult), float(config.rms_norm_eps)
        dtype = get_dtype(config.torch_dtype, torch.bfloat16)
        rows = layout.num_embeddings[layout.layer_ids.index(layer_idx)]
        self.embed = Qwen3_8_FlashNextEngramTableConfig(num_embeddings=rows, embedding_dim=layout.head_dim,
                                                        initializer_range=1.0).build(
            process_group=engram_process_group, dtype=dtype)
        cols = (layout.max_ngram_size - 1) * layout.n_heads
        self.wkv = initialize_linear_module(backend.linear, cols * layout.head_dim, self.dim * (self.hc_mult + 1),
                                            bias=False, dtype=dtype)
        self.q_weight = nn.Parameter(torch.ones(self.hc_mult, self.dim, dtype=dtype))
        self.k_weight = nn.Parameter(torch.ones(self.hc_mult, self.dim, dtype=dtype))

    def forward(self, x, hash_ids, token_mask=None):
        return __import__("_ref").engram_forward(self, x, hash_ids, token_mask)
