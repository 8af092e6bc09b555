"""Stand-in of the pure-Python hash oracle of vLLM's tests/kernels/test_engram.py, _reference_hashes, with the
arguments conformance/ports/vllm/adapter.py passes (ids, positions, slots, request starts, block tables, dead
flags, the paged token cache, the token map, and the layout's multipliers, primes and offsets), and none of its
code: each request's compressed ids are read back from the paged cache through its block table and hashed by
the in-tree numpy port (_ref.py). CI runs the adapter on it; the real measurement needs the port's checkout."""

def _reference_hashes(ids, positions, slots, starts, tables, dead, cache, token_map, multipliers, primes, offsets):
    # (the adapter loads only this definition: everything it needs is inside it)
    ref = __import__("_ref").ref
    block = 16  # tokens per cache block: position p of a request is slot table[p // 16] * 16 + p % 16
    for token, slot, is_dead in zip(ids, slots, dead):
        if slot >= 0:
            cache[slot] = -1 if is_dead else token_map[token]  # an id outside the map: IndexError (refused)
    layers = [{"multipliers": list(m), "primes": [list(o) for o in p], "offsets": list(off)}
              for m, p, off in zip(multipliers, primes, offsets)]
    heads = len(primes[0][0]) if primes and primes[0] else 0
    # pad 0: the oracle's tests hash with pad 0 (a blocked slot reads 0); V: the token map's length
    layout = {"profile": "v4.1", "v": len(token_map), "pad": 0, "max_ngram": len(multipliers[0]), "heads": heads,
              "layers": layers}
    out = []
    for i, position in enumerate(positions):
        req = max(r for r in range(len(starts) - 1) if starts[r] <= i)
        table = tables[req]
        sequence = [cache[table[p // block] * block + p % block] for p in range(position + 1)]
        rows, _ = ref.hash_rows(layout, [], 0, sequence)
        out.append(rows[-1].tolist())
    cols = (len(multipliers[0]) - 1) * heads
    return torch.tensor(out, dtype=torch.int64).reshape(len(positions), len(multipliers), cols)


def _reference_engram_post_wkv(hidden_states, kv, q_weight, k_weight, token_mask, eps, clamp_value, kv_start):
    # (the adapter loads only this definition) hidden + gate * value per (token, stream) by the numpy port's §FUS.3
    ref = __import__("_ref").ref
    num_tokens, hc_mult, dim = hidden_states.shape
    out = torch.zeros(hidden_states.shape, dtype=torch.float32)
    for t in range(num_tokens):
        row = kv[t + kv_start].float().tolist()
        masked = token_mask is not None and not bool(token_mask[t + kv_start])
        for c in range(hc_mult):
            _, vals = ref.v41_stream(hidden_states[t, c].float().tolist(), row[c * dim:(c + 1) * dim],
                                     row[hc_mult * dim:], q_weight[c].float().tolist(), k_weight[c].float().tolist(),
                                     eps, masked, 32)
            out[t, c] = torch.tensor(vals, dtype=torch.float32)
    return out.to(hidden_states.dtype)


def _reference_lookup(weight, scale_inv, ids, start, end, block=32):
    # (the adapter loads only this definition) each row's §STO.3 decode by the numpy port; rows outside [start, end)
    # are zero, as the shard mask of the port's API gives them
    ref = __import__("_ref").ref
    codes, scales = weight.view(torch.uint8).numpy(), scale_inv.numpy()
    flat = ids.reshape(-1).tolist()
    out = torch.zeros((len(flat), weight.shape[1]), dtype=torch.int16)
    for n, i in enumerate(flat):
        if start <= i < end:
            out[n] = torch.tensor(ref.decode_row(codes[i - start], scales[i - start]).astype("int16"))
    return out.view(torch.bfloat16).reshape(*ids.shape, weight.shape[1])
