#!/usr/bin/env python3
"""ctest `ports.portlib.answers`: whose exception a third-party port's adapter reports as the port's refusal
(engram_adapter.portlib.Adapter.handle), checked on a synthetic port written into a temporary checkout:
- an exception raised in the port's code is `refused`, with the port's file:line;
- `PortRefusal` (the adapter saying a refusal for the port) is `refused`, with the line it names;
- any other exception, raised in the adapter, is an adapter error: none of the three answers, so the runner
  fails the test; through `engram conform`, an adapter that raises on every test passes no invalid test;
- a rollback the adapter replays past the start, and a rollback of a sequence no append started, are
  `unsupported` (the engine's to refuse), while the numpy port's own sessions still refuse the latter.

usage: adapter_answers_test.py ENGRAM_BINARY VECTORS_DIR
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

from engram_adapter import portlib, protocol

PORT = '''def checked(x):
    if x < 0:
        raise ValueError("negative")
    return x


def lookup(reader, table, i):
    return reader(i) + table[i]
'''


class Data:
    """A stand-in for the port's data, as IdentityTable is one: what it raises is the port's."""

    @portlib.port_data
    def __getitem__(self, i):
        raise IndexError(f"index {i} is out of bounds")


class Synthetic(portlib.Adapter):
    name = "synthetic"

    def __init__(self, checkout):
        super().__init__(checkout)
        self.ns = portlib.load_defs(os.path.join(checkout, "port.py"), ["checked", "lookup"], {})

    def answer(self, suite, type_, group, test):
        how = test["how"]
        if how == "port":
            return {"x": self.ns["checked"](-1)}
        if how == "adapter":
            return {"x": [1][5]}
        if how == "callback":  # the adapter's reader, called by the port, fails in the adapter's own code
            return {"x": self.ns["lookup"](lambda i: [0][i], [0, 1], 1)}
        if how == "table":  # the port indexes the adapter's stand-in for its data beyond the end (numpy's IndexError)
            return {"x": self.ns["lookup"](lambda i: 0, portlib.IdentityTable(2), 5)}
        if how == "data":  # the same through a stand-in of the adapter's own, marked as the port's data
            return {"x": self.ns["lookup"](lambda i: 0, Data(), 5)}
        if how == "said":
            raise portlib.PortRefusal("no layout", portlib.defined_at(self.ns["checked"], self.checkout))
        if how == "rollback":
            portlib.replayed_rollback(4, 3)
        if how == "unknown":
            return portlib.hash_state_test({}, {"steps": [{"op": "rollback", "seq": "b", "k": 0}]}, None)
        raise portlib.Unsupported("not this")


def ask(adapter, how):
    return adapter.handle({"op": "test", "suite": "s", "type": "T", "group": {}, "test": {"how": how}})


def in_process(checkout):
    a = Synthetic(checkout)
    port, own, said = ask(a, "port"), ask(a, "adapter"), ask(a, "said")
    yield port == {"refused": "ValueError: negative (at port.py:3)"}, f"the port's exception: refused at port.py:3 ({port})"
    yield set(own) == {"adapterError"} and "adapter_answers_test.py" in own["adapterError"], \
        f"the adapter's exception: an adapter error naming the adapter's line, none of the three answers ({own})"
    yield said == {"refused": "PortRefusal: no layout (at port.py:1)"}, f"PortRefusal: refused at its line ({said})"
    callback, data = ask(a, "callback"), ask(a, "data")
    yield set(callback) == {"adapterError"}, \
        f"an exception in a callback of the adapter's that the port called: an adapter error, not refused ({callback})"
    yield data.get("refused", "").startswith("IndexError") and "port.py:8" in data["refused"], \
        f"a @port_data stand-in indexed beyond its end by the port: refused at the port's line ({data})"
    if importlib.util.find_spec("numpy") is not None:  # IdentityTable indexes with numpy
        table = ask(a, "table")
        yield table.get("refused", "").startswith("IndexError") and "port.py:8" in table["refused"], \
            f"IdentityTable (the port's data) indexed beyond its end: refused at the port's line ({table})"
    else:
        print("note: no numpy here: the IdentityTable check is not run")
    yield "unsupported" in ask(a, "rollback"), "a replayed rollback past the start: unsupported"
    yield "unsupported" in ask(a, "unknown"), "a rollback of a sequence no append started: unsupported"
    try:
        protocol.hash_state_test({}, {"steps": [{"op": "rollback", "seq": "b", "k": 0}]}, None)
        yield False, "protocol.hash_state_test (the numpy port's own sessions): an unknown sequence raises KeyError"
    except KeyError:
        yield True, "protocol.hash_state_test (the numpy port's own sessions): an unknown sequence raises KeyError"


ALWAYS_RAISES = '''import sys
from engram_adapter import portlib
class A(portlib.Adapter):
    name, version, suites, profiles = "raises", "1", ["multipliers"], ["v4.1", "demo-v1"]
    def answer(self, suite, type_, group, test):
        return {"multipliers": [][0]}
sys.exit(portlib.main(A, "an adapter whose every answer raises in its own code"))
'''


def through_runner(engram, vectors, checkout, elsewhere):
    script = os.path.join(elsewhere, "raises.py")  # the adapter's file: outside the port's checkout
    with open(script, "w", encoding="utf-8") as f:
        f.write(ALWAYS_RAISES)
    report = os.path.join(elsewhere, "report.json")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    run = subprocess.run([engram, "conform", "--vectors", vectors, "--suite", "multipliers", "--report-json", report,
                          "--exec", f"{sys.executable} {script} --checkout {checkout}"],
                         capture_output=True, text=True, env=env, timeout=120)
    with open(report, encoding="utf-8") as f:
        results = json.load(f)
    tests = results["results"]
    passed = [t for t in tests if t["status"] == "pass"]
    yield run.returncode != 0 and tests and not passed, \
        f"through engram conform: no test passes when the adapter raises in its own code ({len(passed)} passed of " \
        f"{len(tests)}, exit {run.returncode})"


def main():
    engram, vectors = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as checkout, tempfile.TemporaryDirectory() as elsewhere:
        with open(os.path.join(checkout, "port.py"), "w", encoding="utf-8") as f:
            f.write(PORT)
        results = list(in_process(checkout)) + list(through_runner(engram, vectors, checkout, elsewhere))
    failed = [what for ok, what in results if not ok]
    for what in failed:
        print("FAIL:", what)
    print(f"adapter answers: {len(results) - len(failed)} of {len(results)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
