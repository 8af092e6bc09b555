"""The numpy port: an Engram implementation in numpy behind a complete JSON-lines adapter (spec/conformance.md
§CONF.2), the project's independent second implementation, in which known porting bugs are planted.

It is what a Python/JAX/Rust port writes to be checked by `engram conform --exec "..."`: read one JSON request
per line on stdin, answer with one JSON object per line on stdout (engram_adapter.protocol). The implementation
is a plain numpy port of every suite, written from the spec (not from the C++ reference), numpy and the Python
standard library only (unicodedata for the token map's normalizer). Its modules follow reference/ and spec/:
config (§CFG), layout (§RNG, §LAY), hash (§HASH, the packed calls of §HASH.10-12 included), storage (§STO),
token_map (§TOK), fusion (§FUS), bugs (the planted bugs and the hooks that read them), protocol (the answers).

  hash family (§RNG, §LAY, §HASH):  multipliers, layout, hash_v41, hash_demo, hash_state, accumulated
  serving call shapes (§HASH.10-12): serving_v41 (every encoding of §CON.7; --segment-reset declares §HASH.12)
  token map (§TOK):                 token_map
  tables (§STO):                    fp8_decode, table_lookup, tp_shard
  fusion (§FUS):                    gate_v41, gate_demo, short_conv_demo, engram_forward

Float outputs of the fusion suites are returned as the vectors carry them: {"float64": ..., "float32": ...}
(the float64 evaluation and the float32 mirror of §FUS.8, as Python float.hex() strings), bf16 values as
their bit patterns; the runner compares them with the group's tolerance (§FUS.9). Intermediate values are
returned for the table lookups (§STO.11) and not elsewhere (they are optional, §CONF.1).

Run (from the repository root; conformance/python is the package's directory):
      engram conform --vectors vectors --exec "env PYTHONPATH=conformance/python python3 -m engram_numpy_port"
      ... --exec "env PYTHONPATH=conformance/python python3 -m engram_numpy_port --claim hash_v41 --profiles v4.1"
          (a port that implements one suite of one profile: everything else is skipped)
      ... --exec "env PYTHONPATH=conformance/python python3 -m engram_numpy_port --claim table_lookup \\
                  --unsupported FloatLookupTest"
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

from .bugs import BUGS, CONTROL_BUGS, RANDOM_ONLY_BUGS, VARIANTS, configure, planted, variant  # noqa: F401
from .config import parse_config  # noqa: F401
from .fusion import act_quant, first_layer_rows, fp8_linear, gate_fn, rms_norm, rnd, seq_sum, v41_stream  # noqa: F401
from .hash import DEAD, State, check_ids, hash_rows, stream_ids  # noqa: F401
from .layout import build_layout, fingerprint, is_prime, layout_of, multipliers  # noqa: F401
from .storage import SyntheticTable, decode_row, float_table_rows, table_of  # noqa: F401
