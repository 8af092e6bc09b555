"""Stand-in of deepseek-ai/Engram's engram_demo_v1.py API as conformance/ports/engram-demo/adapter.py calls it
(CompressedTokenizer, find_next_prime, NgramHashMapping, MultiHeadEmbedding), with none of its code: multipliers,
primes and residues come from the in-tree numpy port (_ref.py), which follows the spec; so an adapter that maps
the API wrongly (the identity tokenizer, the pad, the offsets, the layer order) fails. CI runs the adapter on it;
the real measurement needs the port's checkout."""


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
