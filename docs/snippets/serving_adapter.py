#!/usr/bin/env python3
"""The worked example of docs/porting.md section 11: a serving engine's packed hash call behind the suite
serving_v41, whatever encoding each test is written in (spec/contract.md §CON.7).

The "engine" here keeps its state as vLLM does: per request a look-back window of the last max_ngram - 1 ids,
newest first, with a DEAD mask beside it, and one call hashes a flat buffer cut by boundaries. Its n-gram
hash is the numpy port's (conformance/python/engram_numpy_port), standing in for the engine's own kernel, and
the JSON-lines loop is the in-tree adapters' (engram_adapter.protocol). Everything else is what an engine author
writes: read each test's state into the engine's buffers, make one call, write the state back in the test's
encoding.

  engram conform --vectors vectors --suite serving_v41 \\
      --exec "env PYTHONPATH=conformance/python python3 docs/snippets/serving_adapter.py"

ctest docs.serving_adapter runs exactly that; every test passes.
"""
import sys

from engram_adapter import protocol  # conformance/python on PYTHONPATH
from engram_numpy_port import hash_rows  # the engine's n-gram hash, for this example

DEAD = -1


class Refusal(Exception):
    pass


# [kernel]
def engine_hash(layout, ids, dead, cu, positions, lookback, lookback_dead, parents=None, accepted=None):
    """The engine's call, in its own buffers: flat ids with a DEAD mask, boundaries, positions, and per request
    a look-back window (newest first, -1 before the sequence's start) with its mask. Returns the rows of every
    request slot and each request's window after the call (or after its accepted drafts)."""
    w = layout["max_ngram"] - 1
    rows, after = [], []
    for r in range(len(cu) - 1):
        slots = range(cu[r], cu[r + 1])
        if not slots:  # an empty request: nothing to hash, its state unchanged
            after.append((lookback[r], lookback_dead[r]))
            continue
        p = positions[cu[r]]
        known = min(p, w)
        window = [(lookback[r][c], lookback_dead[r][c]) for c in reversed(range(known))]  # oldest first
        seen = lambda t: (ids[t], dead[t])  # noqa: E731
        if parents is None:
            consumed = [seen(t) for t in slots]
            got, _ = hash_rows(layout, [DEAD if m else x for x, m in window], p,
                               [DEAD if m else x for x, m in consumed])
            rows += got.tolist()
        else:  # drafts (§HASH.11): each draft's window follows its path back to the committed state
            for t in slots:
                path, at = [], t - cu[r]
                while at >= 0:
                    path.insert(0, seen(cu[r] + at))
                    at = parents[cu[r] + at]
                got, _ = hash_rows(layout, [DEAD if m else x for x, m in window], p,
                                   [DEAD if m else x for x, m in path])
                rows.append(got.tolist()[-1])
            consumed = [seen(cu[r] + a) for a in accepted[r]]
        newest = (window + consumed)[::-1][:w]
        after.append(([x for x, _ in newest] + [-1] * (w - len(newest)),
                      [m for _, m in newest] + [False] * (w - len(newest))))
    return rows, after
# [kernel]


# [read]
def read_state(layout, test):
    """The test's state in, in the engine's form: flat ids and mask, and per request its look-back window."""
    enc, w, cu, pos = test["encoding"], layout["max_ngram"] - 1, test["cuSeqlens"], test["positions"]
    if enc in ("vllm", "slotCache"):  # the id beneath a DEAD slot is there, the mask beside it
        ids, dead = list(test["ids"]), list(test["deadMask"])
    else:  # DEAD written as -1: the id beneath is gone, and a masked slot's id is never read
        ids, dead = [0 if x == DEAD else x for x in test["ids"]], [x == DEAD for x in test["ids"]]
    lookback, lookback_dead = [], []
    for r in range(len(cu) - 1):
        if enc == "vllm":
            lookback.append(test["lookbackTokenIds"][r])
            lookback_dead.append(test["lookbackDeadMask"][r])
            continue
        if enc == "engram":
            history = test["historyIn"][r]["history"]  # oldest first, DEAD = -1
        elif cu[r] == cu[r + 1]:
            history = []  # an empty request has no position here; its state goes back unchanged (write_state)
        else:
            p = pos[cu[r]]
            k = min(p, w)
            if enc == "onnxruntime":
                history = test["pastIds"][r][w - k:]  # right-aligned, the pad before the start
            elif enc == "sglang":
                history = test["tokenTable"][r][p - k:p]  # the id at every position
            else:  # slotCache: position q of request r at blockTable[r][q // blockSize] * blockSize + q % blockSize
                bs = test["blockSize"]
                history = [test["slotCache"][test["blockTable"][r][q // bs] * bs + q % bs] for q in range(p - k, p)]
        newest = history[::-1]
        lookback.append([0 if x == DEAD else x for x in newest] + [-1] * (w - len(newest)))
        lookback_dead.append([x == DEAD for x in newest] + [False] * (w - len(newest)))
    return ids, dead, lookback, lookback_dead
# [read]


# [write]
def write_state(layout, test, after, ids, dead):
    """Each request's window after the call, in the test's encoding."""
    enc, w, cu = test["encoding"], layout["max_ngram"] - 1, test["cuSeqlens"]
    if enc == "vllm":
        return {"lookbackTokenIdsOut": [a for a, _ in after], "lookbackDeadMaskOut": [m for _, m in after]}
    if enc == "sglang":
        return {}  # the scheduler writes the token table, not the hasher
    if enc == "slotCache":  # each request slot's id (DEAD as -1) where slotMapping says; padding writes nothing
        cache = list(test["slotCache"])
        for t in range(cu[-1]):
            if test["slotMapping"][t] >= 0:
                cache[test["slotMapping"][t]] = DEAD if dead[t] else ids[t]
        return {"slotCacheOut": cache}
    out = []
    for r, (window, mask) in enumerate(after):
        history = [DEAD if m else x for x, m in zip(window, mask) if x != -1 or m][::-1]  # oldest first
        if enc == "engram":
            moved = test["historyIn"][r]["position"] + cu[r + 1] - cu[r]
            if test.get("accepted") is not None:
                moved = test["historyIn"][r]["position"] + len(test["accepted"][r])
            out.append({"position": moved, "history": history})
        elif cu[r] == cu[r + 1]:
            out.append(test["pastIds"][r])  # onnxruntime, an empty request: unchanged
        else:
            out.append([layout["pad"]] * (w - len(history)) + history)
    return {"historyOut": out} if enc == "engram" else {"presentIds": out}
# [write]


# [check]
def check_boundaries(test):
    """§HASH.10 item 1: refused before anything is read through them."""
    cu, n = test["cuSeqlens"], len(test["ids"])
    if cu[0] != 0:
        raise Refusal(f"cuSeqlens[0] = {cu[0]}: the first boundary is 0")
    for r in range(1, len(cu)):
        if cu[r] < cu[r - 1]:
            raise Refusal(f"cuSeqlens[{r}] = {cu[r]} is below cuSeqlens[{r - 1}] = {cu[r - 1]}")
    if cu[-1] > n:
        raise Refusal(f"cuSeqlens[{len(cu) - 1}] = {cu[-1]} is past the {n} slots")


def check(layout, test, ids, dead, lookback, lookback_dead):
    """The rest of what the call must refuse (§HASH.1, §HASH.9, §HASH.11), before the kernel runs."""
    cu, v = test["cuSeqlens"], layout["v"]
    for t in range(cu[-1]):
        if not dead[t] and not 0 <= ids[t] < v:
            raise Refusal(f"slot {t}: id {ids[t]} is not below V = {v}")
    for r, window in enumerate(lookback):
        for c, x in enumerate(window):
            if not lookback_dead[r][c] and x >= v:
                raise Refusal(f"request {r}: history id {x} is not below V = {v}")
    if "parents" in test:
        par = test["parents"]
        for r in range(len(cu) - 1):
            for j in range(cu[r + 1] - cu[r]):
                if not -1 <= par[cu[r] + j] < j:
                    raise Refusal(f"request {r}: draft {j} has parent {par[cu[r] + j]}")
            prev = -1
            for a in test["accepted"][r]:
                if not (0 <= a < cu[r + 1] - cu[r] and par[cu[r] + a] == prev):
                    raise Refusal(f"request {r}: accepted draft {a} is not a child of {prev}")
                prev = a
# [check]


# [test]
def serving_test(group, test):
    layers = group["layers"]  # the layout as the group gives it (§VEC.6): multipliers, primes, offsets per layer
    layout = dict(profile="v4.1", v=group["compressedVocabSize"], pad=group["compressedPad"], layers=layers,
                  max_ngram=len(layers[0]["multipliers"]), heads=len(layers[0]["primes"][0]))
    check_boundaries(test)
    ids, dead, lookback, lookback_dead = read_state(layout, test)
    check(layout, test, ids, dead, lookback, lookback_dead)
    rows, after = engine_hash(layout, ids, dead, test["cuSeqlens"], test["positions"], lookback, lookback_dead,
                              test.get("parents"), test.get("accepted"))
    return {"rows": rows, **write_state(layout, test, after, ids, dead)}
# [test]


def handle(req):
    op = req["op"]
    if op == "hello":
        return protocol.hello("serving-example", "0.1.0", ["serving_v41"], ["v4.1"])
    if op == "test" and req["type"] in ("PackedBatchTest", "DraftTreeTest"):
        try:
            return protocol.outputs(serving_test(req["group"], req["test"]))
        except Refusal as e:
            return protocol.refused(e)
    if op == "contract":
        return {"contract": None}
    if op == "bye":
        return protocol.bye()
    return protocol.unsupported("not this example's")


if __name__ == "__main__":
    sys.exit(protocol.serve(handle))
