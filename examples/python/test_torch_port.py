"""The same port in torch (CPU), where torch is installed: the shape of a kernel author's reference."""
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the torch variant of the numpy port is skipped "
                                            "(pip install torch to run it)")
import engram_conformance as engram  # noqa: E402


def torch_hash(ids, profile, vocab, pad, layers):
    x = torch.tensor(ids, dtype=torch.int64).reshape(-1)
    if bool(((x >= vocab) | (x < (-1 if profile == "v4.1" else -2**63))).any()):
        raise ValueError(f"ids: not compressed ids below {vocab}")
    t, max_ngram, heads = len(x), len(layers[0]["multipliers"]), len(layers[0]["primes"][0])
    tokens, blocked = [], torch.zeros(t, dtype=torch.bool)
    for k in range(max_ngram):
        shifted = torch.cat([torch.full((min(k, t),), pad, dtype=torch.int64), x[:max(t - k, 0)]])
        if profile == "v4.1":
            blocked = blocked | (torch.arange(t) < k) | (shifted == -1)
        tokens.append(torch.where(blocked, torch.tensor(pad, dtype=torch.int64), shifted))
    rows = torch.zeros((t, len(layers), (max_ngram - 1) * heads), dtype=torch.int64)
    for li, layer in enumerate(layers):
        for n in range(2, max_ngram + 1):
            mix = tokens[0] * layer["multipliers"][0]  # int64 products wrap, as §HASH.3 wants
            for k in range(1, n):
                mix = torch.bitwise_xor(mix, tokens[k] * layer["multipliers"][k])
            for h, p in enumerate(layer["primes"][n - 2]):
                col = (n - 2) * heads + h
                rows[:, li, col] = torch.remainder(mix, p) + layer["offsets"][col]  # floor mod
    return rows


@engram.cases("hash_v41", type="HashTest")
@engram.cases("hash_demo", type="HashTest")
def test_hash_torch(engram_case):
    g = engram_case.group
    engram_case.check(lambda c: {"rows": torch_hash(c.inputs["ids"], g["profile"], g["compressedVocabSize"],
                                                    g["compressedPad"], g["layers"])})
