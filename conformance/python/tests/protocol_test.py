#!/usr/bin/env python3
"""ctest `ports.adapter_protocol`: the in-tree adapters' one JSON-lines protocol (engram_adapter.protocol;
conformance/python on PYTHONPATH) on its own, without a port: one answer line per request until `bye`, whatever
the handler prints kept off the protocol's stdout, the answers' words, and the HashStateTest driver (§VEC.7)
with its forks."""
import io
import json
import sys

from engram_adapter import protocol


class Echo:
    """A session whose rows are the ids it is given, numbered by position (enough to see what the driver calls)."""

    def __init__(self, capacity):
        self.capacity, self.ids = capacity, []

    @property
    def position(self):
        return len(self.ids)

    def append(self, ids):
        self.ids += ids
        return [[self.position - len(ids) + i, x] for i, x in enumerate(ids)]

    def rollback(self, k):
        del self.ids[len(self.ids) - k:]

    def history(self):
        return self.ids[-2:]


def served(lines, handle):
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stderr
    sys.stderr = err
    try:
        status = protocol.serve(handle, io.StringIO("".join(json.dumps(x) + "\n" for x in lines)), out)
    finally:
        sys.stderr = saved
    return status, out.getvalue().splitlines(), err.getvalue()


def checks():
    def handle(req):
        print("a port that prints")
        return protocol.bye() if req["op"] == "bye" else protocol.unsupported(req["op"])

    status, out, err = served([{"op": "hello"}, {"op": "bye"}, {"op": "after"}], handle)
    yield status == 0 and out == ['{"unsupported": "hello"}', '{"bye": true}'], "one line per request, none after bye"
    yield err.count("a port that prints") == 2 and sys.stdout is sys.__stdout__, "what the handler prints goes to stderr"
    yield protocol.hello("p", "1", ("hash_v41",), ["v4.1"]) == {
        "protocol": 1, "name": "p", "version": "1", "suites": ["hash_v41"], "profiles": ["v4.1"], "features": []}, "hello"
    yield protocol.refused(ValueError("no"), "x.py:3") == {"refused": "ValueError: no (at x.py:3)"}, "refused, with where"
    yield protocol.refused(KeyError("k")) == {"refused": "KeyError: 'k'"}, "refused, without where"
    yield protocol.unsupported(protocol.Unsupported("why")) == {"unsupported": "why"}, "unsupported, with the reason"
    test = {"steps": [{"op": "append", "seq": "a", "ids": [5, 6, 7]}, {"op": "fork", "from": "a", "to": "b"},
                      {"op": "rollback", "seq": "b", "k": 1}, {"op": "append", "seq": "a", "ids": [8]}]}
    steps = protocol.hash_state_test({"rollbackCapacity": 4}, test, Echo)["steps"]
    yield steps[2]["positionAfter"] == 2 and steps[3]["positionAfter"] == 4, "a fork is a copy: the branches move apart"
    yield steps[0]["rows"] == [[0, 5], [1, 6], [2, 7]] and steps[0]["historyAfter"] == [6, 7], "append: rows, history"
    seen = []
    protocol.hash_state_test({}, test, Echo, lambda seqs, src, to: seen.append((src, to)) or Echo(0))
    yield seen == [("a", "b")], "a fork through the adapter's own fork(sequences, source, target)"
    try:
        protocol.hash_state_test({}, {"steps": [{"op": "merge"}]}, Echo)
        yield False, "an unknown step op is refused"
    except ValueError:
        yield True, "an unknown step op is refused"


def main():
    results = list(checks())
    failed = [what for ok, what in results if not ok]
    for what in failed:
        print("FAIL:", what)
    print(f"engram_adapter.protocol: {len(results) - len(failed)} of {len(results)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
