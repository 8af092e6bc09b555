#!/usr/bin/env python3
"""JSON-lines adapter for hashiqiqixian/pypto-serving's host Engram code, pypto_serving/model/deepseek_v41/engram.py
(EngramLayout, EngramHashState with its snapshot/restore, shard_plan, SparseEngramLookup). See README.md beside
this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/pypto/adapter.py --checkout DIR"
"""
import dataclasses
import importlib.util
import os
import sys

import numpy as np

from engram_adapter.portlib import DEAD, IDENTITY_FULL_MAX, Adapter, Unsupported, as_int_rows, config_of, hash_state_test, main

PATH = "pypto_serving/model/deepseek_v41/engram.py"


class Session:
    def __init__(self, mod, layout, v, pad, capacity):
        # the identity token map of V compressed ids: raw id c is compressed id c; the pad is given as
        # its raw id, which under the identity map is the compressed pad
        self.state = mod.EngramHashState(layout, list(range(v)), compressed_vocab_size=v, pad_token_id=pad,
                                         rollback_window=capacity)
        self.max_ngram = layout.max_ngram_size

    @property
    def position(self):
        return self.state.position

    def append(self, ids):
        tokens = [0 if i == DEAD else i for i in ids]  # DEAD goes through token_mask
        mask = [i != DEAD for i in ids]
        return as_int_rows(self.state.advance(tokens, start_pos=self.state.position, token_mask=mask))

    def rollback(self, k):
        self.state.rollback(self.state.position - k)

    def history(self):
        h = min(self.state.position, self.max_ngram - 1)
        kept = self.state.snapshot().history  # the state's own record of the ids it retains
        return [int(x) for x in kept[len(kept) - h:]] if h else []

    def import_(self, history):
        """A §HASH.9 history through restore(): the port's one way to set a state's position and ids. restore takes
        only this state's own snapshots (owner check), so the history goes into a copy of one (its public fields)."""
        ids = tuple(int(x) for x in history["history"])
        p = int(history["position"])
        self.state.restore(dataclasses.replace(self.state.snapshot(), position=p, retained_start=p - len(ids),
                                               history=ids))


def f32_bits_to_bf16_hex(row):
    """A row of floats (the port returns each element as float(value) of a bf16 the reader gave) as bf16 hex."""
    bits = np.asarray(row, dtype=np.float32).view(np.uint32) >> 16
    return np.where(np.isnan(np.asarray(row, dtype=np.float32)), 0x7FC0, bits).astype(">u2").tobytes().hex()


class Pypto(Adapter):
    name = "pypto-serving deepseek_v41/engram.py (host hash, snapshot/restore, sparse lookup)"
    version = "checkout"
    suites = ["multipliers", "hash_v41", "hash_state", "table_lookup", "tp_shard"]
    profiles = ["v4.1"]

    def __init__(self, checkout):
        super().__init__(checkout)
        spec = importlib.util.spec_from_file_location("pypto_engram", os.path.join(checkout, PATH))
        self.mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = self.mod  # dataclasses look their module up there
        spec.loader.exec_module(self.mod)  # stdlib only at import (numpy when drawing multipliers)

    def answer(self, suite, type_, group, test):
        mod = self.mod
        if type_ == "MultipliersTest":
            if test["seed"] != 0:
                raise Unsupported("the port draws multipliers with seed 10007 * layer_id: no seed parameter")
            layout = mod.EngramLayout(test["maxNgram"], (test["layerId"],), (0,), (), 1, 1)
            return {"multipliers": as_int_rows(mod.compute_hash_multipliers(layout, test["compressedVocabSize"])[0])}
        if type_ in ("HashTest", "HashStateTest", "HashHandoffTest"):
            return self.hash(type_, group, test)
        if type_ in ("SyntheticLookupTest", "SafetensorsLookupTest", "PackedLookupTest", "RowShardTest"):
            return self.lookup(type_, group, test)
        if type_ == "HeadShardTest":
            raise Unsupported("the port shards a table by rows only (shard_plan, SparseEngramLookup): no head-sharded "
                              "lookup")
        raise Unsupported(f"{type_}: the port has no entry point for it (LayoutTest: no offsets array, they are "
                          "summed inside advance; fp8_decode: the row reader, not the port, decodes FP8)")

    def hash(self, type_, group, test):
        layout = self.mod.EngramLayout.from_config(config_of(group))
        v, pad = group["compressedVocabSize"], group["compressedPad"]
        if v > IDENTITY_FULL_MAX:
            raise Unsupported(f"V = {v}: the port requires a token map covering all V compressed ids "
                              "(EngramHashState.__init__), too large to build here")

        def new_session(capacity):
            return Session(self.mod, layout, v, pad, capacity)

        if type_ == "HashTest":
            return {"rows": new_session(0).append(test["ids"])}
        if type_ == "HashStateTest":
            return hash_state_test(group, test, new_session)
        return self.handoff(group, test, new_session)

    def handoff(self, group, test, new_session):
        """HashHandoffTest: each segment's historyIn restored into the test's state. restore() replaces the whole of
        what the state holds of a sequence (position, retained_start, history): the state is then as a fresh one
        given that history, without building the token map (V ids, hashed by the constructor) once per segment."""
        state = []

        def imported(history):
            fp = history.get("layoutFingerprint", group["layoutFingerprint"])
            if fp != group["layoutFingerprint"]:
                raise Unsupported("a history of another layout fingerprint: the port's snapshot (EngramSnapshot: "
                                  "owner, position, retained_start, history) carries no layout to compare")
            if not state:
                state.append(new_session(group.get("rollbackCapacity", 0)))
            state[0].import_(history)
            return state[0]

        def segment(seg, ids):
            s = imported(seg["historyIn"])
            out = dict(seg, rows=s.append(ids[seg["from"]:seg["to"]]))
            out["historyOut"] = {"position": s.position, "history": s.history()}
            return out

        if "historyIn" in test:
            imported(test["historyIn"])
            return {"imported": True}
        if "segments" in test:
            return {"segments": [segment(seg, test["ids"]) for seg in test["segments"]]}
        return {"microBatches": [[segment(seg, test["sequences"][seg["sequence"]]) for seg in mb]
                                 for mb in test["microBatches"]]}

    def lookup(self, type_, group, test):
        """SparseEngramLookup (and its shard_plan) on the test's table through a row reader: the port leaves
        storage and the FP8 decode to the reader it is given, so the reader holds the test's row bytes and decodes
        them with the in-tree numpy port (§STO.3); a RowShardTest's reader places rank r's rows at the test's
        shards[r][0] (its local id 0)."""
        import engram_numpy_port as numpy_port  # its synthetic-table bytes and its §STO.3 row decode (the reader's)
        from engram_numpy_port import storage
        table = group.get("table", group)
        rows, d = int(table["rows"]), int(table["headDim"])
        ids = [int(x) for x in test["rowIds"]]
        if type_ in ("SyntheticLookupTest", "RowShardTest"):
            synthetic = numpy_port.table_of(table)

            def raw(global_ids):
                codes, scales = synthetic.raw(list(global_ids))
                return list(zip(codes, scales))
        else:
            given = {}
            for rid, rb in zip(ids, test["rowBytes"]):
                b = bytes.fromhex(rb["packed"]) if "packed" in rb else bytes.fromhex(rb["codes"] + rb["scales"])
                given[rid] = (np.frombuffer(b[:d], np.uint8), np.frombuffer(b[d:d + d // 32], np.uint8))

            def raw(global_ids):
                return [given[g] for g in global_ids]
        world = int(group.get("world", 1))
        begins = [int(s[0]) for s in group["shards"]] if type_ == "RowShardTest" else [0]

        def reader(layer_id, rank, local_ids):
            at = [begins[rank] + local for local in local_ids]
            decoded = [storage.bf16_to_f32(storage.decode_row(c, s)) for c, s in raw(at)]
            return {local: [float(x) for x in row] for local, row in zip(local_ids, decoded)}

        layout = self.mod.EngramLayout(2, (0,), (rows,), (), 1, d)
        out = self.mod.SparseEngramLookup(layout, reader, world_size=world).lookup(0, ids)
        return {"rows": [f32_bits_to_bf16_hex(row) for row in out]}


if __name__ == "__main__":
    sys.exit(main(Pypto, __doc__))
