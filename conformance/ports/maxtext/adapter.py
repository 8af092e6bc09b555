#!/usr/bin/env python3
"""JSON-lines adapter for AI-Hypercomputer/maxtext's Engram, src/maxtext/layers/engram.py (NgramHashMapping,
MultiHeadEmbedding's offsets), a JAX port of the demo (demo-v1), run by JAX on the CPU. See README.md beside
this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/maxtext/adapter.py --checkout DIR"
"""
import os
import sys
from types import SimpleNamespace
from typing import List, Optional

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import sympy  # noqa: E402

from engram_adapter.portlib import Adapter, IdentityTable, Unsupported, as_int_rows, config_of, load_defs, main

PATH = "src/maxtext/layers/engram.py"
NAMES = ["NgramHashMapping", "StaticWrapper", "MultiHeadEmbedding"]



class IdentityCompressedTokenizer:
    """In place of the port's CompressedTokenizer (which builds its table from a Hugging Face tokenizer): the
    identity table of V ids, so that the hash suites' compressed ids reach the hash unchanged; negative ids pass
    through, as the port's __call__ passes them."""
    size = 0

    def __init__(self, tokenizer):
        self.lookup_table_np = IdentityTable(self.size)
        self.num_new_token = self.size

    def __len__(self):
        return self.num_new_token

    def __call__(self, input_ids):
        return jnp.asarray(input_ids, dtype=jnp.int32)


class Embed:
    """Stand-in for maxtext.layers.embeddings.Embed (a flax table): the number of rows is all the offsets need."""

    def __init__(self, num_embeddings, num_features, config=None, mesh=None, rngs=None):
        self.num_embeddings = num_embeddings


class MaxText(Adapter):
    name = "AI-Hypercomputer/maxtext src/maxtext/layers/engram.py (JAX, CPU)"
    suites = ["multipliers", "layout", "hash_demo"]
    profiles = ["demo-v1"]

    def __init__(self, checkout):
        super().__init__(checkout)
        self.version = f"checkout (jax {jax.__version__})"
        nnx = SimpleNamespace(Module=object, Rngs=object)
        ns = {"np": np, "jnp": jnp, "jax": jax, "sympy": sympy, "List": List, "Optional": Optional,
              "HFTokenizer": object, "Array": object, "Config": object, "Mesh": object, "nnx": nnx,
              "MODEL_MODE_TRAIN": "train", "CompressedTokenizer": IdentityCompressedTokenizer, "Embed": Embed}
        self.ns = load_defs(os.path.join(checkout, PATH), NAMES, ns)
        self.mappings = {}

    def mapping(self, bases, max_ngram, heads, layer_ids, v, pad, seed):
        key = repr((bases, max_ngram, heads, layer_ids, v, pad, seed))
        if key not in self.mappings:
            IdentityCompressedTokenizer.size = v
            self.mappings[key] = self.ns["NgramHashMapping"](
                engram_vocab_bases=bases, max_ngram_size=max_ngram, engram_num_heads=heads, layer_ids=layer_ids,
                tokenizer=None, pad_id=pad, seed=seed)
        return self.mappings[key]

    def of_config(self, cfg, v, pad):
        return self.mapping(list(cfg["engram_vocab_size"]), cfg["max_ngram_size"], cfg["n_head_per_ngram"],
                            list(cfg["layer_ids"]), v, pad, cfg["seed"])

    def offsets(self, mp, layer):
        """MultiHeadEmbedding's offsets and table size, from the port's own constructor (the table a stub)."""
        emb = self.ns["MultiHeadEmbedding"](config=None, mesh=None, vocab_sizes=mp.get_vocab_sizes(layer), head_dim=1)
        return emb.offsets.val, emb.embedding.num_embeddings

    def answer(self, suite, type_, group, test):
        if type_ == "MultipliersTest":
            m = test["maxNgram"]
            mp = self.mapping([2] * max(m - 1, 0), m, 1, [test["layerId"]], test["compressedVocabSize"], 0,
                              test["seed"])
            return {"multipliers": as_int_rows(mp.layer_multipliers[test["layerId"]])}
        if type_ == "LayoutTest":
            if test["profile"] != "demo-v1":
                raise Unsupported("v4.1 layouts: the port implements demo-v1 only")
            mp = self.of_config(config_of(test), test["compressedVocabSize"], test["compressedPad"])
            layers = []
            for layer in mp.layer_ids:
                offsets, rows = self.offsets(mp, layer)
                layers.append({"layerId": layer, "multipliers": as_int_rows(mp.layer_multipliers[layer]),
                               "primes": as_int_rows(mp.vocab_size_across_layers[layer]),
                               "offsets": as_int_rows(offsets), "numEmbeddings": int(rows)})
            return {"layers": layers}
        if type_ == "HashTest":
            mp = self.of_config(config_of(group), group["compressedVocabSize"], group["compressedPad"])
            ids = test["ids"]
            if not ids:
                return {"rows": []}
            by_layer = mp(np.array([ids], dtype=np.int64))  # the port's __call__: its token map, then its hash
            per_layer = []
            for layer in mp.layer_ids:
                offsets, _ = self.offsets(mp, layer)
                # MultiHeadEmbedding.__call__: shifted_ids = input_ids + offsets (jnp int32 + numpy int64)
                per_layer.append(np.asarray(by_layer[layer][0] + offsets))  # [T, C]
            return {"rows": as_int_rows(np.stack(per_layer, axis=1))}
        raise Unsupported(f"{type_}: the port hashes whole sequences (no per-sequence state)")


if __name__ == "__main__":
    sys.exit(main(MaxText, __doc__))
