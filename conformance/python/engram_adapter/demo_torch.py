"""Shared by the adapters of the torch ports of engram_demo_v1.py's Engram module (deepseek-ai/Engram's demo itself,
conformance/ports/engram-demo; Megatron-LM's EngramModule, conformance/ports/megatron): a demo-v1 group's weights as
the module's tensors, the hooks that read its ShortConv input and output, and the forward test's synthetic table.
Both modules name their parts alike (key_projs, norm1, norm2, value_proj, short_conv.conv / .norms,
multi_head_embedding.embedding), which is all this file touches."""
import math

import numpy as np
import torch

import engram_numpy_port as SYNTHETIC  # (only its synthetic-table generator: a forward test's input table)

from .portlib import Unsupported, as_int_rows, config_of, line_of


def floats(values, shape=None, name="", at=None):
    """A hexfloat list (group or test field) as a float32 tensor: of `shape`, or flat. A list of another length
    is no tensor of that shape, so no call of the port can hold it: unsupported (the port never sees the input, so
    its refusal is not measured; `at` names the port's line that reads the shape)."""
    a = [float.fromhex(x) if isinstance(x, str) and x not in ("inf", "-inf", "nan") else float(x) for x in values]
    t = torch.tensor(a, dtype=torch.float32)
    if shape is None:
        return t
    if len(a) != math.prod(shape):
        if at is None:  # a group's weights: the vectors give every one its shape
            raise ValueError(f"{name} has {len(a)} values, not {' x '.join(map(str, shape))}")
        raise Unsupported(f"{name} has {len(a)} values: the port takes it as a tensor of shape "
                          f"{' x '.join(map(str, shape))} ({at})")
    return t.reshape(shape)


def hexes(t):
    return [float(x).hex() for x in t.reshape(-1).tolist()]


class Weights:
    """A demo-v1 group's parameters (§FUS.10) as tensors."""

    def __init__(self, g):
        hc, H, K, k = g["hc"], g["hidden"], g["in"], g["kernel"]
        self.hc, self.hidden, self.inn, self.kernel, self.dilation = hc, H, K, k, g["dilation"]
        shapes = {"keyWeight": (hc, H, K), "keyBias": (hc, H), "norm1Weight": (hc, H), "norm2Weight": (hc, H),
                  "valueWeight": (H, K), "valueBias": (H,), "convNormWeight": (hc, H), "convWeight": (hc * H, 1, k)}
        t = {key: floats(g[key], shape, key) for key, shape in shapes.items()}
        self.key_w, self.key_b, self.value_w, self.value_b = (t["keyWeight"], t["keyBias"], t["valueWeight"],
                                                              t["valueBias"])
        self.norm1, self.norm2, self.conv_norm, self.conv_w = (t["norm1Weight"], t["norm2Weight"], t["convNormWeight"],
                                                               t["convWeight"])

    def load_conv(self, conv):
        """All slots' ShortConv weights into a ShortConv of hc_mult hc."""
        with torch.no_grad():
            for c in range(self.hc):
                conv.norms[c].weight.copy_(self.conv_norm[c])
            conv.conv.weight.copy_(self.conv_w)

    def load(self, engram):
        """All slots' weights into a module of hc_mult hc (slot c's key_projs[c], norm1[c], norm2[c], ShortConv
        channels and norm; the shared value_proj)."""
        with torch.no_grad():
            for c in range(self.hc):
                engram.key_projs[c].weight.copy_(self.key_w[c])
                engram.key_projs[c].bias.copy_(self.key_b[c])
                engram.norm1[c].weight.copy_(self.norm1[c])
                engram.norm2[c].weight.copy_(self.norm2[c])
            engram.value_proj.weight.copy_(self.value_w)
            engram.value_proj.bias.copy_(self.value_b)
        self.load_conv(engram.short_conv)

    def load_slot(self, engram, c):
        """Slot c's weights into a module of hc_mult 1 (its key_projs[0], norm1[0], norm2[0], the shared
        value_proj, and slot c's ShortConv channels and norm)."""
        H = self.hidden
        with torch.no_grad():
            engram.key_projs[0].weight.copy_(self.key_w[c])
            engram.key_projs[0].bias.copy_(self.key_b[c])
            engram.norm1[0].weight.copy_(self.norm1[c])
            engram.norm2[0].weight.copy_(self.norm2[c])
            engram.value_proj.weight.copy_(self.value_w)
            engram.value_proj.bias.copy_(self.value_b)
            engram.short_conv.norms[0].weight.copy_(self.conv_norm[c])
            engram.short_conv.conv.weight.copy_(self.conv_w[c * H:(c + 1) * H])


def fill_synthetic_table(engram, table_seed):
    """The module's embedding table filled with the synthetic table (§STO.10) of `table_seed`, every row."""
    table = engram.multi_head_embedding.embedding.weight
    rows, width = table.shape
    values = SYNTHETIC.float_table_rows(table_seed, rows, width, np.arange(rows))
    with torch.no_grad():
        table.copy_(torch.from_numpy(values.astype(np.float32)))


class Probe:
    """Hooks on an Engram module for one forward: the ShortConv's input (value = gates * value_proj(e),
    [B, S, hc, H]) and the module's output; with ones=True value_proj's output is replaced by ones, so that the
    ShortConv's input is the gate itself (gates * 1.0, exact). `embeddings`, when given, replaces the output of
    the module's multi_head_embedding (the looked-up rows) by that tensor."""

    def __init__(self, engram, ones=False, embeddings=None):
        self.value = self.output = None
        self.handles = [engram.short_conv.register_forward_pre_hook(self.on_conv),
                        engram.register_forward_hook(self.on_output)]
        if ones:
            self.handles.append(engram.value_proj.register_forward_hook(lambda m, i, out: torch.ones_like(out)))
        if embeddings is not None:
            self.handles.append(engram.multi_head_embedding.register_forward_hook(lambda m, i, out: embeddings))

    def on_conv(self, module, inputs):
        self.value = inputs[0].detach().clone()

    def on_output(self, module, inputs, output):
        self.output = output.detach().clone()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()


class DemoAnswers:
    """The answers the two demo-v1 ports give alike, mixed into their adapters: the hash suites through the port's
    NgramHashMapping and MultiHeadEmbedding offsets, ShortConvTest through its ShortConv, and the test types the
    port has no entry for. An adapter sets `source` (the port's file, relative to the checkout), `who` (how a
    reason names the port), `unsupported` (test type -> the reason, with the port's line), and defines
    `hash_mapping(cfg, v, pad)` (the port's NgramHashMapping, built as the port builds it) and `hash_input(ids)`
    (the ids as the port's caller hands them to hash())."""

    def offsets(self, mapping, layer):
        # the row ids the port looks up are residue + MultiHeadEmbedding.offsets; D = 0 builds the offsets without
        # allocating the table (its width plays no part in the ids)
        list_of_n = [x for y in mapping.vocab_size_across_layers[layer] for x in y]
        emb = self.ns["MultiHeadEmbedding"](list_of_N=list_of_n, D=0)
        return emb.offsets, sum(list_of_n)

    def hash_answer(self, type_, group, test):
        """MultipliersTest, LayoutTest (demo-v1) and HashTest."""
        if type_ == "MultipliersTest":
            m = test["maxNgram"]
            cfg = {"engram_vocab_size": [2] * max(m - 1, 0), "n_embed_per_ngram": 1, "n_head_per_ngram": 1,
                   "layer_ids": [test["layerId"]], "max_ngram_size": m, "seed": test["seed"]}
            mp = self.hash_mapping(cfg, test["compressedVocabSize"], 0)
            return {"multipliers": as_int_rows(mp.layer_multipliers[test["layerId"]])}
        if type_ == "LayoutTest":
            if test["profile"] != "demo-v1":
                raise Unsupported(f"v4.1 layouts: {self.who} implements demo-v1 only")
            mp = self.hash_mapping(config_of(test), test["compressedVocabSize"], test["compressedPad"])
            layers = []
            for layer in mp.layer_ids:
                offsets, rows = self.offsets(mp, layer)
                layers.append({"layerId": layer, "multipliers": as_int_rows(mp.layer_multipliers[layer]),
                               "primes": as_int_rows(mp.vocab_size_across_layers[layer]),
                               "offsets": as_int_rows(offsets), "numEmbeddings": int(rows)})
            return {"layers": layers}
        mp = self.hash_mapping(config_of(group), group["compressedVocabSize"], group["compressedPad"])
        ids = test["ids"]
        if not ids:
            return {"rows": []}
        by_layer = mp.hash(self.hash_input(ids))
        per_layer = []
        for layer in mp.layer_ids:
            offsets, _ = self.offsets(mp, layer)
            per_layer.append(torch.from_numpy(by_layer[layer][0]) + offsets)  # [T, C]
        return {"rows": as_int_rows(torch.stack(per_layer, dim=1))}

    def short_conv(self, group, test):
        """ShortConvTest: the port's ShortConv as its Engram module builds it (norm_eps 1e-5 by default) on the
        test's value [B = 1, T, hc, H]."""
        w = Weights(group)
        conv = self.ns["ShortConv"](hidden_size=w.hidden, kernel_size=w.kernel, dilation=w.dilation, hc_mult=w.hc)
        w.load_conv(conv)
        with torch.no_grad():
            x = floats(test["value"], (1, test["steps"], w.hc, w.hidden), "value",
                       line_of(self.checkout, self.source, "B, T, G, C = x.shape"))
            out = conv(x)
        return {"output": hexes(out)}

    def demo_answer(self, type_, group, test):
        """Every demo-v1 test type: the hash suites, the gate (self.gate), ShortConv, the forward (self.forward)."""
        if type_ in ("MultipliersTest", "LayoutTest", "HashTest"):
            return self.hash_answer(type_, group, test)
        if type_ == "DemoGateTest":
            return self.gate(group, test)
        if type_ == "ShortConvTest":
            return self.short_conv(group, test)
        if type_ == "EngramForwardTest":
            if group["profile"] != "demo-v1":
                raise Unsupported(f"v4.1: {self.who} implements demo-v1 only")
            return self.forward(group, test)
        if type_ in self.unsupported:
            raise Unsupported(self.unsupported[type_])
        raise Unsupported(f"{type_}: {self.who} hashes whole sequences (no per-sequence state)")
