"""§RNG the multipliers (numpy's own generator, spec/random.md) and §LAY the primes and offsets of a layout
(spec/layout.md)."""
import functools
import hashlib

import numpy as np

from .bugs import planted
from .config import parse_config

INT64_MAX = (1 << 63) - 1


# ----------------------------------------------------------------------------- §RNG numpy itself


def multiplier_bound(v, int32=False):
    if v < 1 and not (planted("upstream-negative-vocab") and v < 0):  # upstream: max(1, negative) = 1
        raise ValueError(f"compressed vocab size must be >= 1, got {v}")
    limit = (1 << 31) - 1 if int32 else INT64_MAX
    return max(1, (limit // v) // 2)


def multipliers(seed, layer_id, v, max_ngram):
    int32 = planted("int32-multipliers")
    if planted("upstream-layer-seed"):  # the demo: default_rng(int(seed + 10007 * layer_id)), any size, >= 0
        return [int(x) * 2 + 1 for x in np.random.default_rng(seed + 10007 * layer_id).integers(
            0, multiplier_bound(v), size=max_ngram, dtype=np.int64)]
    if seed < 0 or layer_id < 0:
        raise ValueError("seed and layer id must be >= 0")
    layer_seed = seed + 10007 * layer_id
    if layer_seed > (1 << 64) - 1:  # §RNG.4 item 2 (numpy itself would take it)
        raise ValueError(f"layer seed {layer_seed} is above 2^64 - 1")
    if planted("seed-low-32"):
        layer_seed &= 0xFFFFFFFF
    rng = np.random.default_rng(layer_seed)
    r = rng.integers(0, multiplier_bound(v, int32), size=max_ngram, dtype=np.int32 if int32 else np.int64)
    return [int(x) * 2 + 1 for x in r]


# ----------------------------------------------------------------------------- §LAY primes and layout


@functools.lru_cache(maxsize=None)  # every test rebuilds its layout: the same candidates again (--bug is fixed per process)
def is_prime(n):
    """Deterministic Miller-Rabin for n < 3.3e24 (first twelve prime bases)."""
    if n < 2:
        return False
    if planted("miller-rabin-61") and n == 61:  # vLLM's _is_prime: 61 is one of its witnesses, pow(61, d, 61) = 0
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
        if (cfg["profile"] == "v4.1" and cfg["num_embeddings"] is not None and cfg["num_embeddings"][li] != total
                and not planted("upstream-num-embeddings")  # the official V4.1 layout code never compares them
                and not (planted("num-embeddings-at-least") and cfg["num_embeddings"][li] > total)):  # NeMo: span > rows
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


def bounded_integers(seed, low, high, count):
    """§RNG.3 numpy's Generator.integers(low, high, size=count, dtype=int64) of default_rng(seed)."""
    rng = np.random.default_rng(seed)
    return [int(x) for x in rng.integers(low, high, size=count, dtype=np.int64)]
