"""Stand-in of JustVugg/colibri's c/tools/dsv41_ref.py API as conformance/ports/colibri/adapter.py calls it (class
NgramHash: the tables it is given, a history of compressed ids, push), with none of its code: the rows come from
the in-tree numpy port (_ref.py). CI runs the adapter on it; the real measurement needs the port's checkout.

As the port's API carries no V (NgramHash takes compressed ids and never reads its token map), the stand-in,
like the port, cannot refuse an id >= V: port.json's standin.expectFail lists the fixed vectors that expect
that refusal."""


class NgramHash:
    DEAD = -1

    def __init__(self, token_map, primes, offsets, multipliers, pad_id, max_ngram_size, n_heads):
        # primes [layers, max_ngram - 1, heads], offsets [layers, cols], multipliers [layers, max_ngram]
        self.token_map, self.primes, self.offsets, self.multipliers = token_map, primes, offsets, multipliers
        self.pad_id, self.max_ngram_size, self.n_heads = pad_id, max_ngram_size, n_heads
        self.history = []

    def reset(self):
        self.history = []

    def _layout(self):
        # the reference's layout record, from the tables (V: no bound the API knows of, see the docstring)
        layers = [{"multipliers": [int(x) for x in m], "primes": [[int(p) for p in order] for order in pr],
                   "offsets": [int(x) for x in off]}
                  for m, pr, off in zip(self.multipliers.tolist(), self.primes.tolist(), self.offsets.tolist())]
        return {"profile": "v4.1", "v": 1 << 62, "pad": int(self.pad_id), "max_ngram": int(self.max_ngram_size),
                "heads": int(self.n_heads), "layers": layers}

    def push(self, compressed_ids):
        """Rows [new positions, layers, (max_ngram - 1) * heads] of the ids appended to the history."""
        ref = __import__("_ref").ref
        start = len(self.history)
        w = self.max_ngram_size - 1
        rows, _ = ref.hash_rows(self._layout(), self.history[max(0, start - w):], start, list(compressed_ids))
        self.history.extend(int(i) for i in compressed_ids)
        cols = (int(self.max_ngram_size) - 1) * int(self.n_heads)
        return torch.tensor(rows, dtype=torch.int64).reshape(len(compressed_ids), len(self.multipliers), cols)
