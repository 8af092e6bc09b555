"""What the port adapters share for suite serving_v41 (spec/hash.md §HASH.10, spec/contract.md §CON.7): a
PackedBatchTest read, whatever its encoding, into one form (flat ids, the DEAD mask, the ids beneath DEAD where
the encoding keeps them, and per request its position and last ids), the conversions into the call shapes the
engines take (a vLLM look-back window, onnxruntime's right-aligned past_ids, sglang's token table, a slot cache),
and each request's state after the call written back in the test's encoding.

The adapter's part is only this bookkeeping: the rows always come from the port's kernel, and where the port
itself returns the state (onnxruntime's present_ids, vLLM's slot cache, ATOM's slot_state) the adapter writes
back what the port returned, not what this module would compute.
"""
DEAD = -1


class Unexpressible(Exception):
    """The test's call cannot be written in the port's call shape (the adapter answers `unsupported`)."""


def layout_of(group):
    layers = group["layers"]
    return dict(v=group["compressedVocabSize"], pad=group["compressedPad"], layers=layers,
                m=len(layers[0]["multipliers"]), heads=len(layers[0]["primes"][0]) if layers[0]["primes"] else 0)


def boundary_problem(test):
    """§HASH.10 item 1 (what a call must refuse before reading through its boundaries), as text, or None."""
    cu, n = test["cuSeqlens"], len(test["ids"])
    if not cu:
        return "cuSeqlens is empty"
    if cu[0] != 0:
        return f"cuSeqlens[0] = {cu[0]}, not 0"
    for r in range(1, len(cu)):
        if cu[r] < cu[r - 1]:
            return f"cuSeqlens[{r}] = {cu[r]} is below cuSeqlens[{r - 1}] = {cu[r - 1]}"
    if cu[-1] > n:
        return f"cuSeqlens[{len(cu) - 1}] = {cu[-1]} is past the {n} slots"
    return None


class Packed:
    """One serving test in one form. ids: DEAD = -1; dead: the mask; under: the id beneath each slot (the id itself,
    or for a DEAD slot the id the encoding keeps beneath it, else -1). reqs[r]: {"position": P or None for a request
    with no slot and no position in its encoding, "ids": its last min(P, M - 1) ids, oldest first, DEAD = -1,
    "under": the same with the ids beneath DEAD where known}."""

    def __init__(self, group, test):
        lay = layout_of(group)
        self.test, self.enc, self.pad, self.v = test, test["encoding"], lay["pad"], lay["v"]
        self.w = lay["m"] - 1
        self.cu, self.pos = list(test["cuSeqlens"]), list(test["positions"])
        self.b = len(self.cu) - 1
        raw = list(test["ids"])
        if self.enc in ("vllm", "slotCache"):
            self.dead = [bool(x) for x in test["deadMask"]]
            self.ids = [DEAD if m else x for x, m in zip(raw, self.dead)]
            self.under = raw
        else:
            self.ids, self.dead, self.under = raw, [x == DEAD for x in raw], raw
        self.reqs = [self._request(r) for r in range(self.b)]

    @property
    def n(self):
        """The request slots: cuSeqlens[B] (the slots after it are padding)."""
        return self.cu[-1]

    def slots(self, r):
        return range(self.cu[r], self.cu[r + 1])

    def _first_position(self, r):
        if self.cu[r] >= self.cu[r + 1] or not 0 <= self.cu[r] < len(self.pos):
            return None
        return self.pos[self.cu[r]]

    def _request(self, r):
        t, w, enc = self.test, self.w, self.enc
        p = self._first_position(r)
        if enc == "engram":
            h = t["historyIn"][r]
            return {"position": h["position"], "ids": list(h["history"]), "under": list(h["history"])}
        if enc == "vllm":
            win, mask = t["lookbackTokenIds"][r], t["lookbackDeadMask"][r]
            if p is None:  # no slot: the window's known columns say how far it reaches
                p = next((c for c, x in enumerate(win) if x == -1), w)
            k = min(max(p, 0), w)
            cols = list(reversed(range(k)))  # column c is position P - 1 - c: the oldest first
            return {"position": p, "ids": [DEAD if mask[c] else win[c] for c in cols], "under": [win[c] for c in cols]}
        if p is None:
            return {"position": None, "ids": [], "under": []}
        k = min(max(p, 0), w)
        if enc == "onnxruntime":
            hist = list(t["pastIds"][r][w - k:])
        elif enc == "sglang":
            hist = list(t["tokenTable"][r][p - k:p])
        else:  # slotCache
            hist = [t["slotCache"][self.slot_of(r, q)] for q in range(p - k, p)]
        return {"position": p, "ids": hist, "under": hist}

    def slot_of(self, r, q):
        bs = self.test["blockSize"]
        return self.test["blockTable"][r][q // bs] * bs + q % bs

    # ------------------------------------------------------------------ the engines' call shapes

    def lookback(self, r):
        """vLLM's look-back window for request r: (ids, dead mask), newest first, -1 before the sequence's start;
        beneath a DEAD id, the id the encoding keeps (0 where it keeps none)."""
        h = self.reqs[r]
        ids = [u if u != DEAD else 0 for u in reversed(h["under"])]
        mask = [x == DEAD for x in reversed(h["ids"])]
        return ids + [-1] * (self.w - len(ids)), mask + [False] * (self.w - len(mask))

    def raw_ids(self, fill=0):
        """The flat buffer as raw ids with the mask beside it: beneath a DEAD slot the id the encoding keeps, else
        `fill`."""
        return [u if u != DEAD else fill for u in self.under]

    # ------------------------------------------------------------------ the state after the call

    def consumed_state(self, r, slots=None):
        """Request r's state after its slots (or the given ones) were consumed: the caller's bookkeeping."""
        h = self.reqs[r]
        slots = list(self.slots(r)) if slots is None else list(slots)
        if not slots:
            return dict(h)
        ids = h["ids"] + [self.ids[t] for t in slots]
        under = h["under"] + [self.under[t] for t in slots]
        k = min(h["position"] + len(slots), self.w)
        return {"position": h["position"] + len(slots), "ids": ids[len(ids) - k:] if k else [],
                "under": under[len(under) - k:] if k else []}

    def write(self, states, slot_cache=None):
        """The outputs that carry the state, in the test's encoding; states[r] as consumed_state returns it.
        slotCache: the cache the port wrote (else each request slot's id written at its slotMapping)."""
        enc, w, t = self.enc, self.w, self.test
        if enc == "engram":
            return {"historyOut": [{"position": s["position"], "history": list(s["ids"])} for s in states]}
        if enc == "vllm":
            wins = []
            for s in states:
                ids = [u if (x != DEAD or u != DEAD) else 0 for x, u in zip(reversed(s["ids"]), reversed(s["under"]))]
                mask = [x == DEAD for x in reversed(s["ids"])]
                wins.append((ids + [-1] * (w - len(ids)), mask + [False] * (w - len(mask))))
            return {"lookbackTokenIdsOut": [a for a, _ in wins], "lookbackDeadMaskOut": [m for _, m in wins]}
        if enc == "onnxruntime":
            out = []
            for r, s in enumerate(states):
                if self.cu[r] == self.cu[r + 1]:
                    out.append(list(t["pastIds"][r]))
                else:
                    out.append([self.pad] * (w - len(s["ids"])) + list(s["ids"]))
            return {"presentIds": out}
        if enc == "sglang":
            return {}  # the scheduler writes the token table, not the hasher
        if slot_cache is None:
            slot_cache = list(t["slotCache"])
            for i in range(self.n):
                if t["slotMapping"][i] >= 0:
                    slot_cache[t["slotMapping"][i]] = self.ids[i]
        return {"slotCacheOut": [int(x) for x in slot_cache]}
