#!/usr/bin/env python3
"""A complete JSON-lines adapter (spec/conformance.md §CONF.2) for an Engram implementation in numpy.

This is what a Python/JAX/Rust port writes to be checked by `engram conform --exec "..."`: read one JSON
request per line on stdin, answer with one JSON object per line on stdout. The implementation below is a
plain numpy port of the hash family written from the spec (not from the C++ reference):

  suites: multipliers, layout, hash_v41, hash_demo, hash_state, accumulated

Run:  engram conform --vectors vectors --exec "python3 conformance/examples/numpy_adapter.py"

`--bug NAME` plants a known porting bug (spec/conformance.md §CONF.4, ENGRAM.md §8) so that the runner's
flagged tests can be seen to catch it:
  no-dead-blocking   pad a DEAD slot but keep reading older slots (no cumulative blocking)
  truncated-mod      C-style % (sign of the dividend) instead of floor-mod on negative mixes
  int32-multipliers  draw multipliers with int32 bounds (MaxText)
"""
import argparse
import hashlib
import json
import sys

import numpy as np

DEAD = -1
INT64_MAX = (1 << 63) - 1
BUG = None
CONTRACT = None  # --contract FILE: the hash contract (spec §CON) of the model this port serves


# ----------------------------------------------------------------------------- §RNG numpy itself


def multiplier_bound(v, int32=False):
    if v < 1:
        raise ValueError(f"compressed vocab size must be >= 1, got {v}")
    limit = (1 << 31) - 1 if int32 else INT64_MAX
    return max(1, (limit // v) // 2)


def multipliers(seed, layer_id, v, max_ngram):
    int32 = BUG == "int32-multipliers"
    if seed < 0 or layer_id < 0:
        raise ValueError("seed and layer id must be >= 0")
    rng = np.random.default_rng(seed + 10007 * layer_id)
    r = rng.integers(0, multiplier_bound(v, int32), size=max_ngram, dtype=np.int32 if int32 else np.int64)
    return [int(x) * 2 + 1 for x in r]


# ----------------------------------------------------------------------------- §CFG configuration


def parse_config(doc, profile=None):
    """The subset of §CFG the hash needs: (profile, layer_ids, max_ngram, heads, bases, pad_id, seed)."""
    if profile is None:
        keys = set(doc) | set(doc.get("text_config", {}) if isinstance(doc.get("text_config"), dict) else {})
        v41 = any(k.startswith("engram_") and k != "engram_vocab_size" for k in keys)
        demo = any(k in doc for k in ("max_ngram_size", "n_head_per_ngram", "layer_ids", "n_embed_per_ngram"))
        if v41 == demo:
            raise ValueError("cannot tell the profile")
        profile = "v4.1" if v41 else "demo-v1"
    if profile == "v4.1":
        c = doc["text_config"] if isinstance(doc.get("text_config"), dict) and any(
            k.startswith("engram_") for k in doc["text_config"]) else doc
        max_ngram, heads = c["engram_max_ngram_size"], c["engram_n_heads"]
        if not isinstance(max_ngram, int) or not 2 <= max_ngram <= 64:
            raise ValueError(f"engram_max_ngram_size {max_ngram}")
        if not isinstance(heads, int) or not 1 <= heads <= 4096:
            raise ValueError(f"engram_n_heads {heads}")
        base = c["engram_vocab_size"]
        if not isinstance(base, int) or not 2 <= base < (1 << 40):
            raise ValueError(f"engram_vocab_size {base}")
        pad = c.get("engram_pad_token_id", c.get("engram_pad_id"))
        cfg = dict(profile=profile, layer_ids=list(c["engram_layer_ids"]), max_ngram=max_ngram, heads=heads,
                   bases=[base] * (max_ngram - 1), pad_id=pad, seed=0,
                   num_embeddings=c.get("engram_num_embeddings"), v=c.get("engram_compressed_vocab_size"))
    else:
        d = dict(engram_vocab_size=[646400, 646400], max_ngram_size=3, n_head_per_ngram=8, layer_ids=[1, 15],
                 pad_id=2, seed=0, n_embed_per_ngram=512)
        d.update(doc)
        max_ngram, heads = d["max_ngram_size"], d["n_head_per_ngram"]
        if not isinstance(max_ngram, int) or not 2 <= max_ngram <= 64:
            raise ValueError(f"max_ngram_size {max_ngram}")
        if not isinstance(heads, int) or not 1 <= heads <= 4096:
            raise ValueError(f"n_head_per_ngram {heads}")
        if len(d["engram_vocab_size"]) != max_ngram - 1:
            raise ValueError("engram_vocab_size needs one entry per order")
        if d["n_embed_per_ngram"] % heads:
            raise ValueError("n_embed_per_ngram not divisible by heads")
        cfg = dict(profile=profile, layer_ids=list(d["layer_ids"]), max_ngram=max_ngram, heads=heads,
                   bases=list(d["engram_vocab_size"]), pad_id=d["pad_id"], seed=d["seed"], num_embeddings=None, v=None)
    if len(set(cfg["layer_ids"])) != len(cfg["layer_ids"]) or any(i < 0 for i in cfg["layer_ids"]) or not cfg["layer_ids"]:
        raise ValueError("layer ids must be distinct and >= 0")
    return cfg


# ----------------------------------------------------------------------------- §LAY primes and layout


def is_prime(n):
    """Deterministic Miller-Rabin for n < 3.3e24 (first twelve prime bases)."""
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    for p in small:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d //= 2
        r += 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def build_layout(cfg, v, pad):
    if cfg["profile"] == "v4.1" and cfg["v"] is not None and cfg["v"] != v:
        raise ValueError(f"engram_compressed_vocab_size {cfg['v']} != {v}")
    if not 0 <= pad < v:
        raise ValueError("pad outside [0, V)")
    seen, layers = set(), []
    for li, layer_id in enumerate(cfg["layer_ids"]):
        primes = []
        for order in range(2, cfg["max_ngram"] + 1):
            start, row = cfg["bases"][order - 2] - 1, []
            for _ in range(cfg["heads"]):
                c = start + 1
                while not is_prime(c) or c in seen:
                    c += 1
                seen.add(c)
                row.append(c)
                start = c
            primes.append(row)
        flat = [p for row in primes for p in row]
        offsets = [int(x) for x in np.concatenate([[0], np.cumsum(flat)[:-1]])]
        total = int(sum(flat))
        if cfg["profile"] == "v4.1" and cfg["num_embeddings"] is not None and cfg["num_embeddings"][li] != total:
            raise ValueError("engram_num_embeddings mismatch")
        layers.append(dict(layerId=layer_id, multipliers=multipliers(cfg["seed"], layer_id, v, cfg["max_ngram"]),
                           primes=primes, offsets=offsets, numEmbeddings=total))
    return dict(profile=cfg["profile"], v=v, pad=pad, max_ngram=cfg["max_ngram"], heads=cfg["heads"], layers=layers)


def fingerprint(layout):
    text = (f"engram-layout-v1;profile={layout['profile']};V={layout['v']};pad={layout['pad']};"
            f"max={layout['max_ngram']};heads={layout['heads']}")
    for l in layout["layers"]:
        text += f";layer={l['layerId']};m=" + ",".join(map(str, l["multipliers"]))
        text += ";p=" + ",".join(str(p) for row in l["primes"] for p in row)
    return hashlib.sha256(text.encode()).hexdigest()


def layout_of(group):
    return build_layout(parse_config(group["config"], group.get("profile")), group["compressedVocabSize"],
                        group["compressedPad"])


# ----------------------------------------------------------------------------- §HASH


def check_ids(layout, ids):
    for i, x in enumerate(ids):
        if x >= layout["v"] or (layout["profile"] == "v4.1" and x < 0 and x != DEAD):
            raise ValueError(f"position {i}: id {x} is not a compressed id")


def hash_rows(layout, history, position, ids):
    """Rows [len(ids), layers, cols] for `ids` continuing a sequence at `position` with `history`."""
    check_ids(layout, ids)
    w = layout["max_ngram"]
    seen = np.asarray(list(history) + list(ids), dtype=np.int64)
    first = len(history)
    n = len(ids)
    pos = position + np.arange(n, dtype=np.int64)
    pad = np.int64(layout["pad"])
    tokens, blocked = [], np.zeros(n, dtype=bool)
    for s in range(w):
        before = pos < s
        idx = np.clip(first + np.arange(n) - s, 0, None)
        x = np.where(before, pad, seen[idx] if len(seen) else pad)
        if layout["profile"] == "v4.1":
            if BUG == "no-dead-blocking":
                blocked = before | (x == DEAD)
            else:
                blocked = blocked | before | (x == DEAD)
        else:
            blocked = before
        tokens.append(np.where(blocked, pad, x))
    cols = (w - 1) * layout["heads"]
    out = np.zeros((n, len(layout["layers"]), cols), dtype=np.int64)
    with np.errstate(over="ignore"):
        for li, l in enumerate(layout["layers"]):
            m = np.asarray(l["multipliers"], dtype=np.int64)
            rolling = tokens[0] * m[0]
            col = 0
            for k in range(1, w):
                rolling = np.bitwise_xor(rolling, tokens[k] * m[k])
                for p in l["primes"][k - 1]:
                    if BUG == "truncated-mod":
                        res = np.fmod(rolling, np.int64(p))
                    else:
                        res = np.mod(rolling, np.int64(p))
                    out[:, li, col] = res + l["offsets"][col]
                    col += 1
    keep = w - 1
    new_history = list(seen[-keep:]) if keep > 0 and len(seen) else []
    new_history = [int(x) for x in new_history][-min(position + n, keep):] if position + n > 0 else []
    return out, new_history


class State:
    def __init__(self, layout, capacity=0):
        self.layout, self.capacity = layout, capacity
        self.position, self.recent = 0, []

    def append(self, ids):
        w = self.layout["max_ngram"] - 1
        hist = self.recent[-w:] if w else []
        hist = hist[-min(self.position, w):] if self.position else []
        rows, _ = hash_rows(self.layout, hist, self.position, ids)
        self.recent = (self.recent + list(ids))[-(w + self.capacity):] if (w + self.capacity) else []
        self.position += len(ids)
        return rows.tolist()

    def rollback(self, k):
        w = self.layout["max_ngram"] - 1
        if k > self.position:
            raise ValueError("rollback past the start")
        need = min(self.position - k, w)
        if len(self.recent) < k + need:
            raise ValueError("rollback beyond the retained history")
        self.recent = self.recent[:len(self.recent) - k]
        self.position -= k

    def history(self):
        w = self.layout["max_ngram"] - 1
        n = min(self.position, w)
        return [int(x) for x in self.recent[len(self.recent) - n:]] if n else []

    def import_(self, h, fp, expected_fp):
        if fp != expected_fp:
            raise ValueError("history from another layout")
        w = self.layout["max_ngram"] - 1
        if h["position"] < 0 or len(h["history"]) != min(h["position"], w):
            raise ValueError("history does not fit its position")
        check_ids(self.layout, h["history"])
        self.position, self.recent = h["position"], list(h["history"])


def stream_id(v41, v, seed, i):
    g = 0x9E3779B97F4A7C15
    z = (seed + i * g + g) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    w = z ^ (z >> 31)
    if v41 and (w >> 58) == 0:
        return DEAD
    if not v41 and (w >> 58) == 1:
        return -1 - ((w >> 8) % 1000)
    return w % v


def stream_ids(v41, v, seed, start, n):
    """Vectorised stream_id over positions start .. start+n-1 (uint64 arithmetic wraps like the spec's)."""
    g = np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        i = np.arange(start, start + n, dtype=np.uint64)
        z = np.uint64(seed) + i * g + g
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        w = z ^ (z >> np.uint64(31))
    ids = (w % np.uint64(v)).astype(np.int64)
    top = w >> np.uint64(58)
    if v41:
        ids[top == 0] = DEAD
    else:
        neg = top == 1
        ids[neg] = -1 - ((w[neg] >> np.uint64(8)) % np.uint64(1000)).astype(np.int64)
    return ids


# ----------------------------------------------------------------------------- the protocol


def run_test(type_, group, test):
    if type_ == "BoundedIntegersTest":
        rng = np.random.default_rng(test["seed"])
        return {"values": [int(x) for x in rng.integers(test["low"], test["high"], size=test["count"], dtype=np.int64)]}
    if type_ == "MultipliersTest":
        return {"multipliers": multipliers(test["seed"], test["layerId"], test["compressedVocabSize"], test["maxNgram"])}
    if type_ == "LayoutTest":
        layout = build_layout(parse_config(test["config"], test.get("profile")), test["compressedVocabSize"],
                              test["compressedPad"])
        return {"layers": layout["layers"]}
    layout = layout_of(group)
    if type_ == "HashTest":
        return {"rows": State(layout).append(test["ids"])}
    if type_ == "HashStateTest":
        seqs, steps = {}, []
        for step in test["steps"]:
            step = dict(step)
            if step["op"] == "append":
                s = seqs.setdefault(step["seq"], State(layout, group.get("rollbackCapacity", 0)))
                step["rows"] = s.append(step["ids"])
                step["positionAfter"], step["historyAfter"] = s.position, s.history()
            elif step["op"] == "rollback":
                s = seqs[step["seq"]]
                s.rollback(step["k"])
                step["positionAfter"], step["historyAfter"] = s.position, s.history()
            elif step["op"] == "fork":
                src = seqs[step["from"]]
                dst = State(layout, src.capacity)
                dst.position, dst.recent = src.position, list(src.recent)
                seqs[step["to"]] = dst
            steps.append(step)
        return {"steps": steps}
    if type_ == "HashHandoffTest":
        fp = fingerprint(layout)

        def segment(seg, ids):
            s = State(layout)
            s.import_(seg["historyIn"], fp, fp)
            seg = dict(seg)
            seg["rows"] = s.append(ids[seg["from"]:seg["to"]])
            seg["historyOut"] = {"position": s.position, "history": s.history()}
            return seg

        if "historyIn" in test:
            State(layout).import_(test["historyIn"], test["historyIn"].get("layoutFingerprint"), fp)
            return {"imported": True}
        if "segments" in test:
            return {"segments": [segment(seg, test["ids"]) for seg in test["segments"]]}
        return {"microBatches": [[segment(seg, test["sequences"][seg["sequence"]]) for seg in mb]
                                 for mb in test["microBatches"]]}
    return None


def accumulate(group, n, seed):
    layout = layout_of(group)
    v41 = layout["profile"] == "v4.1"
    state, digest = State(layout), hashlib.sha256()
    chunk = 1 << 16
    for at in range(0, n, chunk):
        ids = stream_ids(v41, layout["v"], seed, at, min(chunk, n - at))
        w = layout["max_ngram"] - 1
        hist = state.recent[-min(state.position, w):] if state.position and w else []
        rows, _ = hash_rows(layout, hist, state.position, ids)
        state.recent = (state.recent + [int(x) for x in ids[-w:]])[-w:] if w else []
        state.position += len(ids)
        digest.update(rows.astype("<i8").tobytes())
    return digest.hexdigest()


def handle(req):
    op = req.get("op")
    if op == "hello":
        return {"protocol": 1, "name": "numpy-adapter" + (f" (bug: {BUG})" if BUG else ""), "version": "1",
                "suites": ["multipliers", "layout", "hash_v41", "hash_demo", "hash_state", "accumulated"],
                "profiles": ["v4.1", "demo-v1"], "features": []}
    try:
        if op == "contract":
            if CONTRACT is not None:
                return {"contract": CONTRACT}
            return {"contract": None, "layers": layout_of(req)["layers"]}
        if op == "test":
            out = run_test(req["type"], req["group"], req["test"])
            return {"unsupported": req["type"]} if out is None else {"outputs": out}
        if op == "accumulate":
            return {"sha256": accumulate(req["group"], req["n"], req["seed"])}
        if op == "bye":
            return {"bye": True}
        return {"unsupported": f"op {op}"}
    except (ValueError, KeyError, TypeError, IndexError) as e:
        return {"refused": f"{type(e).__name__}: {e}"}


def main():
    global BUG, CONTRACT
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bug", choices=["no-dead-blocking", "truncated-mod", "int32-multipliers"])
    ap.add_argument("--contract", help="report this hash contract (e.g. written by `engram contract`)")
    args = ap.parse_args()
    BUG = args.bug
    if args.contract:
        with open(args.contract, encoding="utf-8") as f:
            CONTRACT = json.load(f)
    for line in sys.stdin:
        req = json.loads(line)
        print(json.dumps(handle(req)), flush=True)
        if req.get("op") == "bye":
            break


if __name__ == "__main__":
    main()
