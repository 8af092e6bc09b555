"""The JSON-lines protocol of spec/conformance.md (§CONF.2 the requests and answers, §CONF.6 the adapter's
side) as every in-tree adapter speaks it: the numpy port (engram_numpy_port) and the third-party ports'
adapters (conformance/ports/<port>/adapter.py, through engram_adapter.portlib).

An adapter reads one JSON request per line on stdin and writes one JSON answer per line on stdout: `hello`
first (what it claims), then `test` requests answered with `outputs`, `refused` (the implementation refused
the input) or `unsupported` (not implemented: reported skipped, never failed), until `bye`. `serve` owns that
loop; the functions below build each kind of answer, so that every adapter words them the same way.
Pure Python, the standard library only: an adapter runs in whatever interpreter the port needs.
"""
import copy
import json
import sys

PROTOCOL = 1


class Unsupported(Exception):
    """The implementation has no way to express this input (answered `unsupported`, reported skipped)."""


def hello(name, version, suites, profiles, features=()):
    """The answer to `hello`: the protocol version, the implementation's name and version, the suites and
    profiles it claims, the policy features it declares (e.g. segment-reset, §HASH.12)."""
    return {"protocol": PROTOCOL, "name": name, "version": version, "suites": list(suites),
            "profiles": list(profiles), "features": list(features)}


def start_error(message):
    """The answer in hello's place when the adapter cannot start (no checkout, a port that does not load)."""
    return {"protocol": PROTOCOL, "error": message}


def outputs(out):
    """A test answered: its outputs (§CONF.1)."""
    return {"outputs": out}


def unsupported(why):
    """A request this adapter does not answer: skipped, with the reason."""
    return {"unsupported": str(why)}


def adapter_error(exc, at=None):
    """An adapter that failed on a request, not the implementation it drives: deliberately none of the three
    answers, so that the runner fails the test (§CONF.4 "garbage") and shows this text, never counting the
    adapter's exception as the implementation's refusal (a pass on an invalid test)."""
    return {"adapterError": f"{type(exc).__name__}: {exc}" + (f" (at {at})" if at else "") +
            ": no frame of the traceback lies in the port's code"}


def refused(exc, at=None):
    """The implementation refused the input with `exc` (raised at `at`, a 'file:line', where known)."""
    return {"refused": f"{type(exc).__name__}: {exc}" + (f" (at {at})" if at else "")}


def bye():
    """The answer to `bye`, the last one."""
    return {"bye": True}


def serve(handle, stdin=None, stdout=None):
    """Answer each request line of `stdin` with handle(request), one JSON line on `stdout`, until `bye` or the
    end of the input; returns the exit status (0). The protocol owns stdout: while a request is handled,
    whatever the implementation prints goes to stderr."""
    stdin = sys.stdin if stdin is None else stdin
    out = sys.stdout if stdout is None else stdout
    saved, sys.stdout = sys.stdout, sys.stderr
    try:
        for line in stdin:
            req = json.loads(line)
            print(json.dumps(handle(req)), file=out, flush=True)
            if req.get("op") == "bye":
                break
    finally:
        sys.stdout = saved
    return 0


def hash_state_test(group, test, new_session, fork=None, unknown_sequence=None):
    """The outputs of a HashStateTest script (spec/vectors.md §VEC.7) driven through sessions: new_session
    (capacity) makes one, an object with append(ids) -> rows, rollback(k), .position and history() (the last
    min(position, max_ngram - 1) ids). A fork is fork(sequences, source, target) -> the target's new session
    (source and target are names), by default a deep copy of the source (what a server does to branch a
    request); a fork onto a name that exists replaces that sequence. A rollback or fork of a sequence no append
    has started raises unknown_sequence(name) (default: KeyError, the implementation's refusal)."""
    seqs, steps = {}, []

    def known(name):
        if name not in seqs:
            raise (unknown_sequence or KeyError)(name)
        return seqs[name]

    capacity = group.get("rollbackCapacity", 0)
    for step in test["steps"]:
        step = dict(step)
        if step["op"] == "append":
            s = seqs.get(step["seq"])
            if s is None:
                s = seqs[step["seq"]] = new_session(capacity)
            step["rows"] = s.append(step["ids"])
            step["positionAfter"], step["historyAfter"] = s.position, s.history()
        elif step["op"] == "rollback":
            s = known(step["seq"])
            s.rollback(step["k"])
            step["positionAfter"], step["historyAfter"] = s.position, s.history()
        elif step["op"] == "fork":
            src, to = step["from"], step["to"]
            known(src)
            seqs[to] = copy.deepcopy(seqs[src]) if fork is None else fork(seqs, src, to)
        else:
            raise ValueError(f"unknown step op {step['op']!r}")
        steps.append(step)
    return {"steps": steps}
