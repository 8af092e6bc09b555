"""Stand-in of deepseek-ai/Engram's engram_demo_v1.py API as conformance/ports/engram-demo/adapter.py calls it
(EngramConfig, BackBoneConfig, CompressedTokenizer, ShortConv, find_next_prime, NgramHashMapping,
get_or_create_hash_mapping, MultiHeadEmbedding, Engram, TransformerBlock), with none of its code: multipliers,
primes and residues come from the in-tree numpy port (_ref.py), which follows the spec, gates and the ShortConv from
its demo-v1 fusion (engram_numpy_port.fusion.Demo, float32); so an adapter that maps the API wrongly (the identity
tokenizer, the pad, the offsets, the layer order, the module-level configurations, the slot weights, the conv taps,
the hooks, the block's mocked attention) fails. It needs no nn.RMSNorm (torch < 2.4 runs it). CI runs the adapter
on it; the real measurement needs the port's checkout."""


@dataclass
class EngramConfig:
    """The fields the adapter sets; the §CFG checks are NgramHashMapping's (the numpy port's parse_config)."""
    tokenizer_name_or_path: str = ""
    engram_vocab_size: List[int] = field(default_factory=list)
    max_ngram_size: int = 3
    n_embed_per_ngram: int = 8
    n_head_per_ngram: int = 1
    layer_ids: List[int] = field(default_factory=list)
    pad_id: int = 0
    seed: int = 0
    kernel_size: int = 4


@dataclass
class BackBoneConfig:
    hidden_size: int = 8
    hc_mult: int = 2
    vocab_size: int = 16
    num_layers: int = 2


class CompressedTokenizer:
    """A raw id -> compressed id table (`lookup_table`) of `num_new_token` compressed ids; negative ids pass
    through unmapped. The stand-in builds no table from a tokenizer: the adapter's subclass sets one."""

    def __init__(self, tokenizer_name_or_path):
        raise NotImplementedError("the stand-in builds no table from a tokenizer")

    def __len__(self):
        return self.num_new_token

    def _compress(self, input_ids):
        ids = np.asarray(input_ids, dtype=np.int64)
        mapped = ids.copy()
        raw = ids >= 0
        mapped[raw] = self.lookup_table[ids[raw]]
        return mapped

    def __call__(self, input_ids):
        return self._compress(input_ids)


class ShortConv(nn.Module):
    def __init__(self, hidden_size, kernel_size=4, dilation=1, norm_eps=1e-5, hc_mult=4, activation=True):
        super().__init__()
        self.kernel, self.dilation, self.hc_mult = kernel_size, dilation, hc_mult
        channels = hidden_size * hc_mult
        self.conv = nn.Conv1d(channels, channels, kernel_size, groups=channels, bias=False)
        self.norms = nn.ModuleList([__import__("_ref").demo_weight(hidden_size) for _ in range(hc_mult)])

    def forward(self, x):
        """x [B, T, hc, H] -> the numpy port's §FUS.7 ShortConv (norm eps 1e-5, SiLU), [B, T, hc, H]."""
        return __import__("_ref").demo_short_conv(x, self.norms, self.conv.weight, self.kernel, self.dilation)


def find_next_prime(start, seen_primes):
    return __import__("_ref").next_prime(start, seen_primes)


class NgramHashMapping:
    def __init__(self, engram_vocab_size, max_ngram_size, n_embed_per_ngram, n_head_per_ngram, layer_ids,
                 tokenizer_name_or_path, pad_id, seed):
        ref = __import__("_ref").ref
        self.layer_ids = layer_ids
        self.max_ngram_size = max_ngram_size
        # the module's CompressedTokenizer, looked up at call time as the demo does (the adapter replaces it)
        self.compressed_tokenizer = CompressedTokenizer(tokenizer_name_or_path=tokenizer_name_or_path)
        v = len(self.compressed_tokenizer)
        self.pad_id = int(self.compressed_tokenizer.lookup_table[pad_id])
        cfg = ref.parse_config({"engram_vocab_size": list(engram_vocab_size), "max_ngram_size": max_ngram_size,
                                "n_embed_per_ngram": n_embed_per_ngram, "n_head_per_ngram": n_head_per_ngram,
                                "layer_ids": list(layer_ids), "pad_id": pad_id, "seed": seed}, "demo-v1")
        self.ref_layout = ref.build_layout(cfg, v, self.pad_id)
        by_id = {l["layerId"]: l for l in self.ref_layout["layers"]}
        self.layer_multipliers = {i: np.asarray(by_id[i]["multipliers"], dtype=np.int64) for i in layer_ids}
        self.vocab_size_across_layers = {i: by_id[i]["primes"] for i in layer_ids}

    def hash(self, input_ids):
        """{layer id: residues [B, T, (max_ngram - 1) * heads]} (row ids without the embedding's offsets)."""
        ref = __import__("_ref").ref
        compressed = self.compressed_tokenizer(input_ids)
        out = {}
        for li, layer in enumerate(self.ref_layout["layers"]):
            per_sequence = []
            for seq in compressed.tolist():
                rows, _ = ref.hash_rows(self.ref_layout, [], 0, seq)
                per_sequence.append(rows[:, li, :] - np.asarray(layer["offsets"], dtype=np.int64))
            out[layer["layerId"]] = np.stack(per_sequence)
        return out


_HASH_MAPPING_CACHE = {}


def get_or_create_hash_mapping(engram_vocab_size, max_ngram_size, n_embed_per_ngram, n_head_per_ngram, layer_ids,
                               tokenizer_name_or_path, pad_id, seed):
    """One NgramHashMapping per configuration (the tokenizer's name included)."""
    key = (tuple(engram_vocab_size), max_ngram_size, n_embed_per_ngram, n_head_per_ngram, tuple(layer_ids),
           tokenizer_name_or_path, pad_id, seed)
    if key not in _HASH_MAPPING_CACHE:
        _HASH_MAPPING_CACHE[key] = NgramHashMapping(engram_vocab_size, max_ngram_size, n_embed_per_ngram,
                                                    n_head_per_ngram, layer_ids, tokenizer_name_or_path, pad_id,
                                                    seed)
    return _HASH_MAPPING_CACHE[key]


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
        """Residues [..., heads] -> rows [..., heads, D] (row id = residue + the head's offset)."""
        return self.embedding(input_ids + self.offsets)


class Engram(nn.Module):
    """Reads the module-level engram_cfg and backbone_config (the adapter sets them)."""

    def __init__(self, layer_id):
        super().__init__()
        cfg, hc, H = engram_cfg, backbone_config.hc_mult, backbone_config.hidden_size
        self.layer_id = layer_id
        self.hash_mapping = get_or_create_hash_mapping(cfg.engram_vocab_size, cfg.max_ngram_size,
                                                       cfg.n_embed_per_ngram, cfg.n_head_per_ngram, cfg.layer_ids,
                                                       cfg.tokenizer_name_or_path, cfg.pad_id, cfg.seed)
        heads = [n for order in self.hash_mapping.vocab_size_across_layers[layer_id] for n in order]
        self.multi_head_embedding = MultiHeadEmbedding(heads, cfg.n_embed_per_ngram // cfg.n_head_per_ngram)
        self.short_conv = ShortConv(H, cfg.kernel_size, cfg.max_ngram_size, hc_mult=hc)
        inn = (cfg.max_ngram_size - 1) * cfg.n_embed_per_ngram
        weight = __import__("_ref").demo_weight
        self.value_proj = weight(H, inn, bias=True)
        self.key_projs = nn.ModuleList([nn.Linear(inn, H) for _ in range(hc)])
        self.norm1 = nn.ModuleList([weight(H) for _ in range(hc)])
        self.norm2 = nn.ModuleList([weight(H) for _ in range(hc)])

    def forward(self, hidden_states, input_ids):
        """hidden_states [B, L, hc, H], input_ids [B, L] -> value + ShortConv(value), value = gate * value_proj(e)
        (the numpy port's §FUS.6 gates), [B, L, hc, H]."""
        rows = torch.from_numpy(self.hash_mapping.hash(input_ids)[self.layer_id])
        e = self.multi_head_embedding(rows).flatten(start_dim=-2)  # [B, L, K]
        B, L, hc, H = hidden_states.shape
        gates = __import__("_ref").demo_gates(self, e, hidden_states.reshape(B, L, hc * H))  # [B, L, hc]
        value = gates.unsqueeze(-1) * self.value_proj(e).unsqueeze(2)
        return value + self.short_conv(value)


class TransformerBlock(nn.Module):
    """A layer of the demo's model: an Engram where engram_cfg lists the layer, then the mocked attention and MoE
    (identities), each added to the stream."""

    def __init__(self, layer_id):
        super().__init__()
        self.attn = self.moe = (lambda x: x)
        self.engram = Engram(layer_id) if layer_id in engram_cfg.layer_ids else None

    def forward(self, input_ids, hidden_states):
        if self.engram is not None:
            hidden_states = hidden_states + self.engram(hidden_states=hidden_states, input_ids=input_ids)
        hidden_states = hidden_states + self.attn(hidden_states)
        return hidden_states + self.moe(hidden_states)
