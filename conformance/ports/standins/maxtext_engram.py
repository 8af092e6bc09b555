"""Stand-in of AI-Hypercomputer/maxtext's src/maxtext/layers/engram.py API as conformance/ports/maxtext/adapter.py
calls it (NgramHashMapping with layer_multipliers, vocab_size_across_layers, get_vocab_sizes and __call__;
StaticWrapper; MultiHeadEmbedding with its offsets and Embed; ShortConv and Engram, flax nnx modules with the
port's parameter names and shapes), with none of its code: the demo-v1 layout and row ids come from the in-tree
numpy port (_ref.py), which follows the spec (int64 multipliers, where the port draws int32 ones), and so do the
gate (eps 2^-23, where the port's norms take 1e-5) and ShortConv (engram_numpy_port.fusion.Demo). The adapter's
namespace supplies CompressedTokenizer, nnx, jnp, np and the layers (standins/maxtext_layers.py). CI runs the
adapter on it; the real measurement needs the port's checkout."""


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


class MultiHeadEmbedding(nnx.Module):
    def __init__(self, config, mesh, vocab_sizes, head_dim, rngs=None):
        self.offsets = StaticWrapper(np.asarray(np.cumsum([0] + list(vocab_sizes)[:-1]), dtype=np.int64))
        self.embedding = Embed(num_embeddings=sum(vocab_sizes), num_features=head_dim, config=config, mesh=mesh,
                               rngs=rngs)

    def __call__(self, input_ids):
        return self.embedding(np.asarray(input_ids) + self.offsets.val)


class ShortConv(nnx.Module):
    """The port's ShortConv API; it also holds the stand-in's helpers (the adapter loads only the API's names)."""

    class Stacked(nnx.Module):
        """The per-branch norms' stacked scale [G, D] (the port vmaps G RMSNorms)."""

        def __init__(self, g, d):
            self.scale = nnx.Param(jnp.ones((g, d), jnp.float32))

    class Kernel(nnx.Module):
        def __init__(self, shape):
            self.kernel = nnx.Param(jnp.zeros(shape, jnp.float32))

    @staticmethod
    def demo_of(hc, hidden, inn, kernel, dilation, arrays):
        """engram_numpy_port.fusion.Demo over the given arrays, in the demo's layouts (the others zero)."""
        fusion = __import__("engram_numpy_port.fusion", fromlist=["Demo"])
        sizes = {"keyWeight": hc * hidden * inn, "keyBias": hc * hidden, "norm1Weight": hc * hidden,
                 "norm2Weight": hc * hidden, "valueWeight": hidden * inn, "valueBias": hidden,
                 "convNormWeight": hc * hidden, "convWeight": hc * hidden * kernel}
        g = {"hc": hc, "hidden": hidden, "in": inn, "kernel": kernel, "dilation": dilation}
        for key, n in sizes.items():
            values = np.asarray(arrays[key]).reshape(-1).tolist() if key in arrays else [0.0] * n
            g[key] = [float(v).hex() for v in values]
        return fusion.Demo(g)

    def __init__(self, config, hidden_size, kernel_size, dilation, mhc_expansion_rate, rngs=None):
        self.hidden, self.kernel, self.dilation, self.g = hidden_size, kernel_size, dilation, mhc_expansion_rate
        self.norm = ShortConv.Stacked(mhc_expansion_rate, hidden_size)
        self.conv = ShortConv.Kernel((kernel_size, 1, mhc_expansion_rate * hidden_size))

    def __call__(self, x):
        B, S, G, D = x.shape
        conv_w = np.transpose(np.asarray(self.conv.kernel[...]), (2, 1, 0))  # torch's [G·D, 1, kernel]
        dm = ShortConv.demo_of(G, D, 1, self.kernel, self.dilation,
                               {"convNormWeight": self.norm.scale[...], "convWeight": conv_w})
        x = np.asarray(x)
        out = [dm.short_conv(x[b].reshape(-1).tolist(), S, 32) for b in range(B)]
        return jnp.asarray(np.array(out, np.float32).reshape(B, S, G, D))


class Engram(nnx.Module):
    def __init__(self, config, mesh, vocab_sizes, engram_num_heads, engram_head_dim, engram_max_ngram_size,
                 engram_kernel_size, mhc_expansion_rate, rngs=None):
        G, D = mhc_expansion_rate, config.emb_dim
        self.inn = engram_head_dim * engram_num_heads * (engram_max_ngram_size - 1)
        self.multi_head_embedding = MultiHeadEmbedding(config, mesh, vocab_sizes, engram_head_dim, rngs)
        self.key_proj = DenseGeneral(self.inn, (G, D), use_bias=True, rngs=rngs)
        self.k_norm, self.q_norm = ShortConv.Stacked(G, D), ShortConv.Stacked(G, D)
        self.value_proj = DenseGeneral(self.inn, D, use_bias=True, rngs=rngs)
        self.short_conv = ShortConv(config, D, engram_kernel_size, engram_max_ngram_size, G, rngs)

    def __call__(self, hidden_states, hash_input_ids):
        B, S, G, D = hidden_states.shape
        e = np.asarray(self.multi_head_embedding(hash_input_ids)).reshape(B, S, -1)
        value = np.asarray(self.value_proj(jnp.asarray(e)))  # [B, S, D]; refuses another width of e
        dm = ShortConv.demo_of(G, D, self.inn, 1, 1, {
            "keyWeight": np.transpose(np.asarray(self.key_proj.kernel[...]), (1, 2, 0)),
            "keyBias": self.key_proj.bias[...], "norm1Weight": self.k_norm.scale[...],
            "norm2Weight": self.q_norm.scale[...]})
        h = np.asarray(hidden_states)
        gates = np.array([[dm.gate_token(e[b, s].tolist(), h[b, s].reshape(-1).tolist(), 32)[0]
                           for s in range(S)] for b in range(B)], np.float32)  # [B, S, G]
        gated = jnp.asarray(gates[:, :, :, None] * value[:, :, None, :])
        return gated + self.short_conv(gated)
