#!/usr/bin/env python3
"""JSON-lines adapter for JustVugg/colibri's torch reference of DeepSeek-V4.1, c/tools/dsv41_ref.py
(class NgramHash: the hash the C engine is held to). See README.md beside this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/colibri/adapter.py --checkout DIR"
"""
import os
import sys

import torch

from engram_adapter.portlib import Adapter, Unsupported, as_int_rows, hash_state_test, load_defs, main

PATH = "c/tools/dsv41_ref.py"


class Session:
    def __init__(self, ns, group):
        layers = group["layers"]
        m = len(layers[0]["multipliers"])
        heads = len(layers[0]["primes"][0]) if layers[0]["primes"] else 0
        # the tables the port reads from its container (prepare_dsv41.py computes them): here the
        # group's layout, the very arrays the vectors were hashed with
        self.h = ns["NgramHash"](
            # push() takes compressed ids and never reads token_map (the C engine maps raw ids): left empty
            token_map=torch.empty(0, dtype=torch.int64),
            primes=torch.tensor([l["primes"] for l in layers], dtype=torch.int64),
            offsets=torch.tensor([l["offsets"] for l in layers], dtype=torch.int64),
            multipliers=torch.tensor([l["multipliers"] for l in layers], dtype=torch.int64),
            pad_id=group["compressedPad"], max_ngram_size=m, n_heads=heads)
        self.max_ngram = m

    @property
    def position(self):
        return len(self.h.history)

    def append(self, ids):
        return as_int_rows(self.h.push(list(ids)))

    def rollback(self, k):
        raise Unsupported("NgramHash has no rollback (only reset)")

    def history(self):
        h = min(self.position, self.max_ngram - 1)
        return [int(x) for x in self.h.history[len(self.h.history) - h:]] if h else []


class Colibri(Adapter):
    name = "colibri c/tools/dsv41_ref.py NgramHash"
    version = "checkout"
    suites = ["hash_v41"]
    profiles = ["v4.1"]

    def __init__(self, checkout):
        super().__init__(checkout)
        self.ns = load_defs(os.path.join(checkout, PATH), ["NgramHash"], {"torch": torch}, future_annotations=True)

    def answer(self, suite, type_, group, test):
        if type_ == "HashTest":
            return {"rows": Session(self.ns, group).append(test["ids"])}
        if type_ == "HashStateTest":
            return hash_state_test(group, test, lambda capacity: Session(self.ns, group))
        raise Unsupported(f"{type_}: the port's reference hashes with tables it is given")


if __name__ == "__main__":
    sys.exit(main(Colibri, __doc__))
