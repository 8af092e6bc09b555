#!/usr/bin/env python3
"""JSON-lines adapter for hashiqiqixian/pypto-serving's host Engram hash,
pypto_serving/model/deepseek_v41/engram.py (EngramLayout, EngramHashState). See README.md beside this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/pypto/adapter.py --checkout DIR"
"""
import importlib.util
import os
import sys

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
        return [int(x) for x in self.state._history[len(self.state._history) - h:]] if h else []


class Pypto(Adapter):
    name = "pypto-serving deepseek_v41/engram.py (host hash)"
    version = "checkout"
    suites = ["multipliers", "hash_v41"]
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
        if type_ in ("HashTest", "HashStateTest"):
            layout = mod.EngramLayout.from_config(config_of(group))
            v, pad = group["compressedVocabSize"], group["compressedPad"]
            if v > IDENTITY_FULL_MAX:
                raise Unsupported(f"V = {v}: the port requires a token map covering all V compressed ids "
                                  "(EngramHashState.__init__), too large to build here")

            def new_session(capacity):
                return Session(mod, layout, v, pad, capacity)

            if type_ == "HashTest":
                return {"rows": new_session(0).append(test["ids"])}
            return hash_state_test(group, test, new_session)
        raise Unsupported(f"{type_}: the port has no entry point for it (LayoutTest: no offsets array, "
                          "they are summed inside advance)")


if __name__ == "__main__":
    sys.exit(main(Pypto, __doc__))
