"""Stand-in of JustVugg/colibri's c/tools/dsv41_ref.py API as conformance/ports/colibri/adapter.py calls it (class
NgramHash: the tables it is given, a history of compressed ids, push; RefModel.engram: x + gate * value of float32
tensors; the fp8 dequantizers), with none of its code: the rows, the gate and the decode come from the in-tree numpy
port (_ref.py). CI runs the adapter on it; the real measurement needs the port's checkout.

As the port's API carries no V (NgramHash takes compressed ids and never reads its token map), the stand-in,
like the port, cannot refuse an id >= V: port.json's standin.expectFail lists the fixed vectors that expect
that refusal; and as RefModel.engram takes no token mask, the stand-in, like the port, gates a DEAD position.
(torch, math and F are the names the adapter binds, as the port's file imports them.)"""


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


def _pow2(exponent):
    return torch.ldexp(torch.ones_like(exponent, dtype=torch.float32), exponent)


def precompute_freqs_cis(dim, seqlen, original_seq_len, base, factor, beta_fast, beta_slow):
    return torch.ones(seqlen, dim // 2, dtype=torch.complex64)  # the stand-in's RefModel keeps no attention


def fp8_dequant_blocked(q, scale, block=32):
    """§STO.1-2 codes times the E8M0 scale of their block x block tile."""
    rows, cols = q.shape
    s = scale.to(torch.int64).repeat_interleave(block, 0)[:rows].repeat_interleave(block, 1)[:, :cols]
    st = __import__("engram_numpy_port").storage
    return torch.tensor(st.E4M3_F32[q.view(torch.uint8).numpy()] * st.e8m0_f32()[s.numpy()])


def fp8_dequant_rowgroups(q, scale, group=32):
    st = __import__("engram_numpy_port").storage
    s = scale.to(torch.int64).repeat_interleave(group, 1).numpy()
    return torch.tensor(st.E4M3_F32[q.view(torch.uint8).numpy()] * st.e8m0_f32()[s])


class RefModel:
    def __init__(self, cfg, w, ngram=None):
        self.c, self.w, self.hc, self.dim = cfg, w, cfg["hc_mult"], cfg["dim"]

    def engram(self, layer, x, hash_ids):
        """x [s, hc, dim] + gate * value, each stream's gate and out as the numpy port's float32 mirror (§FUS.3)."""
        ref = __import__("_ref").ref
        p = f"layers.{layer}.engram."
        rows = self.w[p + "embed.weight"][hash_ids.reshape(-1)].reshape(hash_ids.shape[0], -1)
        kv = rows @ self.w[p + "wkv.weight"].T
        hc, dim = self.hc, self.dim
        key, value = kv.split([hc * dim, dim], dim=-1)
        q, k = self.w[p + "q_weight"].tolist(), self.w[p + "k_weight"].tolist()
        out = torch.empty(x.shape, dtype=torch.float32)
        for t in range(x.shape[0]):
            for c in range(hc):
                _, o = ref.v41_stream(x[t, c].tolist(), key[t, c * dim:(c + 1) * dim].tolist(), value[t].tolist(),
                                      q[c], k[c], float(self.c["norm_eps"]), False, 32)
                out[t, c] = torch.tensor(o, dtype=torch.float32)
        return out
