"""§CFG the configuration keys the hash needs, read from a config.json document (spec/config.md)."""
from .bugs import planted


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
        max1_gap = planted("upstream-max-ngram-1") and max_ngram == 1  # the official V4.1 layout code does not check
        if not isinstance(max_ngram, int) or not (2 <= max_ngram <= 64 or max1_gap):
            raise ValueError(f"engram_max_ngram_size {max_ngram}")
        zero_heads_gap = planted("upstream-zero-heads") and heads == 0  # nor does it check the heads
        if not isinstance(heads, int) or not (1 <= heads <= 4096 or zero_heads_gap):
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
        max1_gap = planted("upstream-max-ngram-1") and max_ngram == 1  # the demo's prime search loops zero times
        if not isinstance(max_ngram, int) or not (2 <= max_ngram <= 64 or max1_gap):
            raise ValueError(f"max_ngram_size {max_ngram}")
        zero_heads_gap = planted("upstream-zero-heads") and heads == 0  # the upstream demo does not check
        if not isinstance(heads, int) or not (1 <= heads <= 4096 or zero_heads_gap):
            raise ValueError(f"n_head_per_ngram {heads}")
        extra_bases_gap = planted("upstream-extra-bases") and len(d["engram_vocab_size"]) > max_ngram - 1
        if len(d["engram_vocab_size"]) != max_ngram - 1 and not extra_bases_gap:  # the demo reads [ngram - 2] only
            raise ValueError("engram_vocab_size needs one entry per order")
        if not zero_heads_gap and d["n_embed_per_ngram"] % heads:
            raise ValueError("n_embed_per_ngram not divisible by heads")
        cfg = dict(profile=profile, layer_ids=list(d["layer_ids"]), max_ngram=max_ngram, heads=heads,
                   bases=list(d["engram_vocab_size"])[:max_ngram - 1], pad_id=d["pad_id"], seed=d["seed"], num_embeddings=None, v=None)
    duplicates_gap = planted("upstream-duplicate-layers")  # the demo overwrites the layer, the V4.1 code builds it twice
    if ((len(set(cfg["layer_ids"])) != len(cfg["layer_ids"]) and not duplicates_gap) or
            any(i < 0 for i in cfg["layer_ids"]) or not cfg["layer_ids"]):
        raise ValueError("layer ids must be distinct and >= 0")
    return cfg
