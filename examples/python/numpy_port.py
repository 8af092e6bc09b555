"""A numpy port of the Engram hash (spec/hash.md §HASH.1-§HASH.4), the kind a port author writes.

Tested against every HashTest vector by test_numpy_port.py with the engram pytest plugin.
"""
import numpy as np


def numpy_hash(ids, profile, vocab, pad, layers):
    """rows[T, layers, columns] of compressed ids; layers = the vector group's layers (multipliers, primes, offsets)."""
    x = np.asarray(ids, dtype=np.int64).reshape(-1)
    if ((x >= vocab) | (x < (-1 if profile == "v4.1" else -2**63))).any():  # §HASH.1: v4.1 ids >= -1 (DEAD)
        raise ValueError(f"ids: not compressed ids below {vocab}")
    t, max_ngram, heads = len(x), len(layers[0]["multipliers"]), len(layers[0]["primes"][0])
    tokens, blocked = [], np.zeros(t, dtype=bool)
    for k in range(max_ngram):  # §HASH.2 slot k reads the id k positions back, the pad before the start
        shifted = np.concatenate([np.full(min(k, t), pad, dtype=np.int64), x[:max(t - k, 0)]])
        if profile == "v4.1":  # a DEAD id blocks its slot and every older one
            blocked = blocked | (np.arange(t) < k) | (shifted == -1)
        tokens.append(np.where(blocked, np.int64(pad), shifted))
    rows = np.zeros((t, len(layers), (max_ngram - 1) * heads), dtype=np.int64)
    with np.errstate(over="ignore"):  # §HASH.3 products wrap modulo 2^64
        for li, layer in enumerate(layers):
            for n in range(2, max_ngram + 1):
                mix = np.bitwise_xor.reduce([tokens[k] * np.int64(layer["multipliers"][k]) for k in range(n)])
                for h, p in enumerate(layer["primes"][n - 2]):  # §HASH.4 floor mod, plus the column's offset
                    col = (n - 2) * heads + h
                    rows[:, li, col] = mix % np.int64(p) + layer["offsets"][col]
    return rows


def numpy_hash_batch(ids, lengths, profile, vocab, pad, layers):
    """The same hash for B sequences at once, the way a kernel takes a batch: ids [B, T] right-padded (any fill),
    lengths [B]; returns the rows of each sequence (rows[b][:lengths[b]]). One vectorized pass over [B, T]."""
    x = np.asarray(ids, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    b, t = x.shape
    real = np.arange(t)[None, :] < lengths[:, None]
    if (real & ((x >= vocab) | (x < (-1 if profile == "v4.1" else -2**63)))).any():
        raise ValueError(f"ids: not compressed ids below {vocab}")
    max_ngram, heads = len(layers[0]["multipliers"]), len(layers[0]["primes"][0])
    tokens, blocked = [], np.zeros((b, t), dtype=bool)
    for k in range(max_ngram):
        shifted = np.concatenate([np.full((b, min(k, t)), pad, dtype=np.int64), x[:, :max(t - k, 0)]], axis=1)
        if profile == "v4.1":
            blocked = blocked | (np.arange(t)[None, :] < k) | (shifted == -1)
        tokens.append(np.where(blocked, np.int64(pad), shifted))
    rows = np.zeros((b, t, len(layers), (max_ngram - 1) * heads), dtype=np.int64)
    with np.errstate(over="ignore"):
        for li, layer in enumerate(layers):
            for n in range(2, max_ngram + 1):
                mix = np.bitwise_xor.reduce([tokens[k] * np.int64(layer["multipliers"][k]) for k in range(n)])
                for h, p in enumerate(layer["primes"][n - 2]):
                    col = (n - 2) * heads + h
                    rows[:, :, li, col] = mix % np.int64(p) + layer["offsets"][col]
    return [rows[i, :lengths[i]] for i in range(b)]
