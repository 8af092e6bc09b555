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
"""
import json
from types import SimpleNamespace

import numpy as np
import torch

from .portlib import (DEAD, Adapter, Unsupported, as_int_rows, config_of, hash_state_test, identity_map,
                      load_defs, PortRefusal, defined_at, replayed_rollback, rows_of_layer, test_ids)

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

    def answer(self, suite, type_, group, test):
        if type_ == "MultipliersTest":
            if test["seed"] != 0:
                raise Unsupported("the port draws multipliers with seed 10007 * layer_id: no seed parameter")
            m = self.ns["compute_hash_multipliers"]((test["layerId"],), test["maxNgram"], test["compressedVocabSize"])
            return {"multipliers": as_int_rows(m[0])}
        if type_ == "LayoutTest":
            if test["profile"] != "v4.1":
                raise Unsupported("demo-v1 layouts: the port implements v4.1 only")
            cfg = config_of(test)
            if "engram_num_embeddings" not in cfg:
                raise Unsupported("a config without engram_num_embeddings: the port's args always carry it "
                                  "(config.json), so what it does without is not measurable")
            state, layout = self.state(cfg, test["compressedVocabSize"], test["compressedPad"])
            if layout is None:
                raise PortRefusal("EngramLayout.from_args returned None (no engram layers)",
                                  defined_at(self.ns["EngramLayout"].from_args, self.checkout))
            layers = []
            for i, layer in enumerate(layout.layer_ids):
                layers.append({"layerId": layer, "multipliers": as_int_rows(state.multipliers[i]),
                               "primes": as_int_rows(layout.primes[i]), "offsets": as_int_rows(state.offsets[i]),
                               **rows_of_layer(layout.num_embeddings, i)})
            return {"layers": layers}
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
