"""What the stand-ins delegate to: the in-tree numpy port (conformance/python/engram_numpy_port), which passes
every vector of the hash family (conform_tests). A stand-in has a port's API (names, signatures, tensor shapes)
and none of its code: it answers as the spec does, so that an adapter run on it must give OK, and an adapter
that maps the API wrongly (DEAD, the pad, the position, the history, the layout fields) fails."""
import engram_numpy_port as ref  # conformance/python, on PYTHONPATH (standin_test.py sets it)

DEAD = ref.DEAD


def v41_config(layer_ids, max_ngram, heads, base, num_embeddings=None):
    return {"profile": "v4.1", "layer_ids": list(layer_ids), "max_ngram": max_ngram, "heads": heads,
            "bases": [base] * max(max_ngram - 1, 0), "num_embeddings": None if num_embeddings is None
            else list(num_embeddings), "seed": 0, "v": None, "pad_id": 0}


def check_v41_config(cfg):
    """The §CFG checks the numpy port's parse_config makes, on the stand-in's own fields."""
    doc = {"engram_layer_ids": cfg["layer_ids"], "engram_max_ngram_size": cfg["max_ngram"],
           "engram_n_heads": cfg["heads"], "engram_vocab_size": cfg["bases"][0] if cfg["bases"] else 2,
           "engram_pad_id": 0, "engram_compressed_vocab_size": 1, "engram_head_dim": 1}
    if cfg["num_embeddings"] is not None:
        doc["engram_num_embeddings"] = cfg["num_embeddings"]
    ref.parse_config(doc, "v4.1")


def next_prime(start, seen):
    """§LAY.2 The smallest prime above `start` not in `seen` (the stand-ins' find_next_prime)."""
    candidate = start + 1
    while not ref.is_prime(candidate) or candidate in seen:
        candidate += 1
    return candidate


def multipliers_of(layer_ids, max_ngram, v):
    """§RNG.4 [layer][slot] multipliers of seed 0 (the stand-ins' compute_hash_multipliers)."""
    return [ref.multipliers(0, l, v, max_ngram) for l in layer_ids]


def v41_layout(layer_ids, max_ngram, heads, base, num_embeddings):
    """The §CFG / §LAY checks of a v4.1 configuration and its layout (primes [layer][order][head], offsets
    [layer][col]); V plays no part in them."""
    cfg = v41_config(layer_ids, max_ngram, heads, base, num_embeddings)
    check_v41_config(cfg)
    layout = ref.build_layout(cfg, 1, 0)
    return {"primes": tuple(tuple(tuple(order) for order in l["primes"]) for l in layout["layers"]),
            "offsets": [l["offsets"] for l in layout["layers"]]}
