"""The planted bugs of the numpy port (spec/conformance.md §CONF.4, spec/vectors.md §VEC.12): the tables of
`--bug` and `--variant` names, and the hooks through which the other modules ask what this run plants.

A run plants at most one bug and one variant, chosen once by `configure` before the first request
(`python -m engram_numpy_port --bug NAME`); every rule reads them through `planted` and `variant`.
"""
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
# --variant NAME -> what the variant does (see the package's docstring, engram_numpy_port.__doc__).
VARIANTS = {
    "rollback-window-capacity": "a rollback window of exactly rollbackCapacity ids: rollback by more refused",
    "handoff-position-from": "a segment's history imported at position `from` (the index into ids)",
    "fork-refuses-existing": "a fork onto a name that exists is refused",
    "bf16-gemm-flush": "the bf16 wkv GEMM as oneDNN's AVX512-BF16 kernel: DAZ inputs, FTZ on every FMA and the cast",
    "bf16-gemm-flush-min-normal": "as bf16-gemm-flush, but flushing 2^-126 (the smallest normal) too",
    "fp8-gemm-flush": "the fp8 wkv GEMM's float32 operations under FTZ + DAZ",
}
# §HASH.12 is a policy a port declares, not a bug; it is chosen with the bug and the variant (--segment-reset).
_RUN = {"bug": None, "variant": None, "segment_reset": False}


def configure(bug=None, variant=None, segment_reset=False):
    """Choose this run's bug, variant and policy (once, before the first request: is_prime caches its answers)."""
    if bug is not None and bug not in {**BUGS, **RANDOM_ONLY_BUGS, **CONTROL_BUGS}:
        raise ValueError(f"no planted bug {bug!r}")
    if variant is not None and variant not in VARIANTS:
        raise ValueError(f"no variant {variant!r}")
    _RUN.update(bug=bug, variant=variant, segment_reset=bool(segment_reset))


def planted(*names):
    """Whether this run plants one of the bugs `names`."""
    return _RUN["bug"] in names


def variant(*names):
    """Whether this run follows one of the variants `names`."""
    return _RUN["variant"] in names


def segment_reset():
    """Whether this run declares and implements §HASH.12's segment-reset policy."""
    return _RUN["segment_reset"]


def chosen():
    """(bug, variant) of this run, each None when none was chosen."""
    return _RUN["bug"], _RUN["variant"]
