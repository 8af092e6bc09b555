"""§HASH the n-gram hash (spec/hash.md): compressed ids to row ids, the state a sequence carries across calls
(§HASH.6), its export and import (§HASH.9), the packed calls of a serving engine (§HASH.10-§HASH.12) and the
accumulated digests of long streams."""
import hashlib

import numpy as np

from engram_adapter.protocol import hash_state_test

from .bugs import planted, segment_reset, variant
from .layout import fingerprint, layout_of

DEAD = -1


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
            if planted("no-dead-blocking"):
                blocked = before | (x == DEAD)
            elif planted("dead-as-id"):
                blocked = before  # -1 is multiplied in like any id
            else:
                blocked = blocked | before | (x == DEAD)
        else:
            blocked = before
            if planted("negative-to-pad"):
                x = np.where(x < 0, pad, x)  # a llama.cpp port: a negative id is hashed as the pad
        tokens.append(np.where(blocked, pad, x))
        if planted("ngram-cap-4") and s >= 4:
            tokens[s] = np.full(n, pad, dtype=np.int64)
    cols = (w - 1) * layout["heads"]
    out = np.zeros((n, len(layout["layers"]), cols), dtype=np.int64)
    with np.errstate(over="ignore"):
        for li, l in enumerate(layout["layers"]):
            m = np.asarray(l["multipliers"], dtype=np.int64)
            rolling = tokens[0] * m[0]
            col = 0
            for k in range(1, w):
                rolling = np.bitwise_xor(rolling, tokens[k] * m[k])
                for hi, p in enumerate(l["primes"][k - 1]):
                    offset = l["offsets"][col]
                    if planted("heads-cap-8") and hi >= 8:
                        p, offset = l["primes"][k - 1][hi % 8], l["offsets"][col - hi + hi % 8]
                    if planted("truncated-mod"):
                        res = np.fmod(rolling, np.int64(p))
                    else:
                        res = np.mod(rolling, np.int64(p))
                    out[:, li, col] = res + offset
                    col += 1
    if planted("row-id-uint32") and layout["profile"] == "v4.1":
        out &= np.int64(0xFFFFFFFF)  # (uint32_t) (h % prime + offset): the low 32 bits of each row id
    if planted("row-id-int32") and layout["profile"] == "v4.1" and out.size and out.max() >= (1 << 31):
        # vLLM's oracle returns torch.tensor(rows, dtype=torch.int32), which raises on such a value
        raise ValueError(f"row id {int(out.max())} does not fit int32")
    keep = w - 1
    new_history = list(seen[-keep:]) if keep > 0 and len(seen) else []
    new_history = [int(x) for x in new_history][-min(position + n, keep):] if position + n > 0 else []
    return out, new_history


class State:
    def __init__(self, layout, capacity=0):
        self.layout, self.capacity = layout, capacity
        self.position, self.recent = 0, []

    def append(self, ids):
        if ids and getattr(self, "pending", None) is not None:  # lazy-import: the history arrives with the first id
            self.recent, self.pending = self.pending + self.recent, None
        w = self.layout["max_ngram"] - 1
        hist = self.recent[-w:] if w else []
        hist = hist[-min(self.position, w):] if self.position else []
        rows, _ = hash_rows(self.layout, hist, self.position, ids)
        keep = w + self.capacity - (1 if planted("rollback-ring-short") and self.capacity > 0 else 0)
        self.recent = (self.recent + list(ids))[-keep:] if keep else []
        self.position += len(ids)
        return rows.tolist()

    def rollback(self, k):
        w = self.layout["max_ngram"] - 1
        if k > self.position:
            raise ValueError("rollback past the start")
        if variant("rollback-window-capacity") and k > self.capacity:
            raise ValueError(f"rollback by {k} exceeds the rollback capacity {self.capacity}")
        if planted("rollback-dead") and self.layout["profile"] == "v4.1":
            # A ring of the last w ids only: the removed ids had overwritten older slots, which now read DEAD.
            ring = self.recent[-w:] if w else []
            kept = ring[:max(0, len(ring) - k)]
            need = min(self.position - k, w)
            self.recent = [DEAD] * (need - len(kept)) + kept
            self.position -= k
            return
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
        if planted("position-int32"):
            self.position = (self.position + (1 << 31)) % (1 << 32) - (1 << 31)
        if planted("lazy-import"):
            self.pending, self.recent = self.recent, []


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


def hash_test(type_, group, test):
    """HashTest, HashStateTest (a script of §VEC.7) and HashHandoffTest (§HASH.9) of `group`; None for any
    other type (after the group's layout is built: a group without one is refused)."""
    layout = layout_of(group)
    if type_ == "HashTest":
        return {"rows": State(layout).append(test["ids"])}
    if type_ == "HashStateTest":
        def fork(seqs, source, to):
            if variant("fork-refuses-existing") and to in seqs:
                raise ValueError(f"fork onto {to!r}, which exists")
            src = seqs[source]
            dst = State(layout, src.capacity)
            dst.position, dst.recent = src.position, list(src.recent)
            return dst

        return hash_state_test(group, test, lambda capacity: State(layout, capacity), fork)
    if type_ == "HashHandoffTest":
        fp = fingerprint(layout)

        def segment(seg, ids):
            s = State(layout)
            h = seg["historyIn"]
            if variant("handoff-position-from"):
                h = {"position": seg["from"], "history": h["history"]}
            s.import_(h, fp, fp)
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


# ----------------------------------------------------------------------------- §HASH.10-§HASH.12 packed calls


def serving_read(layout, type_, test):
    """§CON.7: the test's state in, whatever its encoding, as one form: per request {"position", "ids", "under"}
    (ids with DEAD = -1, under: the id beneath each DEAD one where the encoding gives it, else -1), and the flat
    ids (DEAD = -1) with the ids beneath them."""
    enc, w = test["encoding"], layout["max_ngram"] - 1
    raw = list(test["ids"])
    if enc in ("vllm", "slotCache"):
        if len(test["deadMask"]) != len(raw):
            raise ValueError("deadMask: not one entry per slot")
        ids = [DEAD if m else x for x, m in zip(raw, test["deadMask"])]
        under = raw
    elif enc in ("engram", "onnxruntime", "sglang"):
        ids, under = raw, list(raw)
    else:
        raise ValueError(f"encoding {enc!r} is none of §CON.7's")
    cu, pos = test["cuSeqlens"], test["positions"]
    b = len(cu) - 1
    if b < 0:
        raise ValueError("cuSeqlens: empty")

    def first_position(r):  # the request's position before the call: its first slot's (§CON.7)
        if cu[r] >= cu[r + 1]:
            return None
        if not 0 <= cu[r] < len(pos):
            raise ValueError(f"cuSeqlens[{r}] = {cu[r]}: no slot of the buffer")
        return pos[cu[r]]

    hists = []
    for r in range(b):
        if enc == "engram":
            h = test["historyIn"][r]
            hists.append({"position": h["position"], "ids": list(h["history"]), "under": list(h["history"])})
            continue
        if enc == "vllm":
            win, mask = test["lookbackTokenIds"][r], test["lookbackDeadMask"][r]
            known = next((c for c, x in enumerate(win) if x == -1), w)
            p = first_position(r)
            p = known if p is None else p
            n = min(max(p, 0), w)
            hid, hun = [], []
            for c in reversed(range(n)):  # column c is position p - 1 - c: oldest first is the last column
                if win[c] == -1:
                    raise ValueError(f"lookbackTokenIds[{r}][{c}] = -1 (not known) where the windows read it")
                hid.append(DEAD if mask[c] else win[c])
                hun.append(win[c])
        elif enc == "onnxruntime":
            past = test["pastIds"][r]
            p = first_position(r)
            p = w if p is None else p
            n = min(max(p, 0), w)
            hid = list(past[w - n:])
            hun = [-1 if x == DEAD else x for x in hid]
        elif enc == "sglang":
            row = test["tokenTable"][r]
            p = first_position(r) or 0
            n = min(max(p, 0), w)
            if p > len(row):
                raise ValueError(f"tokenTable[{r}]: {len(row)} positions, the request continues at {p}")
            hid = list(row[p - n:p])
            hun = [-1 if x == DEAD else x for x in hid]
        else:  # slotCache
            p = first_position(r) or 0
            n = min(max(p, 0), w)
            hid = [test["slotCache"][slot_of(test, r, q)] for q in range(p - n, p)]
            hun = [-1 if x == DEAD else x for x in hid]
        hists.append({"position": p, "ids": hid, "under": hun})
    return ids, under, hists


def slot_of(test, r, position):
    """§CON.7 slotCache: position p of request r lies at blockTable[r][p // blockSize] * blockSize + p % blockSize."""
    bs = test["blockSize"]
    block = test["blockTable"][r][position // bs]
    slot = block * bs + position % bs
    if position < 0 or block < 0 or not 0 <= slot < len(test["slotCache"]):
        raise ValueError(f"blockTable[{r}]: no slot for position {position}")
    return slot


def serving_test(type_, group, test):
    """§HASH.10 / §HASH.11: every request continues its own state over its own slots (or its drafts' paths),
    written back in the test's encoding (§CON.7)."""
    layout = layout_of(group)
    fp = fingerprint(layout)
    w, enc = layout["max_ngram"] - 1, test["encoding"]
    drafts = type_ == "DraftTreeTest"
    ids, under, hists = serving_read(layout, type_, test)
    cu, pos = test["cuSeqlens"], test["positions"]
    b, n_slots = len(cu) - 1, len(ids)
    # §HASH.10 item 1: the boundaries, before anything is read through them
    if cu[0] != 0:
        raise ValueError(f"cuSeqlens[0] = {cu[0]}: the first boundary must be 0")
    for r in range(1, b + 1):
        if cu[r] < cu[r - 1]:
            raise ValueError(f"cuSeqlens[{r}] = {cu[r]} is below cuSeqlens[{r - 1}] = {cu[r - 1]}")
    if cu[b] > n_slots:
        raise ValueError(f"cuSeqlens[{b}] = {cu[b]} is beyond the {n_slots} slots")
    check_ids(layout, ids[:cu[b]])
    for h in hists:  # §HASH.9, each request's state in
        State(layout).import_({"position": h["position"], "history": h["ids"]}, fp, fp)
    mask_off = planted("mask-not-applied-to-history")
    seen_hist = lambda h: h["under"] if mask_off else h["ids"]  # noqa: E731  a masked id read as itself
    seen_slot = lambda t: under[t] if mask_off else ids[t]  # noqa: E731

    def rows_of(h_ids, position, chain, own):
        """The rows of the last id of `chain` (ids after `h_ids`, the first at `position`); its own slot `own`."""
        prev = (list(h_ids) + list(chain[:-1]))[-w:] if w else []
        prev = prev[-min(position + len(chain) - 1, w):] if position + len(chain) - 1 > 0 else []
        return hash_rows(layout, prev, position + len(chain) - 1, [own])[0].tolist()[0]

    rows, outs = [], []
    for r in range(b):
        h = hists[r]
        start, hist_ids, hist_under = h["position"], seen_hist(h), h["under"]
        if planted("restart-each-call"):
            start, hist_ids, hist_under = 0, [], []
        slots = list(range(cu[r], cu[r + 1]))
        if drafts:
            par = test["parents"]
            depth = []
            for j, t in enumerate(slots):
                if not -1 <= par[t] < j:
                    raise ValueError(f"request {r}: draft {j} has parent {par[t]}")
                depth.append(0 if par[t] < 0 else depth[par[t]] + 1)
                if pos[t] != h["position"] + depth[j]:
                    raise ValueError(f"request {r}: slot {t} has position {pos[t]}, expected {h['position'] + depth[j]}")
            for j, t in enumerate(slots):
                path, at = [], j
                while at >= 0:
                    path.insert(0, slots[at])
                    at = par[slots[at]]
                rows.append(rows_of(hist_ids, start, [seen_slot(u) for u in path], ids[t]))
            path, prev = test["accepted"][r], -1
            for i, a in enumerate(path):
                if not (0 <= a < len(slots) and par[slots[a]] == prev):
                    raise ValueError(f"request {r}: accepted[{i}] = {a} does not continue the path")
                prev = a
            kept = [slots[a] for a in path] if not planted("rejected-drafts-kept") else slots
            segments = [(start, hist_ids, hist_under, kept)]
        else:
            # §HASH.12 (declared): a position restarting at 0 starts a fresh segment
            segments, seg_start = [], 0
            for j, t in enumerate(slots):
                restart = segment_reset() and j > 0 and pos[t] == 0
                if restart:
                    segments.append((start if not segments else 0, hist_ids if not segments else [],
                                     hist_under if not segments else [], slots[seg_start:j]))
                    seg_start = j
                expect = 0 if restart else (h["position"] if not segments else 0) + (j - seg_start)
                if pos[t] != expect:
                    raise ValueError(f"request {r}: slot {t} has position {pos[t]}, but it continues at {expect}")
            segments.append((start if not segments else 0, hist_ids if not segments else [],
                             hist_under if not segments else [], slots[seg_start:]))
            for s0, s_ids, _, seg in segments:
                chain = []
                for t in seg:
                    chain.append(seen_slot(t))
                    rows.append(rows_of(s_ids, s0, chain, ids[t]))
        s0, s_ids, s_under, consumed = segments[-1]
        if planted("padding-writes-state") and not drafts and r == b - 1:
            consumed = consumed + list(range(cu[b], n_slots))
        seq_ids = list(s_ids) + [seen_slot(t) for t in consumed]
        seq_under = list(s_under) + [under[t] for t in consumed]
        p_out = s0 + len(consumed)
        k = min(p_out, w)
        outs.append({"position": p_out, "ids": seq_ids[len(seq_ids) - k:] if k else [],
                     "under": seq_under[len(seq_under) - k:] if k else [],
                     "writes": [(s0 + i, seen_slot(t)) for i, t in enumerate(consumed)]})
        if planted("restart-each-call"):  # the slots are still written where the call says
            outs[-1]["writes"] = [(pos[t], ids[t]) for t in slots]
    if planted("naive-flatten"):  # the request slots as one sequence after request 0's state (§HASH.10's control)
        h = hists[0]
        rows = hash_rows(layout, h["ids"], h["position"], ids[:cu[b]])[0].tolist()
    if planted("cross-request-leak"):  # each window bounded by the buffer, not by its request
        rows = []
        for r in range(b):
            for j, t in enumerate(range(cu[r], cu[r + 1])):
                if drafts:
                    before, at = [], test["parents"][t]
                    while at >= 0:  # the draft's path, nearest first
                        before.append(ids[cu[r] + at])
                        at = test["parents"][cu[r] + at]
                else:
                    before = [ids[u] for u in reversed(range(cu[r], t))]
                before += [ids[u] for u in reversed(range(cu[r]))] + list(reversed(hists[r]["ids"]))
                k = min(pos[t], w, len(before))
                rows.append(hash_rows(layout, list(reversed(before[:k])), pos[t], [ids[t]])[0].tolist()[0])
    out = {"rows": rows}
    if enc == "engram":
        out["historyOut"] = [{"position": o["position"], "history": o["ids"]} for o in outs]
    elif enc == "vllm":
        out["lookbackTokenIdsOut"] = [[(o["under"] if o["ids"][i] == DEAD else o["ids"])[i]
                                       for i in reversed(range(len(o["ids"])))] + [-1] * (w - len(o["ids"]))
                                      for o in outs]
        out["lookbackDeadMaskOut"] = [[o["ids"][i] == DEAD for i in reversed(range(len(o["ids"])))]
                                      + [False] * (w - len(o["ids"])) for o in outs]
    elif enc == "onnxruntime":
        out["presentIds"] = [[layout["pad"]] * (w - len(o["ids"])) + o["ids"] for o in outs]
    elif enc == "slotCache":
        cache = list(test["slotCache"])
        for r, o in enumerate(outs):
            for p, x in o["writes"]:
                cache[slot_of(test, r, p)] = x
        out["slotCacheOut"] = cache
    return out


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
