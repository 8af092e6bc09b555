"""Stand-in of Megatron-LM's megatron/core/models/engram/engram_module.py API (pull request 3689) as
conformance/ports/megatron/adapter.py calls it (EngramConfig, CompressedTokenizer, _find_next_prime,
_calculate_vocab_size_across_layers, NgramHashMapping, MultiHeadEmbedding, ShortConv, EngramModule), with none of
its code: layouts and residues come from the in-tree numpy port (_ref.py), gates and the ShortConv from its demo-v1
fusion (engram_numpy_port.fusion.Demo, float32), so an adapter that maps the API wrongly (the identity tokenizer,
the pad, the offsets, the slot weights, the conv taps, the hooks) fails. It needs no nn.RMSNorm (torch < 2.4 runs
it). CI runs the adapter on it; the real measurement needs the port's checkout."""


@dataclass
class EngramConfig:
    """The fields the adapter sets; the §CFG checks are NgramHashMapping's (the numpy port's parse_config)."""
    engram_vocab_size: list = field(default_factory=list)
    max_ngram_size: int = 3
    n_embed_per_ngram: int = 8
    n_head_per_ngram: int = 1
    engram_layer_ids: list = field(default_factory=list)
    pad_id: int = 0
    seed: int = 0
    kernel_size: int = 4
    hc_mult: int = 4
    tokenizer_name_or_path: str = ""


class CompressedTokenizer:
    """A raw id -> compressed id table (`lookup_table`) of `num_new_token` ids; negative ids pass through unmapped.
    The stand-in builds no table from a tokenizer: the adapter's subclass sets one."""

    def __init__(self, tokenizer_name_or_path):
        raise NotImplementedError("the stand-in builds no table from a tokenizer")

    def __len__(self):
        return self.num_new_token

    def __call__(self, input_ids):
        ids = np.asarray(input_ids, dtype=np.int64)
        mapped = ids.copy()
        keep = ids >= 0
        mapped[keep] = self.lookup_table[ids[keep]]
        return mapped


def _find_next_prime(start, seen_primes):
    return __import__("_ref").next_prime(start, seen_primes)


def _calculate_vocab_size_across_layers(engram_vocab_size, max_ngram_size, n_head_per_ngram, layer_ids):
    ref = __import__("_ref").ref
    cfg = ref.parse_config({"engram_vocab_size": list(engram_vocab_size), "max_ngram_size": max_ngram_size,
                            "n_embed_per_ngram": 1, "n_head_per_ngram": n_head_per_ngram,
                            "layer_ids": list(layer_ids), "pad_id": 0, "seed": 0}, "demo-v1")
    return {l["layerId"]: l["primes"] for l in ref.build_layout(cfg, 1, 0)["layers"]}


class NgramHashMapping:
    def __init__(self, engram_vocab_size, max_ngram_size, n_embed_per_ngram, n_head_per_ngram, layer_ids,
                 tokenizer_name_or_path, pad_id, seed):
        ref = __import__("_ref").ref
        self.layer_ids = layer_ids
        self.compressed_tokenizer = CompressedTokenizer(tokenizer_name_or_path=tokenizer_name_or_path)
        self.pad_id = int(self.compressed_tokenizer.lookup_table[pad_id])
        cfg = ref.parse_config({"engram_vocab_size": list(engram_vocab_size), "max_ngram_size": max_ngram_size,
                                "n_embed_per_ngram": n_embed_per_ngram, "n_head_per_ngram": n_head_per_ngram,
                                "layer_ids": list(layer_ids), "pad_id": pad_id, "seed": seed}, "demo-v1")
        self.ref_layout = ref.build_layout(cfg, len(self.compressed_tokenizer), self.pad_id)
        by_id = {l["layerId"]: l for l in self.ref_layout["layers"]}
        self.layer_multipliers = {i: np.asarray(by_id[i]["multipliers"], dtype=np.int64) for i in layer_ids}
        self.vocab_size_across_layers = {i: by_id[i]["primes"] for i in layer_ids}

    def hash(self, input_ids):
        """{layer id: residues [B, T, (max_ngram - 1) * heads]} (row ids without the embedding's offsets)."""
        ref = __import__("_ref").ref
        if isinstance(input_ids, torch.Tensor):
            input_ids = input_ids.numpy()
        compressed = self.compressed_tokenizer(input_ids)
        out = {}
        for li, layer in enumerate(self.ref_layout["layers"]):
            per_sequence = []
            for seq in compressed.tolist():
                rows, _ = ref.hash_rows(self.ref_layout, [], 0, seq)
                per_sequence.append(rows[:, li, :] - np.asarray(layer["offsets"], dtype=np.int64))
            out[layer["layerId"]] = np.stack(per_sequence)
        return out


class MultiHeadEmbedding(nn.Module):
    """One table of sum(list_of_N) rows of width D; head j's rows start at offsets[j]."""

    def __init__(self, list_of_N, D):
        super().__init__()
        starts, total = [], 0
        for n in list_of_N:
            starts.append(total)
            total += n
        self.register_buffer("offsets", torch.tensor(starts, dtype=torch.long))
        self.embedding = nn.Embedding(num_embeddings=total, embedding_dim=D)

    def forward(self, input_ids):
        return self.embedding(input_ids + self.offsets)


class ShortConv(nn.Module):
    def __init__(self, hidden_size, kernel_size=4, dilation=1, norm_eps=1e-5, hc_mult=4, activation=True):
        super().__init__()
        self.hidden, self.kernel, self.dilation, self.hc_mult = hidden_size, kernel_size, dilation, hc_mult
        channels = hidden_size * hc_mult
        self.conv = nn.Conv1d(channels, channels, kernel_size, groups=channels, bias=False)
        self.norms = nn.ModuleList([__import__("_ref").demo_weight(hidden_size) for _ in range(hc_mult)])

    def forward(self, x):
        """x [B, T, hc, H] -> the numpy port's §FUS.7 ShortConv (norm eps 1e-5, SiLU), [B, T, hc, H]."""
        return __import__("_ref").demo_short_conv(x, self.norms, self.conv.weight, self.kernel, self.dilation)


class EngramModule(nn.Module):
    def __init__(self, layer_id, hidden_size, engram_config, vocab_size_for_layer):
        super().__init__()
        self.layer_id, self.hidden_size, self.hc_mult = layer_id, hidden_size, engram_config.hc_mult
        heads = [n for order in vocab_size_for_layer for n in order]
        inn = (engram_config.max_ngram_size - 1) * engram_config.n_embed_per_ngram
        self.multi_head_embedding = MultiHeadEmbedding(heads, engram_config.n_embed_per_ngram //
                                                       engram_config.n_head_per_ngram)
        self.short_conv = ShortConv(hidden_size, engram_config.kernel_size, engram_config.max_ngram_size,
                                    hc_mult=engram_config.hc_mult)
        weight = __import__("_ref").demo_weight
        self.value_proj = weight(hidden_size, inn, bias=True)
        self.key_projs = nn.ModuleList([nn.Linear(inn, hidden_size) for _ in range(self.hc_mult)])
        self.norm1 = nn.ModuleList([weight(hidden_size) for _ in range(self.hc_mult)])
        self.norm2 = nn.ModuleList([weight(hidden_size) for _ in range(self.hc_mult)])
        self._cached_embeddings = None

    def precompute_embeddings(self, hash_ids, device):
        self._cached_embeddings = self.multi_head_embedding(torch.from_numpy(hash_ids)).flatten(start_dim=-2)

    def forward(self, hidden_states):
        """hidden_states [S, B, H], one per position, given to every slot -> the slots' mean of value + ShortConv
        (value = gate * value_proj(e): the numpy port's §FUS.6 gates), [S, B, H]."""
        e = self._cached_embeddings  # [B, S, K]
        hidden = hidden_states.transpose(0, 1)  # [B, S, H]
        gates = __import__("_ref").demo_gates(self, e, hidden.repeat(1, 1, self.hc_mult))  # [B, S, hc]
        value = gates.unsqueeze(-1) * self.value_proj(e).unsqueeze(2)  # [B, S, hc, H]
        out = (value + self.short_conv(value)).mean(dim=2)
        self._cached_embeddings = None
        return out.transpose(0, 1).contiguous()
