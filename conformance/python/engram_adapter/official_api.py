"""The adapter for ports that keep the official V4.1 `inference/engram.py` API: `compute_hash_multipliers
(layer_ids, max_ngram_size, vocab_size)`, `EngramLayout.from_args(args)` and `NgramHashState(args, layout,
tokenizer)` whose `forward(input_ids, start_pos, token_mask)` hashes a chunk and keeps the compressed ids
in its `cache`. tt-metal vendors that file unchanged (conformance/ports/ttmetal), sglang's manual test
model keeps its API (conformance/ports/sglang).

How a test becomes calls of the port:
- the token map: `NgramHashState` builds it from a tokenizer (`build_compressed_token_map`); the hash
  suites give compressed ids, so the adapter replaces that one function by the identity map of the
  group's V (raw id c is compressed id c) and passes the compressed pad as the raw pad. The port's
  `assert vocab_size == args.engram_compressed_vocab_size` still runs.
- DEAD (-1): `token_mask` False at that position (the id stays -1: the port indexes its map with it and
  the mask overrides, as the official model does for image spans).
- a chunk: `forward(ids, start_pos=position)`; a rollback by k: the next chunk's start_pos is k lower
  (the port has no rollback call: its caller rewinds start_pos, and the cache keeps the ids before it);
  a fork: a copy of the module (cache included).
- layout: `EngramLayout.from_args` for primes and table rows, the `NgramHashState` buffers for
  multipliers and offsets.
- multipliers: `compute_hash_multipliers((layer,), n, V)`; the port has no seed (it draws with
  10007 * layer_id), so a test with another seed is unsupported.

The rest of the official module (OfficialModuleAdapter: the fp8 table, the wkv projection, the gate, one layer's
forward) lives in other files, whose classes keep the official API too: `Engram(args, layer_id, layout)` with
`embed` (the table: `weight` fp8 rows and `scale` E8M0 per 32 elements, forward(hash ids) -> bf16 rows), `wkv`
(`Linear(in, out, dtype=...)`: `weight` and, for fp8, a `scale` per 32x32 block) and `q_weight`, `k_weight`; its
forward(x, hash_ids, token_mask) returns x + gate * value. The adapter builds the modules with the port's own
constructors and loads the test's weights into their parameters, as a checkpoint would be loaded (a weight of
another size than the parameter is unsupported: the API cannot hold it):
- table_lookup / fp8_decode: the embedding holding the test's rows (portlib.lookup_table: a row id outside the
  table stays outside the port's); an fp8_decode test is one row of the test's codes (portlib.fp8_decode_by_rows).
- gate_v41: V41GateTest through Engram.forward with the table read and the wkv replaced by the test's kv (the gate
  read off further calls: torch_gate); WkvTest through Linear.forward; GateFunctionTest has no entry (the gate is
  one expression of Engram.forward).
- engram_forward (v4.1): the configuration's first layer, hashed by NgramHashState as above, then Engram.forward
  on the §STO.5 synthetic table of the group's tableSeed, the group's fp8 wkv and q / k weights; DEAD is
  token_mask False, as the official model masks image spans.
"""
import contextlib
import json
from types import SimpleNamespace

import numpy as np
import torch
from torch import nn

from .portlib import (DEAD, Adapter, Unsupported, as_int_rows, config_of, fp8_decode_by_rows, hash_state_test,
                      identity_map, load_defs, lookup_table, PortRefusal, defined_at, replayed_rollback, rows_of_layer,
                      test_ids)
from .torch_gate import Given, bf16_tensor, layer_gate, out_bits, shaped, stream_gates

NAMES = ["find_next_prime", "build_compressed_token_map", "compute_hash_multipliers", "EngramLayout",
         "NgramHashState"]
MAX_SEQ = 1 << 14  # the cache length the adapter allocates (the port's args.max_seq_len)


def official_namespace(path, extra=None):
    from dataclasses import dataclass
    from sympy import isprime
    from torch import nn
    ns = {"np": np, "torch": torch, "nn": nn, "isprime": isprime, "dataclass": dataclass}
    ns.update(extra or {})
    return load_defs(path, NAMES, ns)


def v41_multipliers(ns, test):
    """MultipliersTest through the official compute_hash_multipliers, which every port vendoring the V4.1 API keeps:
    it draws with seed 10007 * layer_id, so a test of another seed has no call."""
    if test["seed"] != 0:
        raise Unsupported("the port draws multipliers with seed 10007 * layer_id: no seed parameter")
    m = ns["compute_hash_multipliers"]((test["layerId"],), test["maxNgram"], test["compressedVocabSize"])
    return {"multipliers": as_int_rows(m[0])}


def v41_layout(test, build):
    """LayoutTest (v4.1) of a port vendoring the V4.1 API: build(cfg, V, pad) -> (multipliers, offsets, layout), the
    per-layer multipliers and offsets the port's hasher holds and its EngramLayout (layer_ids, primes,
    num_embeddings)."""
    if test["profile"] != "v4.1":
        raise Unsupported("demo-v1 layouts: the port implements v4.1 only")
    multipliers, offsets, layout = build(config_of(test), test["compressedVocabSize"], test["compressedPad"])
    return {"layers": [{"layerId": layer, "multipliers": as_int_rows(multipliers[i]),
                        "primes": as_int_rows(layout.primes[i]), "offsets": as_int_rows(offsets[i]),
                        **rows_of_layer(layout.num_embeddings, i)} for i, layer in enumerate(layout.layer_ids)]}


class Session:
    def __init__(self, ns, state, max_ngram):
        self.ns, self.state, self.max_ngram, self.position = ns, state, max_ngram, 0

    def append(self, ids):
        if self.position + len(ids) > MAX_SEQ:
            raise Unsupported(f"more than {MAX_SEQ} positions (the cache the adapter allocates)")
        t = torch.tensor([ids], dtype=torch.int64)
        mask = t != DEAD
        rows = self.state(t, self.position, mask)
        self.position += len(ids)
        return as_int_rows(rows[0])

    def rollback(self, k):
        replayed_rollback(k, self.position)
        self.position -= k

    def history(self):
        h = min(self.position, self.max_ngram - 1)
        return [int(x) for x in self.state.cache[0, self.position - h:self.position].tolist()]

    def __deepcopy__(self, memo):
        other = Session(self.ns, None, self.max_ngram)
        other.position = self.position
        import copy
        other.state = copy.deepcopy(self.state, memo)
        return other


class OfficialApiAdapter(Adapter):
    suites = ["multipliers", "layout", "hash_v41"]
    profiles = ["v4.1"]
    path = None  # the port's file, relative to the checkout
    extra = None

    def __init__(self, checkout):
        super().__init__(checkout)
        self.ns = official_namespace(f"{checkout}/{self.path}", self.extra)
        self.layouts = {}

    def args(self, cfg, v, pad):
        return SimpleNamespace(
            engram_layer_ids=cfg["engram_layer_ids"], engram_max_ngram_size=cfg["engram_max_ngram_size"],
            engram_n_heads=cfg["engram_n_heads"], engram_vocab_size=cfg["engram_vocab_size"],
            engram_num_embeddings=cfg["engram_num_embeddings"], engram_head_dim=cfg.get("engram_head_dim", 0),
            engram_compressed_vocab_size=cfg.get("engram_compressed_vocab_size", v),
            engram_pad_id=pad, max_batch_size=1, max_seq_len=MAX_SEQ)

    def state(self, cfg, v, pad, ids=()):
        key = json.dumps([cfg, v, pad], sort_keys=True)
        prefix, raw_pad = identity_map(v, list(ids), pad)  # portlib.identity_map: the identity of V ids ...
        args = self.args(cfg, v, raw_pad)
        if key not in self.layouts:
            self.layouts[key] = self.ns["EngramLayout"].from_args(args)
        layout = self.layouts[key]
        # ... (or, for a huge V, the ids' prefix and one entry for the pad), as a tensor rather than a list (the
        # port only indexes it and passes it to torch.tensor): the same values without a list of millions of ints
        table = torch.arange(prefix, dtype=torch.int64)
        if raw_pad == prefix:
            table = torch.cat([table, torch.tensor([pad], dtype=torch.int64)])
        self.ns["build_compressed_token_map"] = lambda tokenizer: (table, v)
        return self.ns["NgramHashState"](args, layout, None), layout

    def layout_parts(self, cfg, v, pad):
        if "engram_num_embeddings" not in cfg:
            raise Unsupported("a config without engram_num_embeddings: the port's args always carry it "
                              "(config.json), so what it does without is not measurable")
        state, layout = self.state(cfg, v, pad)
        if layout is None:
            raise PortRefusal("EngramLayout.from_args returned None (no engram layers)",
                              defined_at(self.ns["EngramLayout"].from_args, self.checkout))
        return state.multipliers, state.offsets, layout

    def answer(self, suite, type_, group, test):
        if type_ == "MultipliersTest":
            return v41_multipliers(self.ns, test)
        if type_ == "LayoutTest":
            return v41_layout(test, self.layout_parts)
        if type_ in ("HashTest", "HashStateTest"):
            cfg = config_of(group)
            m = cfg["engram_max_ngram_size"]

            v, pad = group["compressedVocabSize"], group["compressedPad"]
            ids = test_ids(test)

            def new_session(capacity):
                state, _ = self.state(cfg, v, pad, ids)
                return Session(self.ns, state, m)

            if type_ == "HashTest":
                return {"rows": new_session(0).append(test["ids"])}
            return hash_state_test(group, test, new_session)
        raise Unsupported(f"{type_}: not part of the port's Engram hash code")


def byte_tensor(chunks, shape):
    """A uint8 tensor of `shape` from byte strings, concatenated (an FP8 table's codes or scales)."""
    return torch.tensor(np.frombuffer(b"".join(chunks), dtype=np.uint8).reshape(shape).copy())


def fill(param, data, what):
    """A parameter loaded with the test's values (a tensor of the same element size, reinterpreted in its dtype)."""
    if data.numel() != param.numel():
        raise Unsupported(f"{what} of {data.numel()} values: the port's parameter has shape {list(param.shape)}")
    with torch.no_grad():
        param.copy_(data.reshape(param.shape).view(param.dtype))


FP8_TABLE_MAX = 1 << 28  # bytes of the synthetic table a forward test's layer may hold (random ones hold a few kB)


class OfficialModuleAdapter(OfficialApiAdapter):
    """The official API's hash (OfficialApiAdapter) and its module: a port's adapter says in load_module() how its
    files give the classes "Engram", "Embedding" (the fp8 table) and "Linear" (see the module docstring)."""
    suites = ["multipliers", "layout", "hash_v41", "gate_v41", "table_lookup", "fp8_decode", "engram_forward"]
    _mod = None

    def load_module(self):  # pragma: no cover - per port
        raise NotImplementedError

    @property
    def mod(self):
        """The module's classes, loaded at their first use: the hash suites run without them, on a torch without
        the float8 dtypes every module class builds its table or its wkv with (torch < 2.1: unsupported)."""
        if not hasattr(torch, "float8_e8m0fnu"):
            raise Unsupported(f"torch {torch.__version__} has no float8_e8m0fnu (the module's fp8 table and wkv)")
        if self._mod is None:
            self._mod = self.load_module()
        return self._mod

    def context(self):
        """What the port's entry point sets around a forward (e.g. torch's default dtype); none by default."""
        return contextlib.nullcontext()

    # ------------------------------------------------------------------ the fp8 table

    def decode(self, raw, d, local):
        """The port's embedding holding the given rows (codes, scales), in order, read at the row ids `local`: each
        row's bf16 bit patterns."""
        emb = self.mod["Embedding"](len(raw), d)
        fill(emb.weight, byte_tensor([c for c, _ in raw], (len(raw), d)), "codes")
        fill(emb.scale, byte_tensor([s for _, s in raw], (len(raw), d // 32)), "scales")
        out = emb(torch.tensor(local, dtype=torch.int64))
        return out.contiguous().view(torch.int16).reshape(len(local), d).tolist()

    def lookup(self, type_, group, test):
        import engram_numpy_port as synthetic  # (only its synthetic-table generator: a test's input bytes)
        d, raw, local = lookup_table(type_, group, test, synthetic.table_of)
        return {"rows": ["".join(f"{int(b) & 0xFFFF:04x}" for b in row) for row in self.decode(raw, d, local)]}

    # ------------------------------------------------------------------ the wkv and the gate

    def engram(self, dim, hc, eps, layout):
        """The port's Engram of one layer, built by its own constructor."""
        return self.mod["Engram"](SimpleNamespace(dim=dim, hc_mult=hc, norm_eps=eps), layout.layer_ids[0], layout)

    def gate(self, group, test):
        # a layout of one row and one column of 32: the module's table and wkv give way to the test's kv
        layout = SimpleNamespace(layer_ids=(0,), num_embeddings=(1,), max_ngram_size=2, n_heads=1, head_dim=32)

        def make(dim, hc, eps):
            e = self.engram(dim, hc, eps, layout)
            e.embed = nn.Identity()
            return e
        return layer_gate(make, group, test, self.context)

    def wkv(self, test):
        e = test["e"]
        k, n = len(e), test["outFeatures"]
        if "weight" in test:
            lin = self.mod["Linear"](k, n, dtype=torch.bfloat16)
            fill(lin.weight, bf16_tensor(test["weight"], (len(test["weight"]),)), "weight")
        else:
            lin = self.mod["Linear"](k, n, dtype=torch.float8_e4m3fn)
            fill(lin.weight, byte_tensor([bytes(test["weightCodes"])], (len(test["weightCodes"]),)), "weightCodes")
            fill(lin.scale, byte_tensor([bytes(test["weightScales"])], (len(test["weightScales"]),)), "weightScales")
        with self.context():
            return {"kv": out_bits(lin(bf16_tensor(e, (1, k))))}

    # ------------------------------------------------------------------ one layer's forward

    def forward(self, group, test):
        if group["profile"] != "v4.1":
            raise Unsupported("demo-v1: the port implements v4.1 only")
        import engram_numpy_port as synthetic  # (only its synthetic-table generator: the table's bytes)
        cfg = config_of(group)
        dim, hc, hd, eps = cfg["dim"], cfg["hc_mult"], cfg["engram_head_dim"], float(cfg["norm_eps"])
        ids = [int(i) for i in test["ids"]]
        x = shaped(test, "x", (1, len(ids), hc, dim))
        state, layout = self.state(cfg, group["compressedVocabSize"], group["compressedPad"], ids)
        t = torch.tensor([ids], dtype=torch.int64)
        mask = t != DEAD
        hashes = state(t, 0, mask)[:, :, 0, :]  # the first layer's (§FUS.10)
        rows = int(layout.num_embeddings[0])
        if rows * hd > FP8_TABLE_MAX:
            raise Unsupported(f"a table of {rows} rows: the adapter builds the port's table whole")
        e = self.engram(dim, hc, eps, layout)
        used = sorted(set(hashes.reshape(-1).tolist()))
        codes, scales = synthetic.SyntheticTable(group["tableSeed"], rows, hd).raw(used)
        table = torch.zeros((rows, hd), dtype=torch.uint8), torch.zeros((rows, hd // 32), dtype=torch.uint8)
        table[0][used], table[1][used] = torch.tensor(codes), torch.tensor(scales)
        fill(e.embed.weight, table[0], "the table's codes")
        fill(e.embed.scale, table[1], "the table's scales")
        fill(e.wkv.weight, byte_tensor([bytes(group["wkvWeightCodes"])], (len(group["wkvWeightCodes"]),)),
             "wkvWeightCodes")
        fill(e.wkv.scale, byte_tensor([bytes(group["wkvWeightScales"])], (len(group["wkvWeightScales"]),)),
             "wkvWeightScales")
        e.q_weight = nn.Parameter(shaped(group, "qWeight", (hc, dim)), requires_grad=False)
        e.k_weight = nn.Parameter(shaped(group, "kWeight", (hc, dim)), requires_grad=False)
        kv = []
        e.wkv.register_forward_hook(lambda module, inputs, output: kv.append(output))
        with self.context():
            out = e(x, hashes, mask)

        def run(xf, probe):  # the same forward with the table read and the wkv giving way to the probe's kv
            e.embed, e.wkv = nn.Identity(), Given(probe)
            with self.context():
                return e(xf, hashes, mask)
        gates = stream_gates(run, x.to(torch.float32), kv[0][..., :hc * dim].to(torch.float32), dim, hc, dim)
        return {"out": out_bits(out), "gate": gates}

    def answer(self, suite, type_, group, test):
        if type_ == "V41GateTest":
            return self.gate(group, test)
        if type_ == "WkvTest":
            return self.wkv(test)
        if type_ == "EngramForwardTest":
            return self.forward(group, test)
        if type_ in ("SafetensorsLookupTest", "PackedLookupTest", "SyntheticLookupTest"):
            return self.lookup(type_, group, test)
        if type_ in ("E4M3DecodeTest", "E8M0DecodeTest", "ElementDecodeTest"):
            # the module decodes FP8 only in the embedding's forward: the test's codes go through a row of the table
            return fp8_decode_by_rows(type_, test, lambda codes, scales: self.decode([(codes, scales)], len(codes),
                                                                                   [0])[0])
        return super().answer(suite, type_, group, test)
