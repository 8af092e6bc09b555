"""Stand-in of AI-Hypercomputer/maxtext's src/maxtext/layers/engram.py API as conformance/ports/maxtext/adapter.py
calls it (NgramHashMapping with layer_multipliers, vocab_size_across_layers, get_vocab_sizes and __call__;
StaticWrapper; MultiHeadEmbedding's offsets), with none of its code: the demo-v1 layout and row ids come from the
in-tree numpy port (_ref.py), which follows the spec (int64 multipliers, where the port draws int32 ones). The
adapter's namespace supplies CompressedTokenizer and Embed. CI runs the adapter on it; the real measurement needs
the port's checkout."""


class NgramHashMapping:
    def __init__(self, engram_vocab_bases, max_ngram_size, engram_num_heads, layer_ids, tokenizer, pad_id, seed):
        ref = __import__("_ref").ref
        self.compressed_tokenizer = CompressedTokenizer(tokenizer)
        self.tokenizer_vocab_size = len(self.compressed_tokenizer)
        self.pad_id = int(self.compressed_tokenizer.lookup_table_np[pad_id])
        doc = {"engram_vocab_size": list(engram_vocab_bases), "max_ngram_size": max_ngram_size,
               "n_head_per_ngram": engram_num_heads, "layer_ids": list(layer_ids), "pad_id": pad_id, "seed": seed,
               "n_embed_per_ngram": engram_num_heads}
        cfg = ref.parse_config(doc, "demo-v1")
        self.ref_layout = ref.build_layout(cfg, self.tokenizer_vocab_size, self.pad_id)
        self.layer_ids = list(layer_ids)
        self.max_ngram_size = max_ngram_size
        self.layer_multipliers = {l["layerId"]: np.asarray(l["multipliers"]) for l in self.ref_layout["layers"]}
        self.vocab_size_across_layers = {l["layerId"]: l["primes"] for l in self.ref_layout["layers"]}

    def get_vocab_sizes(self, layer_id):
        return [p for order in self.vocab_size_across_layers[layer_id] for p in order]

    def __call__(self, input_ids):
        ref = __import__("_ref").ref
        ids = [int(x) for x in np.asarray(input_ids)[0]]
        rows, _ = ref.hash_rows(self.ref_layout, [], 0, ids)  # [T][layer][col], offsets included
        out = {}
        for li, l in enumerate(self.ref_layout["layers"]):
            offsets = np.asarray(l["offsets"], dtype=np.int64)
            out[l["layerId"]] = (np.asarray([r[li] for r in rows], dtype=np.int64) - offsets)[None]
        return out


class StaticWrapper:
    def __init__(self, val):
        self.val = val


class MultiHeadEmbedding:
    def __init__(self, config, mesh, vocab_sizes, head_dim, rngs=None):
        self.offsets = StaticWrapper(np.asarray(np.cumsum([0] + list(vocab_sizes)[:-1]), dtype=np.int64))
        self.embedding = Embed(num_embeddings=sum(vocab_sizes), num_features=head_dim, config=config, mesh=mesh)
