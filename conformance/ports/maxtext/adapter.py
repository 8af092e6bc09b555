#!/usr/bin/env python3
"""JSON-lines adapter for AI-Hypercomputer/maxtext's Engram, src/maxtext/layers/engram.py (NgramHashMapping,
MultiHeadEmbedding, ShortConv, Engram: flax nnx modules) with the layers they build (normalizations.py RMSNorm,
linears.py DenseGeneral, embeddings.py Embed), a JAX port of the demo (demo-v1), run by JAX on the CPU. See
README.md beside this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/maxtext/adapter.py --checkout DIR"
"""
import enum
import functools
import importlib.metadata
import os
import sys
from types import SimpleNamespace
from typing import Any, Iterable, List, Optional

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402  (NgramHashMapping keeps its multipliers as jnp arrays: every suite needs it)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import sympy  # noqa: E402
from jax import lax  # noqa: E402

from engram_adapter.portlib import (Adapter, IdentityTable, Unsupported, as_int_rows,  # noqa: E402
                                    config_of, line_of, load_defs, main)

import engram_numpy_port as SYNTHETIC  # noqa: E402  (only its synthetic-table generator: a forward test's table)

PATH = "src/maxtext/layers/engram.py"
NAMES = ["StaticWrapper", "MultiHeadEmbedding", "ShortConv", "Engram"]  # the nnx modules
NORMS = "src/maxtext/layers/normalizations.py"
LINEARS = "src/maxtext/layers/linears.py"
EMBEDDINGS = "src/maxtext/layers/embeddings.py"



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


class ShardMode(enum.Enum):
    """maxtext.common.common_types.ShardMode: AUTO (no explicit sharding on one CPU device)."""
    AUTO = "auto"
    EXPLICIT = "explicit"


def zeros_init(key, shape, dtype, *axes):
    """maxtext.layers.initializers' nd_dense_init / default_bias_init / default_embed_init in shape only: the
    adapter loads the test's weights over every parameter. Made by numpy and put on the device: XLA compiles
    jnp.zeros (and jnp.asarray) per shape, and a layout's zero-width table of 10^11 rows took it minutes."""
    return jax.device_put(np.zeros(shape, np.dtype(dtype)))


def config(hidden):
    """The fields of maxtext's Config the modules read: float32 compute and weights (the vectors' contract; base.yml
    has dtype bfloat16), normalization_layer_epsilon 1e-5 and matmul_precision "default" as base.yml sets them."""
    return SimpleNamespace(dtype=jnp.float32, weight_dtype=jnp.float32, normalization_layer_epsilon=1e-5,
                           matmul_precision="default", shard_mode=ShardMode.AUTO, use_iota_embed=False,
                           parameter_memory_host_offload=False, logical_axis_rules=None, emb_dim=hidden)


def floats(values):
    return np.array([float.fromhex(x) if isinstance(x, str) and x not in ("inf", "-inf", "nan") else float(x)
                     for x in values], dtype=np.float32)


def hexes(a):
    return [float(x).hex() for x in np.asarray(a, dtype=np.float32).reshape(-1).tolist()]


def put(param, value):
    param[...] = jnp.asarray(value, dtype=jnp.float32)


class Weights:
    """A demo-v1 group's parameters (§FUS.10) in the layouts of the port's modules: DenseGeneral kernels
    [in, out...] (the demo's torch weights are [out, in]), the per-branch norms' stacked scales [G, D], and
    nnx.Conv's depthwise kernel [kernel, 1, G·D] (torch Conv1d's is [G·D, 1, kernel])."""

    def __init__(self, g):
        hc, H, K, k = g["hc"], g["hidden"], g["in"], g["kernel"]
        self.hc, self.hidden, self.inn, self.kernel, self.dilation = hc, H, K, k, g["dilation"]
        shapes = {"keyWeight": (hc, H, K), "keyBias": (hc, H), "norm1Weight": (hc, H), "norm2Weight": (hc, H),
                  "valueWeight": (H, K), "valueBias": (H,), "convNormWeight": (hc, H), "convWeight": (hc * H, 1, k)}
        self.t = {}
        for key, shape in shapes.items():
            a = floats(g[key])
            if a.size != int(np.prod(shape)):
                raise ValueError(f"{key} has {a.size} values, not {' x '.join(map(str, shape))}")
            self.t[key] = a.reshape(shape)

    def load_conv(self, conv):
        put(conv.norm.scale, self.t["convNormWeight"])
        put(conv.conv.kernel, np.transpose(self.t["convWeight"], (2, 1, 0)))

    def load(self, engram):
        put(engram.key_proj.kernel, np.transpose(self.t["keyWeight"], (2, 0, 1)))  # [K, G, D]
        put(engram.key_proj.bias, self.t["keyBias"])
        put(engram.k_norm.scale, self.t["norm1Weight"])  # the demo's norm1 normalizes the key
        put(engram.q_norm.scale, self.t["norm2Weight"])  # and norm2 the hidden state
        put(engram.value_proj.kernel, self.t["valueWeight"].T)
        put(engram.value_proj.bias, self.t["valueBias"])
        self.load_conv(engram.short_conv)


STUBS = SimpleNamespace(log=lambda *a: None, device_space=lambda: None)
# what the port's files import, for the definitions the adapter runs (flax's names are added where it is loaded)
COMMON = {"np": np, "jnp": jnp, "jax": jax, "lax": lax, "Any": Any, "Iterable": Iterable, "List": List,
          "Optional": Optional, "Array": object, "Config": object, "Mesh": object, "DType": object,
          "ShardMode": ShardMode, "Initializer": object, "NdInitializer": object, "Quant": object,
          "nnx_wrappers": None, "max_logging": STUBS, "max_utils": STUBS, "MODEL_MODE_TRAIN": "train",
          "MODEL_MODE_PREFILL": "prefill", "nd_dense_init": lambda *a: zeros_init, "default_bias_init": zeros_init,
          "default_embed_init": zeros_init, "logical_to_mesh_axes": lambda *a, **k: None, "sympy": sympy,
          "HFTokenizer": object, "CompressedTokenizer": IdentityCompressedTokenizer}


def nnx_helpers(nnx):
    """The adapter's nnx modules that take a part of Engram's place (flax imported by the caller)."""

    class Ones(nnx.Module):
        """In value_proj's place for a second forward: value = 1, so that ShortConv's input is the gate itself."""

        def __init__(self, width):
            self.width = width

        def __call__(self, x):
            return jnp.ones(x.shape[:-1] + (self.width,), jnp.float32)

    class Fixed(nnx.Module):
        """In multi_head_embedding's place for DemoGateTest: the test's retrieved memory e (the gate suite gives
        e, not ids)."""

        def __init__(self, e):
            self.e = nnx.data(jnp.asarray(e).reshape(1, 1, 1, -1))

        def __call__(self, ids):
            return self.e

    class Recorder(nnx.Module):
        """Around Engram's short_conv: keeps its input (gated_value = gate · value, engram.py:685) in `seen`."""

        def __init__(self, conv, seen):
            self.conv = conv
            self.seen = seen

        def __call__(self, x):
            self.seen.append(np.asarray(x))
            return self.conv(x)

    return Ones, Fixed, Recorder


class MaxText(Adapter):
    name = "AI-Hypercomputer/maxtext src/maxtext/layers/engram.py (JAX, CPU)"
    suites = ["multipliers", "layout", "hash_demo", "gate_demo", "short_conv_demo", "engram_forward"]
    profiles = ["demo-v1"]

    def __init__(self, checkout):
        super().__init__(checkout)
        self.version = f"checkout (jax {jax.__version__}, flax {importlib.metadata.version('flax')})"
        # NgramHashMapping is plain Python over numpy, sympy and jnp: the hash suites' mapping needs no flax
        self.hashing = load_defs(os.path.join(checkout, PATH), ["NgramHashMapping"], dict(COMMON),
                                 future_annotations=True)
        self.mappings = {}

    @functools.cached_property
    def ns(self):
        """flax and the port's nnx modules (MultiHeadEmbedding, ShortConv, Engram and the layers they build),
        loaded on the first test that needs them: multipliers runs without flax, and an adapter restarted after a
        timeout answers its hello without importing it."""
        import flax
        from flax import linen as nn
        from flax import nnx
        from jax.sharding import NamedSharding
        # one CPU device and no mesh: the modules' sharding annotations (out_sharding=kernel_axes) stay metadata
        flax.config.update("flax_always_shard_variable", False)
        common = dict(COMMON, nn=nn, nnx=nnx, NamedSharding=NamedSharding)
        layers = {}
        for path, names in ((NORMS, ["RMSNorm"]),
                            (LINEARS, ["normalize_axes", "canonicalize_tuple", "_compute_dot_general_nnx",
                                       "DenseGeneral"]),
                            (EMBEDDINGS, ["_maybe_move_embedding_to_device", "Embed"])):
            defs = load_defs(os.path.join(self.checkout, path), names, dict(common), future_annotations=True)
            layers.update({n: defs[n] for n in names})
        ns = dict(common, RMSNorm=layers["RMSNorm"], DenseGeneral=layers["DenseGeneral"], Embed=layers["Embed"])
        ns = load_defs(os.path.join(self.checkout, PATH), NAMES, ns, future_annotations=True)
        ns["Ones"], ns["Fixed"], ns["Recorder"] = nnx_helpers(nnx)
        return ns

    def mapping(self, bases, max_ngram, heads, layer_ids, v, pad, seed):
        key = repr((bases, max_ngram, heads, layer_ids, v, pad, seed))
        if key not in self.mappings:
            IdentityCompressedTokenizer.size = v
            self.mappings[key] = self.hashing["NgramHashMapping"](
                engram_vocab_bases=bases, max_ngram_size=max_ngram, engram_num_heads=heads, layer_ids=layer_ids,
                tokenizer=None, pad_id=pad, seed=seed)
        return self.mappings[key]

    def of_config(self, cfg, v, pad):
        return self.mapping(list(cfg["engram_vocab_size"]), cfg["max_ngram_size"], cfg["n_head_per_ngram"],
                            list(cfg["layer_ids"]), v, pad, cfg["seed"])

    def offsets(self, mp, layer):
        """MultiHeadEmbedding's offsets and table size, from the port's own constructor (the table a stub)."""
        emb = self.ns["MultiHeadEmbedding"](config=config(1), mesh=None, vocab_sizes=mp.get_vocab_sizes(layer),
                                            head_dim=0, rngs=self.ns["nnx"].Rngs(0))
        return emb.offsets.val, emb.embedding.num_embeddings

    # ------------------------------------------------------------------ gate, ShortConv, forward

    def engram(self, w, vocab_sizes, heads, max_ngram):
        """The port's Engram as deepseek.py builds it (its dilation is max_ngram_size, engram.py:616), the test's
        weights loaded."""
        module = self.ns["Engram"](
            config=config(w.hidden), mesh=None, vocab_sizes=vocab_sizes, engram_num_heads=heads,
            engram_head_dim=w.inn // (heads * (max_ngram - 1)), engram_max_ngram_size=max_ngram,
            engram_kernel_size=w.kernel, mhc_expansion_rate=w.hc, rngs=self.ns["nnx"].Rngs(0))
        w.load(module)
        return module

    def run(self, module, hidden, ids, ones):
        """Engram.__call__ with short_conv's input recorded; with ones=True value_proj answers ones, so that the
        recorded input is the gate (gate · 1.0, exact). Returns (the module's output, short_conv's input)."""
        seen, conv, value_proj = [], module.short_conv, module.value_proj
        module.short_conv = self.ns["Recorder"](conv, seen)
        if ones:
            module.value_proj = self.ns["Ones"](value_proj.out_features_shape[-1])
        try:
            out = module(hidden, ids)
        finally:
            module.short_conv, module.value_proj = conv, value_proj
        return np.asarray(out), seen[0]

    def hidden_of(self, values, w, steps):
        """The test's hidden state as [B = 1, S, G, D], D the module's emb_dim. A list of another length is no such
        array, so the port never sees it: unsupported (the port reads D from the array, engram.py:642)."""
        h = floats(values)
        shape = (1, steps, w.hc, w.hidden)
        if h.size != int(np.prod(shape)):
            raise Unsupported(f"hidden has {h.size} values: the port takes it as an array of shape "
                              f"{' x '.join(map(str, shape))} "
                              f"({line_of(self.checkout, PATH, 'B, S, _, D = hidden_states.shape')})")
        return jnp.asarray(h.reshape(shape))

    def gate(self, group, test):
        """DemoGateTest: Engram.__call__ on one position, its retrieved memory the test's e (multi_head_embedding
        answers e), the hidden state the test's [G, D]; value is short_conv's input gate · value_proj(e)."""
        w = Weights(group)
        module = self.engram(w, [2], 1, 2)
        module.multi_head_embedding = self.ns["Fixed"](floats(test["e"]))
        hidden = self.hidden_of(test["hidden"], w, 1)
        ids = jnp.zeros((1, 1, 1), jnp.int32)
        _, value = self.run(module, hidden, ids, False)
        _, gate = self.run(module, hidden, ids, True)
        return {"gate": hexes(gate[0, 0, :, 0]), "value": hexes(value[0, 0])}

    def short_conv(self, group, test):
        """ShortConvTest: the port's ShortConv (its norms' epsilon is normalization_layer_epsilon) on the test's
        value [B = 1, S, G, D]."""
        w = Weights(group)
        conv = self.ns["ShortConv"](config=config(w.hidden), hidden_size=w.hidden, kernel_size=w.kernel,
                                    dilation=w.dilation, mhc_expansion_rate=w.hc, rngs=self.ns["nnx"].Rngs(0))
        w.load_conv(conv)
        x = floats(test["value"])
        shape = (1, test["steps"], w.hc, w.hidden)
        if x.size != int(np.prod(shape)):  # no [B, S, G, D] array holds it: the port never sees it
            raise Unsupported(f"value has {x.size} values: the port takes it as an array of shape "
                              f"{' x '.join(map(str, shape))} ({line_of(self.checkout, PATH, 'B, S, G, D = x.shape')})")
        return {"output": hexes(conv(jnp.asarray(x.reshape(shape))))}

    def forward(self, group, test):
        """EngramForwardTest (demo-v1): NgramHashMapping.__call__ on the ids (the first layer, §FUS.10), then
        Engram.__call__ on the test's hidden state with the synthetic table in MultiHeadEmbedding's Embed;
        hiddenAfter = hidden + output, as DeepSeek's decoder layer adds it (deepseek.py's x = x + engram_output)."""
        w = Weights(group)
        cfg = config_of(group)
        if w.dilation != cfg["max_ngram_size"]:
            raise Unsupported(f"ShortConv dilation {w.dilation} with max_ngram_size {cfg['max_ngram_size']}: "
                              f"Engram takes the dilation from engram_max_ngram_size (engram.py:616)")
        ids = [int(i) for i in test["ids"]]
        mp = self.of_config(cfg, group["compressedVocabSize"], group["compressedPad"])
        layer = mp.layer_ids[0]
        hash_ids = mp(np.array([ids], dtype=np.int64))[layer]  # [1, T, H_total], before the offsets
        module = self.engram(w, mp.get_vocab_sizes(layer), cfg["n_head_per_ngram"], cfg["max_ngram_size"])
        table = module.multi_head_embedding.embedding.embedding
        rows, width = table[...].shape
        put(table, SYNTHETIC.float_table_rows(group["tableSeed"], rows, width, np.arange(rows)))
        hidden = self.hidden_of(test["hidden"], w, len(ids))
        out, _ = self.run(module, hidden, hash_ids, False)
        _, gate = self.run(module, hidden, hash_ids, True)
        return {"output": hexes(out), "hiddenAfter": hexes(np.asarray(hidden) + out), "gate": hexes(gate[0, :, :, 0])}

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
        if type_ == "DemoGateTest":
            return self.gate(group, test)
        if type_ == "ShortConvTest":
            return self.short_conv(group, test)
        if type_ == "EngramForwardTest":
            if group["profile"] != "demo-v1":
                raise Unsupported("v4.1: the port implements demo-v1 only")
            return self.forward(group, test)
        if type_ == "GateFunctionTest":
            raise Unsupported("the gate function alone has no entry: Engram.__call__ computes it inline "
                              "(engram.py:672-677)")
        if type_ == "ShortConvStateTest":
            raise Unsupported("ShortConv keeps no state across calls: it convolves the whole sequence "
                              "(engram.py:459-493)")
        raise Unsupported(f"{type_}: the port hashes whole sequences (no per-sequence state)")


if __name__ == "__main__":
    sys.exit(main(MaxText, __doc__))
