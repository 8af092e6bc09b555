"""Stand-in of sglang's python/sglang/srt/layers/engram.py definitions as conformance/ports/sglang-serving/adapter.py
drives them (compute_hash_multipliers, EngramLayout.build / build_engram_layout, EngramHasher with the scheduler's
token table, engram_gate, EngramEmbedding), with none of their code: the layout, row ids, gate and decoded rows
come from the in-tree numpy port (_ref.py). CI runs the adapter on it; the real measurement needs the checkout."""
_OFFLOAD_LOG_EVERY = 1000


def _find_next_prime(start, seen_primes):
    return __import__("_ref").next_prime(start, seen_primes)


def compute_hash_multipliers(layer_ids, max_ngram_size, vocab_size):
    return torch.tensor(__import__("_ref").multipliers_of(layer_ids, max_ngram_size, vocab_size), dtype=torch.int64)


class EngramLayout(msgspec.Struct, frozen=True):
    @classmethod
    def build(cls, layer_ids, num_embeddings, max_ngram_size, n_heads, head_dim, vocab_size):
        layout = __import__("_ref").v41_layout(layer_ids, max_ngram_size, n_heads, vocab_size, num_embeddings)
        return cls(max_ngram_size=max_ngram_size, layer_ids=tuple(layer_ids), num_embeddings=tuple(num_embeddings),
                   primes=layout["primes"], n_heads=n_heads, head_dim=head_dim)


def build_engram_layout(config):
    if not config.engram_layer_ids:
        return None
    return EngramLayout.build(tuple(config.engram_layer_ids), tuple(config.engram_num_embeddings),
                              config.engram_max_ngram_size, config.engram_n_heads, config.engram_head_dim,
                              config.engram_vocab_size)


compute_engram_hash_ids = None


class EngramHasher(nn.Module):
    def __init__(self, layout, tokenizer, pad_id, compressed_vocab_size):
        super().__init__()
        standin = __import__("_ref")
        token_map, vocab_size = build_compressed_token_map(tokenizer)
        assert vocab_size == compressed_vocab_size
        self.max_ngram_size = layout.max_ngram_size
        self.pad_id = token_map[pad_id]
        self.vocab = vocab_size
        flat = [[p for order in layer for p in order] for layer in layout.primes]
        self.ref_layout = {"profile": "v4.1", "v": vocab_size, "pad": self.pad_id, "max_ngram": layout.max_ngram_size,
                           "heads": layout.n_heads,
                           "layers": [{"multipliers": m, "primes": [list(o) for o in p],
                                       "offsets": np.cumsum([0] + f[:-1]).tolist()}
                                      for m, p, f in zip(standin.multipliers_of(layout.layer_ids, layout.max_ngram_size,
                                                                                vocab_size), layout.primes, flat)]}
        self.multipliers = torch.tensor([l["multipliers"] for l in self.ref_layout["layers"]])
        self.offsets = torch.tensor([l["offsets"] for l in self.ref_layout["layers"]])

    def forward(self, input_ids, forward_batch):
        """One extend forward: each request's run of extend_seq_lens continues from its token-table row."""
        ref = __import__("_ref").ref
        table = forward_batch.ngram_embedding_info.token_table
        lens = [int(x) for x in forward_batch.extend_seq_lens.tolist()]
        reqs = [int(x) for x in forward_batch.req_pool_indices.tolist()]
        if any(n < 0 for n in lens):
            raise ValueError(f"stand-in EngramHasher: extend_seq_lens {lens}")

        def compressed(i):
            return -1 if i >= MM_PAD_SHIFT_VALUE else i

        ids = [compressed(int(i)) for i in input_ids]
        lay = self.ref_layout
        out = [[[0] * ((lay["max_ngram"] - 1) * lay["heads"])] * len(lay["layers"]) for _ in ids]
        at = 0
        for req, n in zip(reqs, lens):
            if n and at < len(ids):
                start = int(forward_batch.positions[at])
                row = table[req].tolist()
                history = [compressed(i) for i in row[max(0, start - self.max_ngram_size + 1):start]]
                rows, _ = ref.hash_rows(self.ref_layout, history, start, ids[at:at + n])
                out[at:at + n] = [r.tolist() if hasattr(r, "tolist") else r for r in rows]
            at += n
        return torch.tensor(out[:len(ids)], dtype=torch.int64)


class EngramEmbedding(nn.Module):
    def forward(self, indices, forward_batch=None):
        ref = __import__("_ref").ref
        codes, scales = self.weight.view(torch.uint8).numpy(), self.scale.view(torch.uint8).numpy()
        rows = [ref.decode_row(codes[i], scales[i]).astype("int16") for i in indices.reshape(-1).tolist()]
        return torch.tensor(rows).view(torch.bfloat16).reshape(*indices.shape, self.weight.shape[1])


def engram_gate(x, kv, q_weight, k_weight, eps, clamp_value):
    ref = __import__("_ref").ref
    t, hc, dim = x.shape
    out = torch.zeros(x.shape, dtype=torch.float32)
    for i in range(t):
        row = kv[i].float().tolist()
        for c in range(hc):
            _, vals = ref.v41_stream(x[i, c].float().tolist(), row[c * dim:(c + 1) * dim], row[hc * dim:],
                                     q_weight[c].float().tolist(), k_weight[c].float().tolist(), eps, False, 32)
            out[i, c] = torch.tensor(vals, dtype=torch.float32)
    return out.to(x.dtype)
