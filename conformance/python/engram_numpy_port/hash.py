#!/usr/bin/env python3
"""A complete JSON-lines adapter (spec/conformance.md §CONF.2) for an Engram implementation in numpy.

This is what a Python/JAX/Rust port writes to be checked by `engram conform --exec "..."`: read one JSON
request per line on stdin, answer with one JSON object per line on stdout. The implementation below is a
plain numpy port of every suite, written from the spec (not from the C++ reference), numpy and the Python
standard library only (unicodedata for the token map's normalizer):

  hash family (§RNG, §LAY, §HASH):  multipliers, layout, hash_v41, hash_demo, hash_state, accumulated
  serving call shapes (§HASH.10-12): serving_v41 (every encoding of §CON.7; --segment-reset declares §HASH.12)
  token map (§TOK):                 token_map
  tables (§STO):                    fp8_decode, table_lookup, tp_shard
  fusion (§FUS):                    gate_v41, gate_demo, short_conv_demo, engram_forward

Float outputs of the fusion suites are returned as the vectors carry them: {"float64": ..., "float32": ...}
(the float64 evaluation and the float32 mirror of §FUS.8, as Python float.hex() strings), bf16 values as
their bit patterns; the runner compares them with the group's tolerance (§FUS.9). Intermediate values are
returned for the table lookups (§STO.11) and not elsewhere (they are optional, §CONF.1).

Run:  engram conform --vectors vectors --exec "python3 conformance/examples/numpy_adapter.py"
      ... --exec "python3 conformance/examples/numpy_adapter.py --claim hash_v41 --profiles v4.1"
          (a port that implements one suite of one profile: everything else is skipped)
      ... --exec "python3 conformance/examples/numpy_adapter.py --claim table_lookup --unsupported FloatLookupTest"
          (a claimed suite with one test type answered "unsupported": skipped, not failed)

`--bug NAME` plants a known porting bug (spec/conformance.md §CONF.4, spec/vectors.md §VEC.12) so that the runner's
flagged tests can be seen to catch it: each fails exactly the tests that carry its flag (the generator sets
the flag where a C++ mutant of the reference, vectors/mutants.cc, changes the outcome).
  no-dead-blocking       pad a DEAD slot but keep reading older slots (no cumulative blocking)        NoDeadBlocking
  dead-as-id             hash DEAD (-1) as an ordinary id: no pad, no blocking                        DeadAsOrdinaryId
  truncated-mod          C-style % (sign of the dividend) instead of floor-mod on negative mixes      FloorMod
  int32-multipliers      draw multipliers with int32 bounds (MaxText)                                 Int32Multipliers
  sign                   v4.1 gate with torch.sign() instead of copysign: 0.5 at dot = +-0            SignedZeroCopysign
  where-negative         v4.1 gate sigmoid(where(dot < 0, -root, root)): -0 taken as +0               WhereNegativeGate
  plus-eps               both gates: sqrt(|dot| + 1e-6) instead of sqrt(max(|dot|, 1e-6))             PlusEpsClamp
  skip-masked            v4.1: masked positions skipped (out = x), 0 * inf / NaN never reaches out    MaskedNonFinite
  wkv-block128           fp8 wkv weight scale [n // 128][k // 128] (V4's blocks) of the 32x32 tensor  Fp8Blocks32
  copysign               demo gate with copysign instead of torch.sign(): 0.5 +- 2.5e-4 at g = +-0    SignZeroHalf
  rms-norm-eps           demo gate's key/query RMSNorms with eps 1e-5 instead of 2^-23                RmsNormEps
  tap-order              ShortConv taps time-reversed (tap j reads j dilations back)                  TapOrder
  conv-norm-eps          ShortConv's RMSNorm with torch's default eps 2^-23 instead of 1e-5           ConvNormEps
  conv-state-restart     carried ShortConv: every call starts from a zero state (no conv_state)       ConvStateRestart
  conv-rollback-kept     carried ShortConv: a rollback leaves the rejected steps in the state         ConvRollbackKept
  no-signed-root         demo gate sigmoid(g): no clamp, no signed square root (tile-ai/TileOPs)      GateNoSignedRoot
  gate-norm-eps-zero     demo gate's key/query RMSNorms with eps 0 (a llama.cpp port)                 GateNormEpsZero
  mask-ignored           v4.1: the gate is not zeroed at masked positions (sglang's Engram.forward)   MaskedGateNotZeroed
  e8m0-shift             E8M0 scale as float32 bits (s << 23): 0x00 -> 0.0, 0xFF -> inf               E8M0BitShift
  flush-to-zero          row decode with FTZ + DAZ: scale 2^-127 read as 0, subnormal products 0      FlushToZero
  block128               row decode with V4's 128-wide scale blocks: element j uses scale j // 128    Block128
  nan-decoded-finite     no NaN decode: E4M3 0x7F/0xFF as +-480, E8M0 0xFF as 2^128 (lucebox)        NaNDecodedFinite
  nan-row-refused        a row holding an E4M3 0x7F/0xFF or a scale 0xFF is refused (lucebox)         NaNRowRefused
  e8m0-pow-inf           E8M0 scale as float32 pow(2, s - 127): 0xFF -> inf, not NaN (sglang NPU)     E8M0PowInf
  keep-neg-zero          row-sharded all_reduce keeps the owner's bits (-0 stays -0)                  NegZeroAllReduce
  local-as-global        a TP rank reads its local row id (id - begin) as a global row                TpLocalAsGlobal
  even-shards-only       row sharding refuses rows % world != 0 (sglang's EngramEmbedding assert)     ShardsMustDivide
  python-wrapper-decode  token texts through transformers' clean_up_tokenization                      PythonWrapperDecode
  added-token-content    an added token's text is its content as is (no byte table)                   AddedTokenByteLevel
  sentinel-less          normalizer without the U+E000 sentinel steps (" " strips to "")              SentinelLessNormalizer
  context-lowercase      whole-text str.lower() (word-final sigma) instead of per code point          ContextLowercase
  upstream-duplicate-layers duplicate layer ids accepted (demo: overwrites; official V4.1: builds twice) UpstreamDuplicateLayerIds
  upstream-zero-heads    zero heads per order accepted (demo and official V4.1: empty primes)          UpstreamZeroHeads
  upstream-max-ngram-1   max n-gram size 1 accepted (the official layout code, the upstream demo)     UpstreamMaxNgramOne
  upstream-num-embeddings v4.1: engram_num_embeddings never checked (the official layout code)         UpstreamNumEmbeddingsUnchecked
  upstream-negative-vocab V < 0 gives multipliers of 1 (demo and official V4.1: max(1, bound))        UpstreamNegativeVocab
  upstream-extra-bases   demo: more engram_vocab_size entries than orders accepted, extras unread      UpstreamExtraBases
  num-embeddings-at-least v4.1: engram_num_embeddings refused only below the sums (NeMo Automodel)    NumEmbeddingsAtLeast
  negative-pad-wraps     a pad id in [-T, -1] reads map[T + pad] (official V4.1 / demo array indexing) NegativePadWraps
  row-id-uint32          v4.1: row ids kept as uint32: a row id >= 2^32 comes out mod 2^32 (lucebox)  RowIdUint32
  row-id-int32           v4.1: row ids kept as int32: a row id >= 2^31 is refused (vLLM's oracle)     RowIdInt32
  rollback-dead          v4.1 rollback keeps only max-1 ids: overwritten slots read DEAD              RollbackReadsDead
  raw-beyond-dead        v4.1: a raw id >= T becomes DEAD (a llama.cpp fork) instead of a refusal     RawIdBeyondTokenizerDead
  raw-outside-pad        v4.1: a raw id outside [0, T), -1 included, becomes the pad (lucebox)       RawIdOutsideTokenizerPad
  official-indexing      v4.1: token_map[raw] with torch indexing (-1 -> map[T-1]), then the mask     OfficialTorchIndexing
  raw-clamp              v4.1: raw ids clamped into [0, T-1] before the map, then the mask (sglang)   RawIdClamped
  negative-to-pad        demo-v1: a negative id is hashed as the pad (a llama.cpp port)               NegativeIdToPad
  upstream-layer-seed    demo: any seed + 10007 * layer_id >= 0 accepted (numpy takes any size)        UpstreamLayerSeedUnchecked
  miller-rabin-61        the prime test declares 61 composite (vLLM's _is_prime: 61 is its own witness) MillerRabinWitness61
  non-finite-activation  fp8 act_quant takes inf / NaN (the official CPU kernel): every kv NaN              NonFiniteActivationAccepted
  row-outside-zero       v4.1 lookup: a row id outside the table gives +0 (ParallelEngramEmbedding's mask) RowOutsideTableZeroed
  hf-loader-unchecked    tokenizer.json read as the Hugging Face loader reads it (no id / decoder checks)  HfLoaderUnchecked
  mask-broadcast         v4.1: a mask of one entry is broadcast over the ids (torch.where)               OfficialMaskBroadcast
  cross-request-leak     a packed call's windows bounded by the buffer, not by their request           CrossRequestLeak
  restart-each-call      every call hashes its requests from a fresh state (no position, no history)  RestartEachCall
  padding-writes-state   the padding slots consumed by the last request after its own                 PaddingWritesState
  rejected-drafts-kept   every verified draft kept in the state, accepted or not                      RejectedDraftsKept
  mask-not-applied-to-history  a masked id is DEAD for its own window only (ATOM's build_history)     MaskNotAppliedToHistory
Bugs that the random cases (--random, §CONF.7) find, and every committed vector missed when they were planted
(lazy-import and position-int32 fail the hash_state tests flagged MidSequenceStart now):
  ngram-cap-4            a fixed 4-slot window: orders above 4 read pad beyond the 4th slot
  heads-cap-8            8 head slots per order: head h >= 8 reuses head h - 8's prime and offset
  seed-low-32            the layer seed kept in 32 bits (seed + 10007 * layer_id mod 2^32)
  rollback-ring-short    a history ring one id short: rollback by the full capacity refused
  lazy-import            an imported history is merged on the first append: no ids in, no history out
  position-int32         an imported position kept in 32 bits (wraps from 2^31 on)
The no-leak control of §HASH.10 (every valid serving_v41 test fails it; no flag):
  naive-flatten          a packed call's request slots hashed as one sequence after request 0's state
`--variant NAME`: a choice the spec allows, or a reading of older docs that the vectors now pin (not bugs of a
catalogued port; conform_tests runs each):
  rollback-window-capacity  refuses every rollback by more than rollbackCapacity (§HASH.6 allows it: a policy)
  handoff-position-from     imports each segment's history at position `from` (an index into ids), not at
                            historyIn.position (the old guide's "historyIn.position = from")
  fork-refuses-existing     refuses a fork onto a name that exists (§VEC.7: the fork replaces that sequence)
  bf16-gemm-flush           the bf16 wkv GEMM with DAZ / FTZ as oneDNN's AVX512-BF16 kernel (§FUS.9 allows it)
  bf16-gemm-flush-min-normal  the same, flushing the smallest normal 2^-126 too (§FUS.9 forbids it)
  fp8-gemm-flush            the fp8 wkv GEMM's float32 operations under FTZ / DAZ (§FUS.9 forbids it)
"""
import argparse
import bisect
import functools
import hashlib
import json
import math
import re
import struct
import sys
import unicodedata

import numpy as np

DEAD = -1
INT64_MAX = (1 << 63) - 1
SUITES = ["multipliers", "layout", "hash_v41", "hash_demo", "hash_state", "accumulated", "token_map", "fp8_decode",
          "table_lookup", "tp_shard", "gate_v41", "gate_demo", "short_conv_demo", "engram_forward", "serving_v41"]
# --bug NAME -> the vector flag (a KNOWN_DIVERGENCE note) whose tests a port with that bug fails, exactly.
# Every KNOWN_DIVERGENCE note names its planted bug ("--bug NAME"); conform_tests (PlantedBug) runs each.
BUGS = {
    "no-dead-blocking": "NoDeadBlocking",
    "dead-as-id": "DeadAsOrdinaryId",
    "truncated-mod": "FloorMod",
    "int32-multipliers": "Int32Multipliers",
    "sign": "SignedZeroCopysign",
    "where-negative": "WhereNegativeGate",
    "plus-eps": "PlusEpsClamp",
    "skip-masked": "MaskedNonFinite",
    "wkv-block128": "Fp8Blocks32",
    "copysign": "SignZeroHalf",
    "rms-norm-eps": "RmsNormEps",
    "tap-order": "TapOrder",
    "conv-norm-eps": "ConvNormEps",
    "conv-state-restart": "ConvStateRestart",
    "conv-rollback-kept": "ConvRollbackKept",
    "no-signed-root": "GateNoSignedRoot",
    "gate-norm-eps-zero": "GateNormEpsZero",
    "mask-ignored": "MaskedGateNotZeroed",
    "e8m0-pow-inf": "E8M0PowInf",
    "raw-clamp": "RawIdClamped",
    "negative-to-pad": "NegativeIdToPad",
    "e8m0-shift": "E8M0BitShift",
    "nan-decoded-finite": "NaNDecodedFinite",
    "nan-row-refused": "NaNRowRefused",
    "flush-to-zero": "FlushToZero",
    "block128": "Block128",
    "keep-neg-zero": "NegZeroAllReduce",
    "local-as-global": "TpLocalAsGlobal",
    "even-shards-only": "ShardsMustDivide",
    "python-wrapper-decode": "PythonWrapperDecode",
    "added-token-content": "AddedTokenByteLevel",
    "sentinel-less": "SentinelLessNormalizer",
    "context-lowercase": "ContextLowercase",
    "upstream-duplicate-layers": "UpstreamDuplicateLayerIds",
    "upstream-zero-heads": "UpstreamZeroHeads",
    "upstream-max-ngram-1": "UpstreamMaxNgramOne",
    "upstream-num-embeddings": "UpstreamNumEmbeddingsUnchecked",
    "upstream-negative-vocab": "UpstreamNegativeVocab",
    "upstream-extra-bases": "UpstreamExtraBases",
    "num-embeddings-at-least": "NumEmbeddingsAtLeast",
    "negative-pad-wraps": "NegativePadWraps",
    "row-id-uint32": "RowIdUint32",
    "row-id-int32": "RowIdInt32",
    "rollback-dead": "RollbackReadsDead",
    "raw-beyond-dead": "RawIdBeyondTokenizerDead",
    "raw-outside-pad": "RawIdOutsideTokenizerPad",
    "official-indexing": "OfficialTorchIndexing",
    "miller-rabin-61": "MillerRabinWitness61",
    "upstream-layer-seed": "UpstreamLayerSeedUnchecked",
    "non-finite-activation": "NonFiniteActivationAccepted",
    "row-outside-zero": "RowOutsideTableZeroed",
    "hf-loader-unchecked": "HfLoaderUnchecked",
    "mask-broadcast": "OfficialMaskBroadcast",
    "cross-request-leak": "CrossRequestLeak",
    "restart-each-call": "RestartEachCall",
    "padding-writes-state": "PaddingWritesState",
    "rejected-drafts-kept": "RejectedDraftsKept",
    "mask-not-applied-to-history": "MaskNotAppliedToHistory",
}
# --bug NAME for bugs that no committed vector catches (each passes every fixed vector: conform_tests
# RandomConformance shows it), found by the random cases instead (spec/conformance.md §CONF.7).
RANDOM_ONLY_BUGS = {
    "ngram-cap-4": "a fixed 4-slot window: n-gram orders above 4 read pad beyond the 4th slot",
    "heads-cap-8": "8 head slots per order: head h >= 8 reuses head h - 8's prime and offset",
    "seed-low-32": "the layer seed kept in 32 bits: seed + 10007 * layer_id taken mod 2^32",
    "rollback-ring-short": "a history ring one id short (max - 2 + capacity): rollback by the full capacity refused",
    "lazy-import": "an imported history is held apart and merged on the first append: an instance given no ids "
                   "exports its position with an empty history",
    "position-int32": "an imported position kept in a 32-bit int: a sequence past 2^31 ids resumes at the wrapped position",
}
# --bug NAME for the no-leak control of spec/hash.md §HASH.10: every valid serving_v41 test fails it (a catalogue
# flag would mark every valid test); conform_tests (ServingControl) checks exactly that.
CONTROL_BUGS = {
    "naive-flatten": "a packed call's request slots hashed as one sequence continuing request 0's state",
}
# --variant NAME -> what the variant does (see the docstring).
VARIANTS = {
    "rollback-window-capacity": "a rollback window of exactly rollbackCapacity ids: rollback by more refused",
    "handoff-position-from": "a segment's history imported at position `from` (the index into ids)",
    "fork-refuses-existing": "a fork onto a name that exists is refused",
    "bf16-gemm-flush": "the bf16 wkv GEMM as oneDNN's AVX512-BF16 kernel: DAZ inputs, FTZ on every FMA and the cast",
    "bf16-gemm-flush-min-normal": "as bf16-gemm-flush, but flushing 2^-126 (the smallest normal) too",
    "fp8-gemm-flush": "the fp8 wkv GEMM's float32 operations under FTZ + DAZ",
}
BUG = None
VARIANT = None
CLAIMED_SUITES = SUITES  # --claim: what the handshake claims (a port claims what it implements)
CLAIMED_PROFILES = ["v4.1", "demo-v1"]  # --profiles
UNSUPPORTED_TYPES = set()  # --unsupported TYPE: test types answered "unsupported" (skipped, not failed)
CONTRACT = None  # --contract FILE: the hash contract (spec §CON) of the model this port serves


# ----------------------------------------------------------------------------- §RNG numpy itself


def multiplier_bound(v, int32=False):
    if v < 1 and not (BUG == "upstream-negative-vocab" and v < 0):  # upstream: max(1, negative) = 1
        raise ValueError(f"compressed vocab size must be >= 1, got {v}")
    limit = (1 << 31) - 1 if int32 else INT64_MAX
    return max(1, (limit // v) // 2)


def multipliers(seed, layer_id, v, max_ngram):
    int32 = BUG == "int32-multipliers"
    if BUG == "upstream-layer-seed":  # the demo: default_rng(int(seed + 10007 * layer_id)), any size, >= 0
        return [int(x) * 2 + 1 for x in np.random.default_rng(seed + 10007 * layer_id).integers(
            0, multiplier_bound(v), size=max_ngram, dtype=np.int64)]
    if seed < 0 or layer_id < 0:
        raise ValueError("seed and layer id must be >= 0")
    layer_seed = seed + 10007 * layer_id
    if layer_seed > (1 << 64) - 1:  # §RNG.4 item 2 (numpy itself would take it)
        raise ValueError(f"layer seed {layer_seed} is above 2^64 - 1")
    if BUG == "seed-low-32":
        layer_seed &= 0xFFFFFFFF
    rng = np.random.default_rng(layer_seed)
    r = rng.integers(0, multiplier_bound(v, int32), size=max_ngram, dtype=np.int32 if int32 else np.int64)
    return [int(x) * 2 + 1 for x in r]


# ----------------------------------------------------------------------------- §CFG configuration


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
        max1_gap = BUG == "upstream-max-ngram-1" and max_ngram == 1  # the official V4.1 layout code does not check
        if not isinstance(max_ngram, int) or not (2 <= max_ngram <= 64 or max1_gap):
            raise ValueError(f"engram_max_ngram_size {max_ngram}")
        zero_heads_gap = BUG == "upstream-zero-heads" and heads == 0  # nor does it check the heads
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
        max1_gap = BUG == "upstream-max-ngram-1" and max_ngram == 1  # the demo's prime search loops zero times
        if not isinstance(max_ngram, int) or not (2 <= max_ngram <= 64 or max1_gap):
            raise ValueError(f"max_ngram_size {max_ngram}")
        zero_heads_gap = BUG == "upstream-zero-heads" and heads == 0  # the upstream demo does not check
        if not isinstance(heads, int) or not (1 <= heads <= 4096 or zero_heads_gap):
            raise ValueError(f"n_head_per_ngram {heads}")
        extra_bases_gap = BUG == "upstream-extra-bases" and len(d["engram_vocab_size"]) > max_ngram - 1
        if len(d["engram_vocab_size"]) != max_ngram - 1 and not extra_bases_gap:  # the demo reads [ngram - 2] only
            raise ValueError("engram_vocab_size needs one entry per order")
        if not zero_heads_gap and d["n_embed_per_ngram"] % heads:
            raise ValueError("n_embed_per_ngram not divisible by heads")
        cfg = dict(profile=profile, layer_ids=list(d["layer_ids"]), max_ngram=max_ngram, heads=heads,
                   bases=list(d["engram_vocab_size"])[:max_ngram - 1], pad_id=d["pad_id"], seed=d["seed"], num_embeddings=None, v=None)
    duplicates_gap = BUG == "upstream-duplicate-layers"  # the demo overwrites the layer, the V4.1 code builds it twice
    if ((len(set(cfg["layer_ids"])) != len(cfg["layer_ids"]) and not duplicates_gap) or
            any(i < 0 for i in cfg["layer_ids"]) or not cfg["layer_ids"]):
        raise ValueError("layer ids must be distinct and >= 0")
    return cfg


# ----------------------------------------------------------------------------- §LAY primes and layout


@functools.lru_cache(maxsize=None)  # every test rebuilds its layout: the same candidates again (--bug is fixed per process)
def is_prime(n):
    """Deterministic Miller-Rabin for n < 3.3e24 (first twelve prime bases)."""
    if n < 2:
        return False
    if BUG == "miller-rabin-61" and n == 61:  # vLLM's _is_prime: 61 is one of its witnesses, pow(61, d, 61) = 0
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
                and BUG != "upstream-num-embeddings"  # the official V4.1 layout code never compares them
                and not (BUG == "num-embeddings-at-least" and cfg["num_embeddings"][li] > total)):  # NeMo: span > rows
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


# ----------------------------------------------------------------------------- §HASH


def check_ids(layout, ids):
    for i, x in enumerate(ids):
        if x >= layout["v"] or (layout["profile"] == "v4.1" and x < 0 and x != DEAD):
            raise ValueError(f"position {i}: id {x} is not a compressed id")


def hash_rows(layout, history, position, ids):
    """Rows [len(ids), layers, cols] for `ids` continuing a sequence at `position` with `history`."""
    check_ids(layout, ids)
    w = layout["max_ngram"]
    seen = np.asarray(list(history) + list(ids), dtype=np.int64)
    first = len(history)
    n = len(ids)
    pos = position + np.arange(n, dtype=np.int64)
    pad = np.int64(layout["pad"])
    tokens, blocked = [], np.zeros(n, dtype=bool)
    for s in range(w):
        before = pos < s
        idx = np.clip(first + np.arange(n) - s, 0, None)
        x = np.where(before, pad, seen[idx] if len(seen) else pad)
        if layout["profile"] == "v4.1":
            if BUG == "no-dead-blocking":
                blocked = before | (x == DEAD)
            elif BUG == "dead-as-id":
                blocked = before  # -1 is multiplied in like any id
            else:
                blocked = blocked | before | (x == DEAD)
        else:
            blocked = before
            if BUG == "negative-to-pad":
                x = np.where(x < 0, pad, x)  # a llama.cpp port: a negative id is hashed as the pad
        tokens.append(np.where(blocked, pad, x))
        if BUG == "ngram-cap-4" and s >= 4:
            tokens[s] = np.full(n, pad, dtype=np.int64)
    cols = (w - 1) * layout["heads"]
    out = np.zeros((n, len(layout["layers"]), cols), dtype=np.int64)
    with np.errstate(over="ignore"):
        for li, l in enumerate(layout["layers"]):
            m = np.asarray(l["multipliers"], dtype=np.int64)
            rolling = tokens[0] * m[0]
            col = 0
            for k in range(1, w):
                rolling = np.bitwise_xor(rolling, tokens[k] * m[k])
                for hi, p in enumerate(l["primes"][k - 1]):
                    offset = l["offsets"][col]
                    if BUG == "heads-cap-8" and hi >= 8:
                        p, offset = l["primes"][k - 1][hi % 8], l["offsets"][col - hi + hi % 8]
                    if BUG == "truncated-mod":
                        res = np.fmod(rolling, np.int64(p))
                    else:
                        res = np.mod(rolling, np.int64(p))
                    out[:, li, col] = res + offset
                    col += 1
    if BUG == "row-id-uint32" and layout["profile"] == "v4.1":
        out &= np.int64(0xFFFFFFFF)  # (uint32_t) (h % prime + offset): the low 32 bits of each row id
    if BUG == "row-id-int32" and layout["profile"] == "v4.1" and out.size and out.max() >= (1 << 31):
        # vLLM's oracle returns torch.tensor(rows, dtype=torch.int32), which raises on such a value
        raise ValueError(f"row id {int(out.max())} does not fit int32")
    keep = w - 1
    new_history = list(seen[-keep:]) if keep > 0 and len(seen) else []
    new_history = [int(x) for x in new_history][-min(position + n, keep):] if position + n > 0 else []
    return out, new_history


class State:
    def __init__(self, layout, capacity=0):
        self.layout, self.capacity = layout, capacity
        self.position, self.recent = 0, []

    def append(self, ids):
        if ids and getattr(self, "pending", None) is not None:  # lazy-import: the history arrives with the first id
            self.recent, self.pending = self.pending + self.recent, None
        w = self.layout["max_ngram"] - 1
        hist = self.recent[-w:] if w else []
        hist = hist[-min(self.position, w):] if self.position else []
        rows, _ = hash_rows(self.layout, hist, self.position, ids)
        keep = w + self.capacity - (1 if BUG == "rollback-ring-short" and self.capacity > 0 else 0)
        self.recent = (self.recent + list(ids))[-keep:] if keep else []
        self.position += len(ids)
        return rows.tolist()

    def rollback(self, k):
        w = self.layout["max_ngram"] - 1
        if k > self.position:
            raise ValueError("rollback past the start")
        if VARIANT == "rollback-window-capacity" and k > self.capacity:
            raise ValueError(f"rollback by {k} exceeds the rollback capacity {self.capacity}")
        if BUG == "rollback-dead" and self.layout["profile"] == "v4.1":
            # A ring of the last w ids only: the removed ids had overwritten older slots, which now read DEAD.
            ring = self.recent[-w:] if w else []
            kept = ring[:max(0, len(ring) - k)]
            need = min(self.position - k, w)
            self.recent = [DEAD] * (need - len(kept)) + kept
            self.position -= k
            return
        need = min(self.position - k, w)
        if len(self.recent) < k + need:
            raise ValueError("rollback beyond the retained history")
        self.recent = self.recent[:len(self.recent) - k]
        self.position -= k

    def history(self):
        w = self.layout["max_ngram"] - 1
        n = min(self.position, w)
        return [int(x) for x in self.recent[len(self.recent) - n:]] if n else []

    def import_(self, h, fp, expected_fp):
        if fp != expected_fp:
            raise ValueError("history from another layout")
        w = self.layout["max_ngram"] - 1
        if h["position"] < 0 or len(h["history"]) != min(h["position"], w):
            raise ValueError("history does not fit its position")
        check_ids(self.layout, h["history"])
        self.position, self.recent = h["position"], list(h["history"])
        if BUG == "position-int32":
            self.position = (self.position + (1 << 31)) % (1 << 32) - (1 << 31)
        if BUG == "lazy-import":
            self.pending, self.recent = self.recent, []


def stream_id(v41, v, seed, i):
    g = 0x9E3779B97F4A7C15
    z = (seed + i * g + g) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    w = z ^ (z >> 31)
    if v41 and (w >> 58) == 0:
        return DEAD
    if not v41 and (w >> 58) == 1:
        return -1 - ((w >> 8) % 1000)
    return w % v


def stream_ids(v41, v, seed, start, n):
    """Vectorised stream_id over positions start .. start+n-1 (uint64 arithmetic wraps like the spec's)."""
    g = np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        i = np.arange(start, start + n, dtype=np.uint64)
        z = np.uint64(seed) + i * g + g
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        w = z ^ (z >> np.uint64(31))
    ids = (w % np.uint64(v)).astype(np.int64)
    top = w >> np.uint64(58)
    if v41:
        ids[top == 0] = DEAD
    else:
        neg = top == 1
        ids[neg] = -1 - ((w[neg] >> np.uint64(8)) % np.uint64(1000)).astype(np.int64)
    return ids


# ----------------------------------------------------------------------------- §STO FP8 rows, tables, sharding

M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
BF16_NAN = 0x7FC0


def e4m3_value(code):
    """§STO.1 one E4M3fn code -> its exact value (a Python float); NaN for 0x7F / 0xFF."""
    s, e, m = code >> 7, (code >> 3) & 0xF, code & 0x7
    if code & 0x7F == 0x7F and BUG != "nan-decoded-finite":  # the bug: (8 + 7) * 2^(15 - 10) = 480
        return float("nan")
    v = m * 2.0 ** -9 if e == 0 else (8 + m) * 2.0 ** (e - 10)
    return -v if s else v


def e8m0_value(scale):
    """§STO.2 2^(s-127), NaN for 0xFF (as a Python float: exact, 2^-127 included).

    --bug e8m0-shift: the shortcut float32(bits = s << 23): 0x00 -> 0.0, 0xFF -> inf.
    --bug e8m0-pow-inf: float32 pow(2, s - 127) (sglang's NPU decode): 0xFF -> inf, the others exact.
    """
    if BUG == "e8m0-shift":
        return float(np.array([scale << 23], dtype=np.uint32).view(np.float32)[0])
    if BUG == "nan-decoded-finite" and scale == 0xFF:
        return float("inf")  # 2^128 as a float32 (ldexp(1, 128)), beyond its range
    if BUG == "e8m0-pow-inf" and scale == 0xFF:
        return float("inf")  # 2^128 overflows float32: torch.pow(2.0, 128.0) in float32 is +inf
    return float("nan") if scale == 0xFF else 2.0 ** (scale - 127)


E4M3_F32 = np.array([e4m3_value(c) for c in range(256)], dtype=np.float32)  # exact in float32
E4M3_FINITE_POSITIVE = [e4m3_value(c) for c in range(0x7F)]  # codes 0x00-0x7E, increasing (no --bug touches them)


@functools.cache  # once per run: the --bug is chosen before the first request
def e8m0_f32():
    return np.array([e8m0_value(s) for s in range(256)], dtype=np.float32)  # exact (2^-127 is a subnormal)


@functools.cache
def e4m3_values():
    """e4m3_value of every code, as Python floats (under this run's --bug)."""
    return [e4m3_value(c) for c in range(256)]


def f32_hex(x):
    """8 hex digits of a float32's bits; every NaN as 7fc00000."""
    x = np.float32(x)
    if np.isnan(x):
        return "7fc00000"
    return "%08x" % int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def to_bf16(f32):
    """§STO.3 float32 array -> bf16 bits, round to nearest even (overflow to inf), every NaN 0x7FC0."""
    f32 = np.asarray(f32, dtype=np.float32)
    u = f32.view(np.uint32).astype(np.uint64)
    b = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f32), np.uint16(BF16_NAN), b).astype(np.uint16)


def bf16_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint32) << 16).astype(np.uint32).view(np.float32)


def bf16_hex(bits):
    return np.asarray(bits).ravel().astype(">u2").tobytes().hex()  # 4 hex digits per value, most significant first


def flush_subnormals(x):
    """float32 subnormals -> a zero of the same sign (what FTZ / DAZ hardware does); NaN stays NaN."""
    return np.where(np.abs(x) < np.float32(2.0 ** -126), np.copysign(np.float32(0), x), x).astype(np.float32)


def decode_row(codes, scales):
    """§STO.3 codes (uint8 [d]) with one scale per 32 codes -> bf16 bits [d]: float32 product, one rounding.

    --bug block128: V4's 128-wide blocks, element j reads scale j // 128 (of the row's d / 32).
    --bug flush-to-zero: the float32 multiply under FTZ + DAZ: operands and product flushed.
    """
    codes = np.asarray(codes, dtype=np.uint8)
    per_element = np.repeat(np.asarray(scales, dtype=np.uint8), 32)
    if per_element.size != codes.size:
        raise ValueError(f"a row of {codes.size} codes needs {codes.size // 32} scales, got {len(scales)}")
    if BUG == "block128":
        per_element = np.asarray(scales, dtype=np.uint8)[np.arange(codes.size) // 128]
    nan_in = ((codes & 0x7F) == 0x7F) | (per_element == 0xFF)
    if BUG == "nan-row-refused" and nan_in.any():
        raise ValueError("the row holds an E4M3 code 0x7F/0xFF or an E8M0 scale 0xFF (refused, as decode_row does)")
    a, b = E4M3_F32[codes], e8m0_f32()[per_element]
    with np.errstate(over="ignore", invalid="ignore"):
        if BUG == "flush-to-zero":
            return to_bf16(flush_subnormals(flush_subnormals(a) * flush_subnormals(b)))
        if BUG == "nan-decoded-finite":  # ldexp(v, s - 127): +-480 for the NaN codes, 2^128 (0 * it = 0) for 0xFF
            finite = np.where((codes & 0x7F) == 0x7F, np.where(codes & 0x80, -480.0, 480.0), a).astype(np.float32)
            scaled = np.ldexp(finite, per_element.astype(np.int32) - 127).astype(np.float32)
            return to_bf16(np.where(nan_in, scaled, a * b))
        return to_bf16(a * b)


def mix64(z):
    """§STO.5 the SplitMix64 finaliser on uint64 arrays (wrapping)."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def words(seed, rows, ks):
    """§STO.5 word(seed, r, k) = mix((seed ^ (r * gamma)) + (k + 1) * gamma) for rows [n] x ks [m] -> [n, m]."""
    r = np.asarray(rows, dtype=np.int64).astype(np.uint64)[:, None]
    k = np.asarray(ks, dtype=np.uint64)[None, :]
    with np.errstate(over="ignore"):
        base = np.uint64(seed) ^ (r * np.uint64(GAMMA))
        return mix64(base + (k + np.uint64(1)) * np.uint64(GAMMA))


def run_bytes(seed, rows, first_word, n):
    """§STO.5 bytes 0 .. n-1 of the run of words starting at `first_word`, least significant byte first."""
    w = words(seed, rows, np.arange(first_word, first_word + (n + 7) // 8))
    return w.astype("<u8").view(np.uint8).reshape(len(rows), -1)[:, :n]


class SyntheticTable:
    """§STO.5 rows of (seed, rows, head_dim, edge) computed on demand: a real-size table never in memory."""

    def __init__(self, seed, rows, head_dim, edge=False):
        if rows < 1 or head_dim < 32 or head_dim % 32:
            raise ValueError(f"synthetic table: rows {rows}, headDim {head_dim}")
        self.seed, self.rows, self.d, self.edge = int(seed), int(rows), int(head_dim), bool(edge)

    def check(self, ids):
        if BUG == "row-outside-zero":
            return  # the official lookup's mask: an id outside the table is read as a row of +0 (lookup)
        for i, x in enumerate(ids):
            if not 0 <= x < self.rows:
                raise ValueError(f"rowIds[{i}] = {x} is outside [0, {self.rows})")

    def edge_rows(self, ids):
        if not self.edge:
            return np.zeros(len(ids), dtype=bool)
        return words(self.seed, ids, [0])[:, 0] < np.uint64(1 << 61)

    def raw(self, ids):
        """(codes [n, d], scales [n, d/32]) of the rows."""
        self.check(ids)
        n_s = self.d // 32
        scales = run_bytes(self.seed, ids, 1, n_s)
        codes = run_bytes(self.seed, ids, 1 + (n_s + 7) // 8, self.d)
        edge = self.edge_rows(ids)[:, None]
        scales = np.where(edge, scales, 110 + scales % 21).astype(np.uint8)
        codes = np.where(edge | ((codes & 0x7F) != 0x7F), codes, codes ^ 1).astype(np.uint8)
        return codes, scales

    def lookup(self, ids):
        """§STO.6 bf16 rows [n, d].

        --bug row-outside-zero: ParallelEngramEmbedding's mask: an id outside [0, rows) gives a row of +0.
        """
        if len(ids) == 0:
            return np.zeros((0, self.d), np.uint16)
        codes, scales = self.raw(ids)
        rows = np.stack([decode_row(c, s) for c, s in zip(codes, scales)])
        outside = np.array([not 0 <= x < self.rows for x in ids])
        return np.where(outside[:, None], np.uint16(0), rows).astype(np.uint16)


def table_of(t):
    if t.get("layout") != "synthetic":
        raise ValueError(f"table layout {t.get('layout')!r} is not 'synthetic'")
    return SyntheticTable(t["seed"], t["rows"], t["headDim"], t.get("edgeRows", False))


def float_table_rows(seed, rows, width, ids):
    """§STO.10 value(r, j) = (floor(word(seed, r, j) / 2^40) - 2^23) * 2^-23, float32 rows."""
    for i, x in enumerate(ids):
        if not 0 <= x < rows:
            raise ValueError(f"rowIds[{i}] = {x} is outside [0, {rows})")
    w = words(seed, ids, np.arange(width))
    return ((w >> np.uint64(40)).astype(np.int64) - (1 << 23)).astype(np.float64) * 2.0 ** -23


def shard_range(rows, rank, world):
    """§STO.7 part = ceil(rows / world); rank r owns [r * part, min((r + 1) * part, rows))."""
    part = -(-rows // world)
    return min(rank * part, rows), min((rank + 1) * part, rows)


def row_shard_lookup(table, ids, world):
    """§STO.7 each rank reads the rows it owns (local row id - begin) and writes +0 elsewhere; then a left
    fold of bf16 additions over the ranks (float32 sum, one rounding).

    --bug local-as-global: the rank reads its local row id as a row of the whole table.
    --bug keep-neg-zero: the reduction takes the owner rank's bits (no +0 of the other ranks added: -0 stays).
    --bug even-shards-only: a table whose rows are not a multiple of world is refused (sglang's assert).
    """
    table.check(ids)
    if BUG == "even-shards-only" and table.rows % world:
        raise ValueError(f"num_embeddings {table.rows} % tp_size {world} != 0: equal shards only")
    ids = np.asarray(ids, dtype=np.int64)
    acc = None
    for rank in range(world):
        begin, end = shard_range(table.rows, rank, world)
        mine = (ids >= begin) & (ids < end)
        part = np.zeros((len(ids), table.d), dtype=np.uint16)  # masked positions: +0 (assignment)
        if mine.any():
            # The rank's local table holds global rows begin .. end-1 at local ids 0 .. end-begin-1.
            local = ids[mine] - begin
            part[mine] = table.lookup(local if BUG == "local-as-global" else begin + local)
        if acc is None:
            acc = part
        elif BUG == "keep-neg-zero":
            acc = np.where(mine[:, None], part, acc)
        else:
            acc = to_bf16(bf16_to_f32(acc) + bf16_to_f32(part))
    return acc


def head_shard_lookup(table, ids, columns, world):
    """§STO.8 rank r looks up columns [r * hp, min((r + 1) * hp, C)); the outputs are gathered in rank order."""
    table.check(ids)
    hp = -(-columns // world)
    ids = np.asarray(ids, dtype=np.int64).reshape(-1, columns)
    parts = []
    for rank in range(world):
        lo, hi = min(rank * hp, columns), min((rank + 1) * hp, columns)
        parts.append(table.lookup(ids[:, lo:hi].ravel()).reshape(ids.shape[0], hi - lo, table.d))
    return np.concatenate(parts, axis=1).reshape(-1, table.d)


def hex_bytes(text):
    return np.frombuffer(bytes.fromhex(text), dtype=np.uint8)


def storage_test(type_, group, test):
    if type_ == "E4M3DecodeTest":
        v = e4m3_value(test["code"])
        return {"f32Bits": f32_hex(v), "value": "NaN" if v != v else "%.17g" % v}
    if type_ == "E8M0DecodeTest":
        v = e8m0_value(test["scale"])
        text = "NaN" if v != v else "inf" if v == float("inf") else "0" if v == 0 else "2^%d" % (math.frexp(v)[1] - 1)
        return {"f32Bits": f32_hex(v), "value": text}
    if type_ == "ElementDecodeTest":
        codes = np.arange(256, dtype=np.uint8)
        return {"bf16": bf16_hex(decode_row(codes, [test["scale"]] * 8))}
    if type_ not in ("SyntheticLookupTest", "SafetensorsLookupTest", "PackedLookupTest", "FloatLookupTest",
                     "RowShardTest", "HeadShardTest"):
        return None
    ids = [int(x) for x in test["rowIds"]]
    if type_ == "SyntheticLookupTest":
        table = table_of(group["table"])
        codes, scales = table.raw(ids)
        rows = table.lookup(ids)
        return {"rows": [bf16_hex(r) for r in rows],
                "intermediate": {"codes": [c.tobytes().hex() for c in codes],
                                 "scales": [s.tobytes().hex() for s in scales],
                                 "edgeRow": [bool(x) for x in table.edge_rows(ids)]}}
    if type_ in ("SafetensorsLookupTest", "PackedLookupTest"):
        rows, d = group["rows"], group["headDim"]
        n_s = d // 32
        for i, x in enumerate(ids):
            if not 0 <= x < rows:
                raise ValueError(f"rowIds[{i}] = {x} is outside [0, {rows})")
        if len(test["rowBytes"]) != len(ids):
            raise ValueError("one rowBytes entry per row id expected")
        out = []
        for rid, rb in zip(ids, test["rowBytes"]):
            # §STO.4 where the row lies in the file (64-bit offsets): checked against what the test gives.
            if type_ == "PackedLookupTest":
                if rb["offset"] != rid * (d + n_s):
                    raise ValueError(f"row {rid}: offset {rb['offset']} is not {rid * (d + n_s)}")
                raw = hex_bytes(rb["packed"])
                codes, scales = raw[:d], raw[d:d + n_s]
            else:
                at = group["dataOffset"]
                if rb["codesOffset"] != at + rid * d or rb["scalesOffset"] != at + rows * d + rid * n_s:
                    raise ValueError(f"row {rid}: offsets {rb['codesOffset']}, {rb['scalesOffset']} are not the layout's")
                codes, scales = hex_bytes(rb["codes"]), hex_bytes(rb["scales"])
            out.append(bf16_hex(decode_row(codes, scales)))
        return {"rows": out}
    if type_ == "FloatLookupTest":
        t = group["table"]
        v = float_table_rows(t["seed"], t["rows"], t["width"], ids).astype(np.float32)
        return {"rows": ["".join(f32_hex(x) for x in row) for row in v]}
    if type_ == "RowShardTest":
        table, world = table_of(group["table"]), group["world"]
        rows = row_shard_lookup(table, ids, world)
        owners = []
        for x in ids:
            rank = next((r for r in range(world) if shard_range(table.rows, r, world)[0] <= x < shard_range(table.rows, r, world)[1]),
                        None)  # None: no rank owns it (only under --bug row-outside-zero, which accepts such ids)
            owners.append({"rank": rank, "localRow": x - shard_range(table.rows, rank, world)[0]} if rank is not None
                          else {"rank": -1, "localRow": 0})
        return {"rows": [bf16_hex(r) for r in rows],
                "intermediate": {"owners": owners, "unsharded": [bf16_hex(r) for r in table.lookup(ids)]}}
    if type_ == "HeadShardTest":
        table = table_of(group["table"])
        return {"rows": [bf16_hex(r) for r in head_shard_lookup(table, ids, group["columns"], group["world"])]}
    return None


# ----------------------------------------------------------------------------- §TOK compressed token map


def byte_to_unicode():
    """§TOK.2 the GPT-2 byte <-> unicode table."""
    direct = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in direct:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + extra)
            extra += 1
    return table


UNICODE_TO_BYTE = {c: b for b, c in byte_to_unicode().items()}
# Unicode White_Space (Rust char::is_whitespace); str.strip() would also strip U+001C ... U+001F.
WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200B)) + \
    "\u2028\u2029\u202f\u205f\u3000"


def decode_token(token, added=False):
    """§TOK.2 single-id decode: bytes through the table (or the token's own UTF-8), then lossy UTF-8.

    --bug added-token-content: an added token's text is its content, unchanged.
    """
    if added and BUG == "added-token-content":
        return token
    if all(c in UNICODE_TO_BYTE for c in token):
        data = bytes(UNICODE_TO_BYTE[c] for c in token)
    else:
        data = token.encode("utf-8")
    text = data.decode("utf-8", errors="replace")  # one U+FFFD per maximal subpart, like from_utf8_lossy
    if BUG == "python-wrapper-decode":
        # transformers' clean_up_tokenization (clean_up_tokenization_spaces=True), in its order.
        for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                     (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
            text = text.replace(a, b)
    return text


def normalize(text):
    """§TOK.3 NFKC, NFD, strip marks, per-code-point lowercase, whitespace runs, sentinel, strip, sentinel.

    --bug context-lowercase: str.lower() of the whole text (Final_Sigma: a word-final sigma becomes ς).
    --bug sentinel-less: no sentinel steps: whitespace that collapses to " " strips to "".
    """
    t = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text))
    t = "".join(c for c in t if unicodedata.category(c) not in ("Mn", "Mc", "Me"))
    if BUG == "context-lowercase":
        t = t.lower()
    else:
        t = "".join(c.lower() for c in t)  # one code point at a time: no final-sigma context
    t = re.sub("[ \t\r\n]+", " ", t)
    if BUG == "sentinel-less":
        return t.strip(WHITE_SPACE)
    if t == " ":
        t = "\ue000"
    return t.strip(WHITE_SPACE).replace("\ue000", " ")


def load_tokenizer(text):
    """§TOK.1 tokenizer.json text -> (tokens[id], the set of added token ids); refuses what §TOK.1 refuses."""
    def pairs(items):
        seen = {}
        for k, v in items:
            if k in seen and BUG != "hf-loader-unchecked":  # the loader's map keeps the last
                raise ValueError(f"key {k!r} appears twice")
            seen[k] = v
        return seen

    try:
        doc = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as e:
        raise ValueError(f"tokenizer.json is not JSON: {e}")
    if not isinstance(doc, dict):
        raise ValueError("tokenizer.json is not an object")
    model = doc.get("model")
    if BUG == "hf-loader-unchecked":
        return hf_loader_tokens(doc)
    if not isinstance(model, dict) or model.get("type") != "BPE":
        raise ValueError(f"model.type {model.get('type') if isinstance(model, dict) else None!r} is not 'BPE'")
    vocab = model.get("vocab")
    if not isinstance(vocab, dict):
        raise ValueError("model.vocab is not an object")
    by_id = {}
    for token, i in vocab.items():
        if type(i) is not int or not 0 <= i < (1 << 31):
            raise ValueError(f"model.vocab[{token!r}] = {i!r} is not an id")
        if i in by_id:
            raise ValueError(f"id {i} is given to {by_id[i]!r} and {token!r}")
        by_id[i] = token
    n = len(vocab)
    if set(by_id) != set(range(n)):
        raise ValueError(f"model.vocab ids are not 0 .. {n - 1}: id {min(set(range(n)) - set(by_id))} has no token")
    dec = doc.get("decoder")
    ok = isinstance(dec, dict) and (dec.get("type") == "ByteLevel" or (
        dec.get("type") == "Sequence" and isinstance(dec.get("decoders"), list) and len(dec["decoders"]) == 1
        and isinstance(dec["decoders"][0], dict) and dec["decoders"][0].get("type") == "ByteLevel"))
    if not ok:
        raise ValueError(f"decoder {dec!r} is not ByteLevel")
    tokens = {i: t for i, t in by_id.items()}
    vocab_id = dict(vocab)
    added_ids, highest = {}, None
    for k, a in enumerate(doc.get("added_tokens") or []):
        if not isinstance(a, dict) or not isinstance(a.get("content"), str) or not a["content"] \
                or type(a.get("id")) is not int or not 0 <= a["id"] < (1 << 31) \
                or ("special" in a and not isinstance(a["special"], bool)):
            raise ValueError(f"added_tokens[{k}] is malformed")
        c = a["content"]
        if c in added_ids:
            assigned = added_ids[c]
        elif c in vocab_id:
            assigned = vocab_id[c]
        else:
            assigned = n if highest is None or highest < n else highest + 1
        if a["id"] != assigned:
            raise ValueError(f"added token {c!r} declares id {a['id']}, the loader assigns {assigned}")
        added_ids[c] = assigned
        highest = assigned if highest is None else max(highest, assigned)
        tokens[assigned] = c
    size = max(tokens) + 1 if tokens else 0
    if set(tokens) != set(range(size)):
        raise ValueError("ids are not 0 .. T-1")
    return [tokens[i] for i in range(size)], set(added_ids.values())


def hf_loader_tokens(doc):
    """--bug hf-loader-unchecked: the tokens as a Hugging Face tokenizer loaded from the file lists them (the
    official V4.1 code's build_compressed_token_map: range(len(tokenizer)), backend.decode): the vocab in id
    order, a hole or a duplicate id left as it falls, added tokens after it, their declared ids ignored, the
    decoder not looked at. What that loader cannot read is refused: a model type other than BPE (none is
    read as BPE), a vocab id that is not a u32, a ByteLevel decoder step without add_prefix_space or
    trim_offsets."""
    model = doc.get("model")
    if not isinstance(model, dict) or model.get("type", "BPE") != "BPE" or not isinstance(model.get("vocab"), dict):
        raise ValueError("the loader cannot read the model")
    dec = doc.get("decoder")
    steps = [dec] + (dec.get("decoders") or [] if isinstance(dec, dict) and dec.get("type") == "Sequence" else [])
    for st in steps:
        if isinstance(st, dict) and st.get("type") == "ByteLevel" and not {"add_prefix_space", "trim_offsets"} <= set(st):
            raise ValueError("the loader cannot read a ByteLevel decoder without add_prefix_space / trim_offsets")
    vocab = {}
    for token, i in model["vocab"].items():  # a token given twice: the loader keeps its last id
        if type(i) is not int or not 0 <= i < (1 << 32):
            raise ValueError(f"model.vocab[{token!r}] = {i!r} is not a u32")
        vocab[token] = i
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: (kv[1], kv[0]))]
    added = set()
    for a in doc.get("added_tokens") or []:
        if a["content"] in tokens:
            added.add(tokens.index(a["content"]))
        else:
            added.add(len(tokens))
            tokens.append(a["content"])
    return tokens, added


def token_map_test(group, test):
    tokens, added = load_tokenizer(group["tokenizerJson"])
    keys, cmap = {}, []
    for i, tok in enumerate(tokens):
        text = decode_token(tok, i in added)
        if "\ufffd" in text:
            key = tok  # §TOK.4 the raw token; one dictionary serves all three kinds of key
        else:
            key = normalize(text) or text
        cmap.append(keys.setdefault(key, len(keys)))
    out = {"tokens": len(tokens), "compressedSize": len(keys),
           "sha256": hashlib.sha256(np.asarray(cmap, dtype="<i4").tobytes()).hexdigest(), "map": cmap}
    if "engramCompressedVocabSize" in test and test["engramCompressedVocabSize"] != len(keys):
        raise ValueError(f"engram_compressed_vocab_size {test['engramCompressedVocabSize']} != {len(keys)} ids")
    if "padId" in test or "engramCompressedVocabSize" in test:
        pad = test.get("padId", 0)
        wraps = BUG == "negative-pad-wraps" and -len(tokens) <= pad < 0  # token_map[pad]: Python/torch/numpy wrap
        if not 0 <= pad < len(tokens) and not wraps:
            raise ValueError(f"pad id {pad} is outside [0, {len(tokens)})")
        if "padId" in test:
            out["compressedPad"] = cmap[pad]
    return out


def token_lookup_test(group, test):
    """§HASH.1 raw ids (and a v4.1 mask) to the compressed ids the hash takes."""
    cmap = token_map_test(group, {})["map"]
    raw, mask, v41 = test["rawIds"], test.get("mask"), group["profile"] == "v4.1"
    if mask is not None and not v41:
        raise ValueError("mask: demo-v1 has no mask")
    if BUG == "mask-broadcast" and mask is not None and len(mask) == 1:
        mask = mask * len(raw)  # torch.where(token_mask, ...) broadcasts a [1, 1] mask over [1, L]
    if mask is not None and len(mask) != len(raw):
        raise ValueError(f"mask: {len(mask)} entries for {len(raw)} ids")
    out = []
    for i, x in enumerate(raw):
        if BUG == "raw-clamp" and v41:
            c = cmap[min(max(x, 0), len(cmap) - 1)]  # sglang: tokens.clamp(0, T - 1) before the map
        elif BUG == "raw-outside-pad" and v41 and not 0 <= x < len(cmap):
            c = cmap[0]  # lucebox's compress: outside the map is the pad (a lookup test has none: any id will do)
        elif BUG == "official-indexing" and v41 and -len(cmap) <= x < 0:
            c = cmap[x]  # the official V4.1 code: token_map[input_ids], torch indexing wraps (-1 -> T - 1)
        elif v41 and x == DEAD:
            c = DEAD  # raw -1 marks a masked position
        elif not v41 and x < 0:
            c = x  # the demo copies negative ids through
        elif BUG == "raw-beyond-dead" and v41 and x >= len(cmap):
            c = DEAD  # the fork's policy: beyond the tokenizer is DEAD, not a refusal
        elif 0 <= x < len(cmap):  # never cmap[x] for x < 0: Python indexing would wrap around (-2 -> T - 2)
            c = cmap[x]
        else:
            raise ValueError(f"rawIds[{i}]: {x} is not a raw id in [0, {len(cmap)})" + (" or -1" if v41 else ""))
        if v41 and mask is not None and not mask[i]:
            c = DEAD  # masked after the lookup
        out.append(c)
    return {"ids": out}


# ----------------------------------------------------------------------------- §FUS gating and fusion
#
# Every formula is evaluated twice, as §FUS.8 says: in float64 (the reference) and in the float32 mirror
# (every +, -, *, /, sqrt rounded to float32: one double operation then one rounding, which is float32
# arithmetic; sums sequential from +0; sigmoid/exp/SiLU as the double value rounded once). P is 64 or 32.


F32 = struct.Struct("<f")


def rnd(x, p):
    """x rounded to float32 (nearest, ties to even) when p is 32: struct's cast, C's (float)x, as numpy's is."""
    if p == 64:
        return x
    try:
        return F32.unpack(F32.pack(x))[0]
    except OverflowError:  # struct refuses what rounds to an infinity; numpy gives the infinity
        return float(np.float32(x))


def fx(h):
    """A Python float.hex() string (or inf / -inf / nan) -> float."""
    return float.fromhex(h) if h not in ("inf", "-inf", "nan") else float(h)


def hexf(x):
    return x.hex() if math.isfinite(x) else ("nan" if x != x else ("inf" if x > 0 else "-inf"))


U32 = struct.Struct("<I")


def bf16v(bits):
    """One bf16 (16 bits) -> its value: the top half of a float32."""
    return F32.unpack(U32.pack(bits << 16))[0]


def bf16_of(x):
    """§FUS.3 round a float (a double) to bf16 bits: nearest, ties to even, straight from the double."""
    if x != x:
        return BF16_NAN
    if math.isinf(x) or x == 0:
        return int(to_bf16(np.float32(x)))
    m, e = math.frexp(x)                  # |x| = |m| 2^e, |m| in [0.5, 1): the leading bit is 2^(e-1)
    q = math.ldexp(1.0, max(e - 8, -133))  # bf16: 8 significant bits, subnormal spacing 2^-133
    r = round(x / q) * q                   # x / q is exact; round() is ties-to-even
    return int(to_bf16(np.float32(r)))     # r is a bf16 value (or 2^128 -> inf)


def safe_exp(x):
    try:
        return math.exp(x)
    except OverflowError:
        return float("inf")


def sigmoid(x, p):
    return rnd(1.0 / (1.0 + safe_exp(-x)), p)


def silu(x, p):
    return rnd(x / (1.0 + safe_exp(-x)), p)


def gate_fn(d, p, profile):
    """§FUS.4 G41 (copysign) and §FUS.6 GD (torch.sign, 0 at +-0 and NaN).

    --bug sign: the v4.1 gate written with torch.sign() as well (0.5 at dot = +-0).
    --bug where-negative: the v4.1 gate as where(dot < 0, -root, root) (so -0 counts as positive).
    --bug plus-eps: sqrt(|d| + 1e-6) in both gates instead of the clamp.
    --bug copysign: the demo gate written with copysign like v4.1's (sigmoid(+-0.001) at g = +-0).
    --bug no-signed-root: the demo gate is sigmoid(g) (no clamp, no signed square root).
    """
    if profile != "v4.1":
        d = rnd(d, p)  # the demo gate's g is a float32 tensor: a float64 g rounding to +-0 has sign 0
        if BUG == "no-signed-root":
            return sigmoid(d, p)
    a = abs(d)
    if BUG == "plus-eps":
        clamped = rnd(a + rnd(1e-6, p), p)  # NaN + eps is NaN
    else:
        clamped = a if a != a else max(a, rnd(1e-6, p))  # clamp_min keeps NaN
    root = rnd(math.sqrt(clamped), p)
    if profile == "v4.1" and BUG == "where-negative":
        signed = -root if d < 0 else root
    elif (profile == "v4.1" and BUG != "sign") or (profile != "v4.1" and BUG == "copysign"):
        signed = math.copysign(root, d)
    else:
        signed = rnd(root * ((0 < d) - (d < 0)), p)
    return sigmoid(signed, p)


def seq_sum(terms, p):
    acc = 0.0
    for t in terms:
        acc = rnd(acc + t, p)
    return acc


def v41_stream(h, k, v, qw, kw, eps, masked, p):
    """§FUS.3 one stream: (gate, out values before the bf16 cast).

    --bug skip-masked: a masked position is not computed at all; x is passed through.
    --bug mask-ignored: a masked position is gated like the others (the gate is never zeroed).
    """
    if masked and BUG == "skip-masked":
        return 0.0, list(h)
    dim = len(h)
    w = [rnd(a * b, p) for a, b in zip(qw, kw)]
    e = rnd(eps, p)
    mean_h = rnd(seq_sum((rnd(x * x, p) for x in h), p) / dim, p)
    mean_k = rnd(seq_sum((rnd(x * x, p) for x in k), p) / dim, p)
    rstd = rnd(rnd(1.0 / rnd(math.sqrt(rnd(mean_h + e, p)), p), p) *
               rnd(1.0 / rnd(math.sqrt(rnd(mean_k + e, p)), p), p), p)
    s = seq_sum((rnd(rnd(a * b, p) * c, p) for a, b, c in zip(h, w, k)), p)
    dot = rnd(rnd(s * rstd, p) * rnd(dim ** -0.5, p), p)
    gate = 0.0 if masked and BUG != "mask-ignored" else gate_fn(dot, p, "v4.1")
    return gate, [rnd(a + rnd(gate * b, p), p) for a, b in zip(h, v)]


def e4m3_encode(x):
    """§FUS.2.1 nearest E4M3fn code, ties to the even code, saturating at +-448."""
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    a = abs(x)
    if a >= 448.0:
        return sign | 0x7E
    lo = bisect.bisect_right(E4M3_FINITE_POSITIVE, a) - 1  # the largest code not above a
    if e4m3_value(lo) == a or lo == 0x7E:
        return sign | lo
    hi = lo + 1
    dl, dh = a - e4m3_value(lo), e4m3_value(hi) - a
    return sign | (lo if dl < dh or (dl == dh and lo % 2 == 0) else hi)


def act_quant(e_bits):
    """§FUS.2.1 bf16 activation -> (codes, E8M0 scale bytes), blocks of 32."""
    if len(e_bits) % 32:
        raise ValueError(f"activation length {len(e_bits)} is not a multiple of 32")
    vals = [bf16v(b) for b in e_bits]
    codes, scales = [], []
    for b0 in range(0, len(vals), 32):
        blk = vals[b0:b0 + 32]
        if not all(math.isfinite(x) for x in blk):
            if BUG != "non-finite-activation":
                raise ValueError(f"activation block {b0 // 32} holds a non-finite value (§FUS.2.1)")
            # --bug non-finite-activation: the official CPU kernel's act_quant takes the block. amax is NaN (or
            # inf); the scale is built from float32 bits ((exponent + 127) << 23, an int32 that overflows to
            # -0.0 for NaN, +inf for inf); x / scale then holds NaN, which the cast keeps (code 0x7F), and the
            # scale byte of -0 / inf is E8M0's NaN.
            amax = float("nan") if any(x != x for x in blk) else float("inf")
            t = np.float32(amax) * np.float32(1.0 / 448.0)
            bits = int(np.array([t]).view(np.uint32)[0])
            field = ((bits >> 23) & 0xFF) - 127 + (1 if bits & 0x7FFFFF else 0) + 127
            scale = float(np.array([(field << 23) & 0xFFFFFFFF], dtype=np.uint32).view(np.float32)[0])
            with np.errstate(divide="ignore", invalid="ignore"):
                q = [float(np.float32(x) / np.float32(scale)) for x in blk]
            codes += [0x7F if y != y else e4m3_encode(max(-448.0, min(448.0, y))) for y in q]
            scales.append(0xFF)
            continue
        amax = max(max(abs(x) for x in blk), rnd(1e-4, 32))
        t = np.float32(rnd(amax * rnd(1.0 / 448.0, 32), 32))
        bits = int(np.array([t]).view(np.uint32)[0])
        exponent = ((bits >> 23) & 0xFF) - 127 + (1 if bits & 0x7FFFFF else 0)
        scales.append(exponent + 127)
        codes += [e4m3_encode(rnd(x / 2.0 ** exponent, 32)) for x in blk]
    return codes, scales


def fp8_linear(codes, scales, w_codes, w_scales, out, inn, p):
    """§FUS.2.2 the fp8 GEMM with 32x32 weight blocks: float64 sum of the dequantized products, or the
    kernel's float32 mirror (float32 sum of code products per K block, then scaled and accumulated).

    --bug wkv-block128: V4's 128 x 128 weight blocks: the weight scale of (n, k) read at [n // 128][k // 128]
    of the stored [ceil(out / 32)][in / 32] scale tensor."""
    if inn % 32 or len(codes) != inn or len(w_codes) != out * inn or len(w_scales) != -(-out // 32) * (inn // 32):
        raise ValueError("fp8 wkv: shapes do not match")
    kb = inn // 32
    e4m3 = e4m3_values()
    a = [e4m3[c] for c in codes]  # the activation's codes, decoded once for every output
    y = []
    for n in range(out):
        acc = 0.0
        for b in range(kb):
            if BUG == "wkv-block128":
                sw = e8m0_value(w_scales[(n // 128) * kb + (b * 32) // 128])
            else:
                sw = e8m0_value(w_scales[(n // 32) * kb + b])
            sa = e8m0_value(scales[b])
            prods = [a[i] * e4m3[w_codes[n * inn + i]] for i in range(b * 32, b * 32 + 32)]
            if p == 64:
                for q in prods:
                    acc += q * sa * sw
            elif VARIANT == "fp8-gemm-flush":  # every float32 operation under FTZ + DAZ (§FUS.9 forbids it here)
                partial = ftz(seq_sum(prods, 32), True)
                for_acc = ftz(rnd(ftz(rnd(partial * ftz(sa, True), 32), True) * ftz(sw, True), 32), True)
                acc = ftz(rnd(acc + for_acc, 32), True)
            else:
                acc = rnd(acc + rnd(rnd(seq_sum(prods, 32) * sa, 32) * sw, 32), 32)
        y.append(acc)
    return y


def ftz(x, at_min_normal=False):
    """A float32 value below 2^-126 in magnitude (or, with `at_min_normal`, up to 2^-126: the smallest normal
    too) -> a zero of its sign; what FTZ / DAZ hardware does (with the wrong threshold in the second case)."""
    limit = 2.0 ** -126
    return math.copysign(0.0, x) if (abs(x) <= limit if at_min_normal else abs(x) < limit) else x


def bf16_gemm_flushing(x, w, out, at_min_normal=False):
    """§FUS.9 the plain wkv as torch's F.linear computes it through oneDNN on an AVX512-BF16 CPU: a
    subnormal bf16 factor is read as 0 (DAZ); per output one float32 accumulator takes the pairs
    (k, k + 1), k even, by VDPBF16PS (element k + 1 first, then k, each an FMA whose result is flushed to
    zero when subnormal: "output denormals are always flushed to zero"); the float32 -> bf16 conversion
    flushes too (VCVTNEPS2BF16). Seen to give torch's bits exactly (torch 1.13, oneDNN 2.6.3, AMD Zen 4).
    --variant bf16-gemm-flush; --variant bf16-gemm-flush-min-normal flushes 2^-126 as well (which §FUS.9
    forbids). Returns the float32 results (already flushed)."""
    k_n = len(x)
    y = []
    for n in range(out):
        acc = 0.0
        for k0 in range(0, k_n, 2):
            for k in (k0 + 1, k0):
                if k < k_n:
                    t = ftz(x[k], at_min_normal) * ftz(w[n * k_n + k], at_min_normal)  # exact in a double
                    acc = ftz(rnd(acc + t, 32), at_min_normal)
        y.append(ftz(acc, at_min_normal))
    return y


def linear(x, w, out, p, bias=None):
    """y[n] = sum_k x[k] w[n][k] (sequential), plus the bias."""
    if len(w) != out * len(x):
        raise ValueError(f"weight has {len(w)} values, expected {out} x {len(x)}")
    y = [seq_sum((rnd(x[k] * w[n * len(x) + k], p) for k in range(len(x))), p) for n in range(out)]
    return y if bias is None else [rnd(a + b, p) for a, b in zip(y, bias)]


def rms_norm(x, w, eps, p):
    """§FUS.5 (x * (1 / sqrt(mean(x^2) + eps))) * weight."""
    mean = rnd(seq_sum((rnd(a * a, p) for a in x), p) / len(x), p)
    root = rnd(math.sqrt(rnd(mean + rnd(eps, p), p)), p)
    rstd = rnd(1.0 / root, p) if root != 0 else math.inf  # IEEE 1 / +0 (only eps 0 reaches it)
    return [rnd(rnd(a * rstd, p) * b, p) for a, b in zip(x, w)]


class Demo:
    """The demo-v1 parameters of a group (§FUS.10)."""

    def __init__(self, g):
        self.hc, self.hidden, self.inn, self.kernel, self.dil = g["hc"], g["hidden"], g["in"], g["kernel"], g["dilation"]
        for key in ("keyWeight", "keyBias", "norm1Weight", "norm2Weight", "valueWeight", "valueBias",
                    "convNormWeight", "convWeight"):
            setattr(self, key, [fx(x) for x in g[key]])
        H, C = self.hidden, self.hc * self.hidden
        want = {"keyWeight": C * self.inn, "keyBias": C, "norm1Weight": C, "norm2Weight": C,
                "valueWeight": H * self.inn, "valueBias": H, "convNormWeight": C, "convWeight": C * self.kernel}
        for key, n in want.items():
            if len(getattr(self, key)) != n:
                raise ValueError(f"{key} has {len(getattr(self, key))} values, expected {n}")

    def gate_token(self, e, hidden, p):
        """§FUS.6 -> (gates [hc], values [hc][hidden] flattened)."""
        H = self.hidden
        if len(e) != self.inn or len(hidden) != self.hc * H:
            raise ValueError(f"e has {len(e)} values (expected {self.inn}), hidden {len(hidden)} "
                             f"(expected {self.hc * H})")
        vproj = linear(e, self.valueWeight, H, p, self.valueBias)
        sqrt_h = rnd(math.sqrt(H), p)
        eps = 1e-5 if BUG == "rms-norm-eps" else 0.0 if BUG == "gate-norm-eps-zero" else 2.0 ** -23  # torch's default
        gates, values = [], []
        for c in range(self.hc):
            key = linear(e, self.keyWeight[c * H * self.inn:(c + 1) * H * self.inn], H, p, self.keyBias[c * H:(c + 1) * H])
            kn = rms_norm(key, self.norm1Weight[c * H:(c + 1) * H], eps, p)
            qn = rms_norm(hidden[c * H:(c + 1) * H], self.norm2Weight[c * H:(c + 1) * H], eps, p)
            g = rnd(seq_sum((rnd(a * b, p) for a, b in zip(kn, qn)), p) / sqrt_h, p)
            gate = gate_fn(g, p, "demo-v1")
            gates.append(gate)
            values += [rnd(gate * x, p) for x in vproj]
        return gates, values

    def short_conv(self, value, steps, p):
        """§FUS.7 per-stream RMSNorm (eps 1e-5), depthwise causal dilated Conv1d (last tap = now), SiLU.

        --bug conv-norm-eps: the norm with torch's default eps (2^-23); --bug tap-order: the taps reversed in time.
        """
        H, C = self.hidden, self.hc * self.hidden
        eps = 2.0 ** -23 if BUG == "conv-norm-eps" else 1e-5
        if len(value) != steps * C:
            raise ValueError(f"value has {len(value)} entries, expected {steps} x {C}")
        normed = []
        for t in range(steps):
            for c in range(self.hc):
                normed += rms_norm(value[t * C + c * H:t * C + (c + 1) * H], self.convNormWeight[c * H:(c + 1) * H], eps, p)
        out = []
        for t in range(steps):
            for ch in range(C):
                acc = 0.0
                for j in range(self.kernel):
                    back = (j if BUG == "tap-order" else self.kernel - 1 - j) * self.dil
                    n = normed[(t - back) * C + ch] if back <= t else 0.0  # the zero padding: inf * 0 is NaN
                    acc = rnd(acc + rnd(self.convWeight[ch * self.kernel + j] * n, p), p)
                out.append(silu(acc, p))
        return out


    def carried_conv(self, state_in, calls, capacity, p):
        """§FUS.12 ShortConv carried across calls -> (the outputs of every appended step, the state's last W rows).

        The rows are the whole sequence's normed values, led by the imported state (or W rows of +0, the padding);
        a rollback within the depth drops the last k rows.
        --bug conv-state-restart: every call starts from W rows of +0 (no state carried or imported);
        --bug conv-rollback-kept: a rollback drops nothing.
        """
        H, C, K, dil = self.hidden, self.hc * self.hidden, self.kernel, self.dil
        width = (K - 1) * dil
        eps = 2.0 ** -23 if BUG == "conv-norm-eps" else 1e-5
        zeros = [[0.0] * C for _ in range(width)]
        if state_in is None:
            rows = zeros
        else:
            if len(state_in) != width * C:
                raise ValueError(f"stateIn has {len(state_in)} values, expected W x hc x hidden = {width} x {C}")
            rows = [state_in[i * C:(i + 1) * C] for i in range(width)]
        rows, depth, out = list(rows), 0, []
        for call in calls:
            if call["op"] == "rollback":
                k = call["k"]
                if k > depth:
                    raise ValueError(f"rollback by {k} beyond the rollback depth {depth}")
                if BUG not in ("conv-rollback-kept", "conv-state-restart"):
                    del rows[len(rows) - k:]
                    depth -= k
                continue
            if call["op"] != "append":
                raise ValueError(f"unknown call op {call['op']!r}")
            steps, value = call["steps"], [fx(a) for a in call["value"]]
            if len(value) != steps * C:
                raise ValueError(f"a call's value has {len(value)} entries, expected {steps} x {C}")
            if BUG == "conv-state-restart":
                rows = [list(r) for r in zeros]
            for t in range(steps):
                row = []
                for c in range(self.hc):
                    row += rms_norm(value[t * C + c * H:t * C + (c + 1) * H], self.convNormWeight[c * H:(c + 1) * H],
                                    eps, p)
                rows.append(row)
                now = len(rows) - 1
                for ch in range(C):
                    acc = 0.0
                    for j in range(K):
                        back = (j if BUG == "tap-order" else K - 1 - j) * dil
                        acc = rnd(acc + rnd(self.convWeight[ch * K + j] * rows[now - back][ch], p), p)
                    out.append(silu(acc, p))
            depth = min(depth + steps, capacity)
        return out, [v for r in rows[len(rows) - width:] for v in r] if width else []


def both(fn):
    """{"float64": fn(64), "float32": fn(32)} with floats as hex strings."""
    def enc(v):
        return [hexf(x) for x in v] if isinstance(v, list) else hexf(v)
    return {"float64": enc(fn(64)), "float32": enc(fn(32))}


def first_layer_rows(group, ids):
    """§FUS.10 the hash rows of the configuration's first layer: (its layout entry, row ids [T][cols])."""
    layout = layout_of(group)
    rows = State(layout).append(ids)
    return layout["layers"][0], [r[0] for r in rows]


def fusion_test(type_, group, test):
    if type_ == "GateFunctionTest":
        d = fx(test["dot"])
        return {"gate": both(lambda p: gate_fn(d, p, group["profile"]))}
    if type_ == "V41GateTest":
        dim, hc, eps = group["dim"], group["hc"], fx(group["eps"])
        x, key, v, qw, kw = (test[k] for k in ("x", "key", "value", "qWeight", "kWeight"))
        if any(len(a) != hc * dim for a in (x, key, qw, kw)) or len(v) != dim:
            raise ValueError(f"x, key, qWeight, kWeight need hc * dim = {hc * dim} values and value {dim}")
        h, k, vv, q, kk = ([bf16v(b) for b in a] for a in (x, key, v, qw, kw))
        res = {p: [v41_stream(h[c * dim:(c + 1) * dim], k[c * dim:(c + 1) * dim], vv, q[c * dim:(c + 1) * dim],
                              kk[c * dim:(c + 1) * dim], eps, test["masked"], p) for c in range(hc)] for p in (64, 32)}
        return {"gate": {"float64": [hexf(g) for g, _ in res[64]], "float32": [hexf(g) for g, _ in res[32]]},
                "out": [bf16_of(o) for _, out in res[32] for o in out],
                "outRef64": [hexf(o) for _, out in res[64] for o in out]}
    if type_ == "WkvTest":
        e, out = test["e"], test["outFeatures"]
        if "weight" in test:
            ev, w = [bf16v(b) for b in e], [bf16v(b) for b in test["weight"]]
            y = {p: linear(ev, w, out, p) for p in (64, 32)}
            if VARIANT in ("bf16-gemm-flush", "bf16-gemm-flush-min-normal"):
                y[32] = bf16_gemm_flushing(ev, w, out, VARIANT == "bf16-gemm-flush-min-normal")
        else:
            codes, scales = act_quant(e)
            y = {p: fp8_linear(codes, scales, test["weightCodes"], test["weightScales"], out, len(e), p) for p in (64, 32)}
        return {"kv": [bf16_of(a) for a in y[32]], "kvRef64": [hexf(a) for a in y[64]]}
    if type_ == "DemoGateTest":
        dm = Demo(group)
        e, hidden = [fx(a) for a in test["e"]], [fx(a) for a in test["hidden"]]
        r = {p: dm.gate_token(e, hidden, p) for p in (64, 32)}
        return {"gate": {"float64": [hexf(a) for a in r[64][0]], "float32": [hexf(a) for a in r[32][0]]},
                "value": {"float64": [hexf(a) for a in r[64][1]], "float32": [hexf(a) for a in r[32][1]]}}
    if type_ == "ShortConvTest":
        dm = Demo(group)
        value = [fx(a) for a in test["value"]]
        return {"output": both(lambda p: dm.short_conv(value, test["steps"], p))}
    if type_ == "ShortConvStateTest":
        dm = Demo(group)
        state_in = [fx(a) for a in test["stateIn"]] if "stateIn" in test else None
        r = {p: dm.carried_conv(state_in, test["calls"], group["rollbackCapacity"], p) for p in (64, 32)}
        return {"output": {"float64": [hexf(a) for a in r[64][0]], "float32": [hexf(a) for a in r[32][0]]},
                "stateOut": {"float64": [hexf(a) for a in r[64][1]], "float32": [hexf(a) for a in r[32][1]]}}
    if type_ == "EngramForwardTest":
        ids = [int(a) for a in test["ids"]]
        first, rows = first_layer_rows(group, ids)
        cols = len(rows[0]) if rows else 0
        if group["profile"] == "v4.1":
            cfg = group["config"]
            dim, hc, hd, eps = cfg["dim"], cfg["hc_mult"], cfg["engram_head_dim"], float(cfg["norm_eps"])
            x = test["x"]
            if len(x) != len(ids) * hc * dim:
                raise ValueError("x must have len(ids) * hc * dim values")
            table = SyntheticTable(group["tableSeed"], first["numEmbeddings"], hd)
            qw, kw = [bf16v(b) for b in group["qWeight"]], [bf16v(b) for b in group["kWeight"]]
            out, ref, g64, g32 = [], [], [], []
            for t in range(len(ids)):
                e = table.lookup(rows[t]).ravel()  # [cols * hd] bf16
                codes, scales = act_quant([int(b) for b in e])
                nout = dim * (hc + 1)
                kv = [bf16v(bf16_of(a)) for a in fp8_linear(codes, scales, group["wkvWeightCodes"],
                                                             group["wkvWeightScales"], nout, cols * hd, 32)]
                value = kv[hc * dim:]
                masked = ids[t] == DEAD
                for c in range(hc):
                    h = [bf16v(b) for b in x[(t * hc + c) * dim:(t * hc + c + 1) * dim]]
                    args = (h, kv[c * dim:(c + 1) * dim], value, qw[c * dim:(c + 1) * dim], kw[c * dim:(c + 1) * dim],
                            eps, masked)
                    ga, oa = v41_stream(*args, 64)
                    gb, ob = v41_stream(*args, 32)
                    g64.append(hexf(ga))
                    g32.append(hexf(gb))
                    out += [bf16_of(o) for o in ob]
                    ref += [hexf(o) for o in oa]
            return {"out": out, "outRef64": ref, "gate": {"float64": g64, "float32": g32}}
        dm = Demo(group)
        hidden = [fx(a) for a in test["hidden"]]
        C = dm.hc * dm.hidden
        if len(hidden) != len(ids) * C:
            raise ValueError("hidden must have len(ids) * hc * hidden values")
        e = float_table_rows(group["tableSeed"], first["numEmbeddings"], dm.inn // cols,
                             [r for row in rows for r in row]).reshape(len(ids), -1)
        res = {}
        for p in (64, 32):
            gates, values = [], []
            for t in range(len(ids)):
                g, v = dm.gate_token([float(a) for a in e[t]], hidden[t * C:(t + 1) * C], p)
                gates += g
                values += v
            conv = dm.short_conv(values, len(ids), p)
            output = [rnd(a + b, p) for a, b in zip(values, conv)]
            res[p] = (gates, output, [rnd(a + b, p) for a, b in zip(output, hidden)])
        return {"output": {"float64": [hexf(a) for a in res[64][1]], "float32": [hexf(a) for a in res[32][1]]},
                "hiddenAfter": {"float64": [hexf(a) for a in res[64][2]], "float32": [hexf(a) for a in res[32][2]]},
                "gate": {"float64": [hexf(a) for a in res[64][0]], "float32": [hexf(a) for a in res[32][0]]}}
    return None


# ----------------------------------------------------------------------------- the protocol


def run_test(type_, group, test):
    for part in (storage_test, fusion_test):
        out = part(type_, group, test)
        if out is not None:
            return out
    if type_ == "TokenMapTest":
        return token_map_test(group, test)
    if type_ == "TokenLookupTest":
        return token_lookup_test(group, test)
    if type_ == "BoundedIntegersTest":
        rng = np.random.default_rng(test["seed"])
        return {"values": [int(x) for x in rng.integers(test["low"], test["high"], size=test["count"], dtype=np.int64)]}
    if type_ == "MultipliersTest":
        return {"multipliers": multipliers(test["seed"], test["layerId"], test["compressedVocabSize"], test["maxNgram"])}
    if type_ == "LayoutTest":
        layout = build_layout(parse_config(test["config"], test.get("profile")), test["compressedVocabSize"],
                              test["compressedPad"])
        return {"layers": layout["layers"]}
    if type_ in ("PackedBatchTest", "DraftTreeTest"):
        return serving_test(type_, group, test)
    layout = layout_of(group)
    if type_ == "HashTest":
        return {"rows": State(layout).append(test["ids"])}
    if type_ == "HashStateTest":
        seqs, steps = {}, []
        for step in test["steps"]:
            step = dict(step)
            if step["op"] == "append":
                s = seqs.setdefault(step["seq"], State(layout, group.get("rollbackCapacity", 0)))
                step["rows"] = s.append(step["ids"])
                step["positionAfter"], step["historyAfter"] = s.position, s.history()
            elif step["op"] == "rollback":
                s = seqs[step["seq"]]
                s.rollback(step["k"])
                step["positionAfter"], step["historyAfter"] = s.position, s.history()
            elif step["op"] == "fork":
                if VARIANT == "fork-refuses-existing" and step["to"] in seqs:
                    raise ValueError(f"fork onto {step['to']!r}, which exists")
                src = seqs[step["from"]]
                dst = State(layout, src.capacity)
                dst.position, dst.recent = src.position, list(src.recent)
                seqs[step["to"]] = dst
            steps.append(step)
        return {"steps": steps}
    if type_ == "HashHandoffTest":
        fp = fingerprint(layout)

        def segment(seg, ids):
            s = State(layout)
            h = seg["historyIn"]
            if VARIANT == "handoff-position-from":
                h = {"position": seg["from"], "history": h["history"]}
            s.import_(h, fp, fp)
            seg = dict(seg)
            seg["rows"] = s.append(ids[seg["from"]:seg["to"]])
            seg["historyOut"] = {"position": s.position, "history": s.history()}
            return seg

        if "historyIn" in test:
            State(layout).import_(test["historyIn"], test["historyIn"].get("layoutFingerprint"), fp)
            return {"imported": True}
        if "segments" in test:
            return {"segments": [segment(seg, test["ids"]) for seg in test["segments"]]}
        return {"microBatches": [[segment(seg, test["sequences"][seg["sequence"]]) for seg in mb]
                                 for mb in test["microBatches"]]}
    return None


# ----------------------------------------------------------------------------- §HASH.10-§HASH.12 packed calls

SEGMENT_RESET = False  # --segment-reset: declare (hello `features`) and implement the policy of §HASH.12


def serving_read(layout, type_, test):
    """§CON.7: the test's state in, whatever its encoding, as one form: per request {"position", "ids", "under"}
    (ids with DEAD = -1, under: the id beneath each DEAD one where the encoding gives it, else -1), and the flat
    ids (DEAD = -1) with the ids beneath them."""
    enc, w = test["encoding"], layout["max_ngram"] - 1
    raw = list(test["ids"])
    if enc in ("vllm", "slotCache"):
        if len(test["deadMask"]) != len(raw):
            raise ValueError("deadMask: not one entry per slot")
        ids = [DEAD if m else x for x, m in zip(raw, test["deadMask"])]
        under = raw
    elif enc in ("engram", "onnxruntime", "sglang"):
        ids, under = raw, list(raw)
    else:
        raise ValueError(f"encoding {enc!r} is none of §CON.7's")
    cu, pos = test["cuSeqlens"], test["positions"]
    b = len(cu) - 1
    if b < 0:
        raise ValueError("cuSeqlens: empty")

    def first_position(r):  # the request's position before the call: its first slot's (§CON.7)
        if cu[r] >= cu[r + 1]:
            return None
        if not 0 <= cu[r] < len(pos):
            raise ValueError(f"cuSeqlens[{r}] = {cu[r]}: no slot of the buffer")
        return pos[cu[r]]

    hists = []
    for r in range(b):
        if enc == "engram":
            h = test["historyIn"][r]
            hists.append({"position": h["position"], "ids": list(h["history"]), "under": list(h["history"])})
            continue
        if enc == "vllm":
            win, mask = test["lookbackTokenIds"][r], test["lookbackDeadMask"][r]
            known = next((c for c, x in enumerate(win) if x == -1), w)
            p = first_position(r)
            p = known if p is None else p
            n = min(max(p, 0), w)
            hid, hun = [], []
            for c in reversed(range(n)):  # column c is position p - 1 - c: oldest first is the last column
                if win[c] == -1:
                    raise ValueError(f"lookbackTokenIds[{r}][{c}] = -1 (not known) where the windows read it")
                hid.append(DEAD if mask[c] else win[c])
                hun.append(win[c])
        elif enc == "onnxruntime":
            past = test["pastIds"][r]
            p = first_position(r)
            p = w if p is None else p
            n = min(max(p, 0), w)
            hid = list(past[w - n:])
            hun = [-1 if x == DEAD else x for x in hid]
        elif enc == "sglang":
            row = test["tokenTable"][r]
            p = first_position(r) or 0
            n = min(max(p, 0), w)
            if p > len(row):
                raise ValueError(f"tokenTable[{r}]: {len(row)} positions, the request continues at {p}")
            hid = list(row[p - n:p])
            hun = [-1 if x == DEAD else x for x in hid]
        else:  # slotCache
            p = first_position(r) or 0
            n = min(max(p, 0), w)
            hid = [test["slotCache"][slot_of(test, r, q)] for q in range(p - n, p)]
            hun = [-1 if x == DEAD else x for x in hid]
        hists.append({"position": p, "ids": hid, "under": hun})
    return ids, under, hists


def slot_of(test, r, position):
    """§CON.7 slotCache: position p of request r lies at blockTable[r][p // blockSize] * blockSize + p % blockSize."""
    bs = test["blockSize"]
    block = test["blockTable"][r][position // bs]
    slot = block * bs + position % bs
    if position < 0 or block < 0 or not 0 <= slot < len(test["slotCache"]):
        raise ValueError(f"blockTable[{r}]: no slot for position {position}")
    return slot


def serving_test(type_, group, test):
    """§HASH.10 / §HASH.11: every request continues its own state over its own slots (or its drafts' paths),
    written back in the test's encoding (§CON.7)."""
    layout = layout_of(group)
    fp = fingerprint(layout)
    w, enc = layout["max_ngram"] - 1, test["encoding"]
    drafts = type_ == "DraftTreeTest"
    ids, under, hists = serving_read(layout, type_, test)
    cu, pos = test["cuSeqlens"], test["positions"]
    b, n_slots = len(cu) - 1, len(ids)
    # §HASH.10 item 1: the boundaries, before anything is read through them
    if cu[0] != 0:
        raise ValueError(f"cuSeqlens[0] = {cu[0]}: the first boundary must be 0")
    for r in range(1, b + 1):
        if cu[r] < cu[r - 1]:
            raise ValueError(f"cuSeqlens[{r}] = {cu[r]} is below cuSeqlens[{r - 1}] = {cu[r - 1]}")
    if cu[b] > n_slots:
        raise ValueError(f"cuSeqlens[{b}] = {cu[b]} is beyond the {n_slots} slots")
    check_ids(layout, ids[:cu[b]])
    for h in hists:  # §HASH.9, each request's state in
        State(layout).import_({"position": h["position"], "history": h["ids"]}, fp, fp)
    mask_off = BUG == "mask-not-applied-to-history"
    seen_hist = lambda h: h["under"] if mask_off else h["ids"]  # noqa: E731  a masked id read as itself
    seen_slot = lambda t: under[t] if mask_off else ids[t]  # noqa: E731

    def rows_of(h_ids, position, chain, own):
        """The rows of the last id of `chain` (ids after `h_ids`, the first at `position`); its own slot `own`."""
        prev = (list(h_ids) + list(chain[:-1]))[-w:] if w else []
        prev = prev[-min(position + len(chain) - 1, w):] if position + len(chain) - 1 > 0 else []
        return hash_rows(layout, prev, position + len(chain) - 1, [own])[0].tolist()[0]

    rows, outs = [], []
    for r in range(b):
        h = hists[r]
        start, hist_ids, hist_under = h["position"], seen_hist(h), h["under"]
        if BUG == "restart-each-call":
            start, hist_ids, hist_under = 0, [], []
        slots = list(range(cu[r], cu[r + 1]))
        if drafts:
            par = test["parents"]
            depth = []
            for j, t in enumerate(slots):
                if not -1 <= par[t] < j:
                    raise ValueError(f"request {r}: draft {j} has parent {par[t]}")
                depth.append(0 if par[t] < 0 else depth[par[t]] + 1)
                if pos[t] != h["position"] + depth[j]:
                    raise ValueError(f"request {r}: slot {t} has position {pos[t]}, expected {h['position'] + depth[j]}")
            for j, t in enumerate(slots):
                path, at = [], j
                while at >= 0:
                    path.insert(0, slots[at])
                    at = par[slots[at]]
                rows.append(rows_of(hist_ids, start, [seen_slot(u) for u in path], ids[t]))
            path, prev = test["accepted"][r], -1
            for i, a in enumerate(path):
                if not (0 <= a < len(slots) and par[slots[a]] == prev):
                    raise ValueError(f"request {r}: accepted[{i}] = {a} does not continue the path")
                prev = a
            kept = [slots[a] for a in path] if BUG != "rejected-drafts-kept" else slots
            segments = [(start, hist_ids, hist_under, kept)]
        else:
            # §HASH.12 (declared): a position restarting at 0 starts a fresh segment
            segments, seg_start = [], 0
            for j, t in enumerate(slots):
                restart = SEGMENT_RESET and j > 0 and pos[t] == 0
                if restart:
                    segments.append((start if not segments else 0, hist_ids if not segments else [],
                                     hist_under if not segments else [], slots[seg_start:j]))
                    seg_start = j
                expect = 0 if restart else (h["position"] if not segments else 0) + (j - seg_start)
                if pos[t] != expect:
                    raise ValueError(f"request {r}: slot {t} has position {pos[t]}, but it continues at {expect}")
            segments.append((start if not segments else 0, hist_ids if not segments else [],
                             hist_under if not segments else [], slots[seg_start:]))
            for s0, s_ids, _, seg in segments:
                chain = []
                for t in seg:
                    chain.append(seen_slot(t))
                    rows.append(rows_of(s_ids, s0, chain, ids[t]))
        s0, s_ids, s_under, consumed = segments[-1]
        if BUG == "padding-writes-state" and not drafts and r == b - 1:
            consumed = consumed + list(range(cu[b], n_slots))
        seq_ids = list(s_ids) + [seen_slot(t) for t in consumed]
        seq_under = list(s_under) + [under[t] for t in consumed]
        p_out = s0 + len(consumed)
        k = min(p_out, w)
        outs.append({"position": p_out, "ids": seq_ids[len(seq_ids) - k:] if k else [],
                     "under": seq_under[len(seq_under) - k:] if k else [],
                     "writes": [(s0 + i, seen_slot(t)) for i, t in enumerate(consumed)]})
        if BUG == "restart-each-call":  # the slots are still written where the call says
            outs[-1]["writes"] = [(pos[t], ids[t]) for t in slots]
    if BUG == "naive-flatten":  # the request slots as one sequence after request 0's state (§HASH.10's control)
        h = hists[0]
        rows = hash_rows(layout, h["ids"], h["position"], ids[:cu[b]])[0].tolist()
    if BUG == "cross-request-leak":  # each window bounded by the buffer, not by its request
        rows = []
        for r in range(b):
            for j, t in enumerate(range(cu[r], cu[r + 1])):
                if drafts:
                    before, at = [], test["parents"][t]
                    while at >= 0:  # the draft's path, nearest first
                        before.append(ids[cu[r] + at])
                        at = test["parents"][cu[r] + at]
                else:
                    before = [ids[u] for u in reversed(range(cu[r], t))]
                before += [ids[u] for u in reversed(range(cu[r]))] + list(reversed(hists[r]["ids"]))
                k = min(pos[t], w, len(before))
                rows.append(hash_rows(layout, list(reversed(before[:k])), pos[t], [ids[t]])[0].tolist()[0])
    out = {"rows": rows}
    if enc == "engram":
        out["historyOut"] = [{"position": o["position"], "history": o["ids"]} for o in outs]
    elif enc == "vllm":
        out["lookbackTokenIdsOut"] = [[(o["under"] if o["ids"][i] == DEAD else o["ids"])[i]
                                       for i in reversed(range(len(o["ids"])))] + [-1] * (w - len(o["ids"]))
                                      for o in outs]
        out["lookbackDeadMaskOut"] = [[o["ids"][i] == DEAD for i in reversed(range(len(o["ids"])))]
                                      + [False] * (w - len(o["ids"])) for o in outs]
    elif enc == "onnxruntime":
        out["presentIds"] = [[layout["pad"]] * (w - len(o["ids"])) + o["ids"] for o in outs]
    elif enc == "slotCache":
        cache = list(test["slotCache"])
        for r, o in enumerate(outs):
            for p, x in o["writes"]:
                cache[slot_of(test, r, p)] = x
        out["slotCacheOut"] = cache
    return out


def accumulate(group, n, seed):
    layout = layout_of(group)
    v41 = layout["profile"] == "v4.1"
    state, digest = State(layout), hashlib.sha256()
    chunk = 1 << 16
    for at in range(0, n, chunk):
        ids = stream_ids(v41, layout["v"], seed, at, min(chunk, n - at))
        w = layout["max_ngram"] - 1
        hist = state.recent[-min(state.position, w):] if state.position and w else []
        rows, _ = hash_rows(layout, hist, state.position, ids)
        state.recent = (state.recent + [int(x) for x in ids[-w:]])[-w:] if w else []
        state.position += len(ids)
        digest.update(rows.astype("<i8").tobytes())
    return digest.hexdigest()


def handle(req):
    op = req.get("op")
    if op == "hello":
        return {"protocol": 1, "name": "numpy-adapter" + (f" (bug: {BUG})" if BUG else "")
                + (f" (variant: {VARIANT})" if VARIANT else ""), "version": "1",
                "suites": CLAIMED_SUITES,
                "profiles": CLAIMED_PROFILES, "features": ["segment-reset"] if SEGMENT_RESET else []}
    try:
        if op == "contract":
            if CONTRACT is not None:
                return {"contract": CONTRACT}
            return {"contract": None, "layers": layout_of(req)["layers"]}
        if op == "test":
            # "unsupported" is always a safe answer: the runner reports the test skipped, never failed
            # (but a suite in which no valid test passed, or a run that tests nothing, is not OK).
            if req["suite"] not in CLAIMED_SUITES or req["type"] in UNSUPPORTED_TYPES:
                return {"unsupported": f"{req['type']} of {req['suite']} is not implemented by this adapter run"}
            out = run_test(req["type"], req["group"], req["test"])
            return {"unsupported": req["type"]} if out is None else {"outputs": out}
        if op == "accumulate":
            return {"sha256": accumulate(req["group"], req["n"], req["seed"])}
        if op == "bye":
            return {"bye": True}
        return {"unsupported": f"op {op}"}
    except (ValueError, KeyError, TypeError, IndexError, OverflowError) as e:
        return {"refused": f"{type(e).__name__}: {e}"}


def main():
    global BUG, VARIANT, CONTRACT, CLAIMED_SUITES, CLAIMED_PROFILES, UNSUPPORTED_TYPES, SEGMENT_RESET
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bug", choices=list(BUGS) + list(RANDOM_ONLY_BUGS) + list(CONTROL_BUGS))
    ap.add_argument("--variant", choices=list(VARIANTS))
    ap.add_argument("--list-bugs", action="store_true", help="print {bug: flag} as JSON and exit")
    ap.add_argument("--list-random-bugs", action="store_true",
                    help="print {bug: what it does} for the bugs only the random cases find, as JSON, and exit")
    ap.add_argument("--claim", nargs="+", choices=SUITES, metavar="SUITE",
                    help="claim only these suites in the handshake (the others are skipped as not claimed)")
    ap.add_argument("--profiles", nargs="+", choices=["v4.1", "demo-v1"],
                    help="claim only these profiles (the other profile's tests are skipped, in every suite)")
    ap.add_argument("--unsupported", nargs="+", default=[], metavar="TYPE",
                    help='answer {"unsupported": ...} to these test types (e.g. FloatLookupTest): skipped, not failed')
    ap.add_argument("--contract", help="report this hash contract (e.g. written by `engram contract`)")
    ap.add_argument("--segment-reset", action="store_true",
                    help="declare the policy feature segment-reset (§HASH.12) and reset where a position restarts at 0")
    args = ap.parse_args()
    SEGMENT_RESET = args.segment_reset
    BUG = args.bug
    VARIANT = args.variant
    CLAIMED_SUITES = args.claim or SUITES
    CLAIMED_PROFILES = args.profiles or CLAIMED_PROFILES
    UNSUPPORTED_TYPES = set(args.unsupported)
    if args.list_bugs:
        print(json.dumps(BUGS))
        return
    if args.list_random_bugs:
        print(json.dumps(RANDOM_ONLY_BUGS))
        return
    if args.contract:
        with open(args.contract, encoding="utf-8") as f:
            CONTRACT = json.load(f)
    for line in sys.stdin:
        req = json.loads(line)
        print(json.dumps(handle(req)), flush=True)
        if req.get("op") == "bye":
            break


if __name__ == "__main__":
    main()
