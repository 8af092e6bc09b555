"""Every public function refuses what the CLI refuses: a table of (function, argument, bad-input class) probes.

Each row calls one function with one bad argument and names what must be raised: TypeError for a wrong Python
type, engram.Error (a ValueError) for a value the rule refuses, with the argument's name and the value as it was
passed in the message. Beside them, values that are odd but valid must give what the canonical form gives (a
str '99092' is 99092; int32 ids hash as int64 ids), so that a rule refusing too much fails too.
scripts/python_probes.py holds a second list, kept out of these tests, run as a separate check.
"""
import re
import subprocess

import numpy as np
import pytest

import engram_conformance as engram
LAY = engram.Layout("v4.1")
U16 = np.zeros(8, dtype=np.uint16)
PARAMS = dict(hc=1, hidden=2, **{"in": 2}, kernel=2, dilation=1, key_w=np.ones((1, 2, 2)), key_b=np.zeros((1, 2)),
              norm1_w=np.ones((1, 2)), norm2_w=np.ones((1, 2)), value_w=np.ones((2, 2)), value_b=np.zeros(2),
              conv_norm_w=np.ones((1, 2)), conv_w=np.ones((2, 2)))


def with_param(**kw):
    return dict(PARAMS, **kw)


def masked(a):
    return np.ma.array(a, mask=[i % 2 for i in range(np.size(a))])


# (id, call, exception, regex the message must match). Grouped by function; each group covers the classes
# bool, float, integral float, non-decimal str, out of range low/high, beyond int64, None, wrong container,
# masked array, wrong dtype, out-of-range element, as the argument allows.
E, T = engram.Error, TypeError
PROBES = [
    # Layout: compressed_vocab_size, compressed_pad, profile, config
    ("layout-v-float", lambda: engram.Layout("v4.1", 99092.9), T, r"compressed_vocab_size: must be an integer in \[1, 2147483648\] .*got 99092\.9 \(a float"),
    ("layout-v-integral-float", lambda: engram.Layout("v4.1", 99092.0), T, r"compressed_vocab_size: .*got 99092\.0 \(a float"),
    ("layout-v-str-float", lambda: engram.Layout("v4.1", "99092.9"), E, r"compressed_vocab_size: .*got '99092\.9' \(a str that is not a decimal"),
    ("layout-v-str-plus", lambda: engram.Layout("v4.1", "+99092"), E, r"got '\+99092'"),
    ("layout-v-str-space", lambda: engram.Layout("v4.1", " 99092"), E, r"got ' 99092'"),
    ("layout-v-zero", lambda: engram.Layout("v4.1", 0), E, r"compressed_vocab_size: must be an integer in \[1, 2147483648\].*got 0$"),
    ("layout-v-too-big", lambda: engram.Layout("demo-v1", 2**31 + 1), E, r"got 2147483649$"),
    ("layout-v-beyond-int64", lambda: engram.Layout("v4.1", 2**64), E, r"got 18446744073709551616$"),
    ("layout-v-bool", lambda: engram.Layout("v4.1", True), T, r"got True \(a bool"),
    ("layout-v-numpy-float", lambda: engram.Layout("v4.1", np.float64(99092)), T, r"compressed_vocab_size: .*numpy\.float64"),
    ("layout-pad-float", lambda: engram.Layout("v4.1", compressed_pad=1.7), T, r"compressed_pad: .*got 1\.7 \(a float"),
    ("layout-pad-negative", lambda: engram.Layout("v4.1", compressed_pad=-1), E, r"compressed_pad: must be an integer in \[0, 2147483647\]"),
    ("layout-pad-not-below-v", lambda: engram.Layout("v4.1", compressed_pad=99092), E, r"compressed pad id 99092 is outside \[0, 99092\)"),
    ("layout-profile-ignored", lambda: engram.Layout("v4.1", profile="demo-v1"), E, r"profile: 'demo-v1' contradicts the shipped configuration 'v4.1'"),
    ("layout-profile-unknown", lambda: engram.Layout("v4.1", profile="v5"), E, r"profile: 'v5' is neither"),
    ("layout-profile-int", lambda: engram.Layout("v4.1", profile=4), T, r"profile: must be a str"),
    ("layout-config-int", lambda: engram.Layout(41), T, r"config: must be a config\.json path, a dict"),
    ("layout-config-missing-file", lambda: engram.Layout("/nonexistent/config.json", 100), E, r"/nonexistent/config\.json"),
    ("layout-from-group-empty", lambda: engram.Layout.from_group({}), E, r"group: no key 'config'"),
    ("layout-from-group-list", lambda: engram.Layout.from_group([]), T, r"group: must be a vector group"),
    # hash: ids, out, layout
    ("hash-ids-uint64-max", lambda: engram.hash(LAY, np.array([2**64 - 1], dtype=np.uint64)), E, r"ids: position 0 is 18446744073709551615: not a 64-bit integer"),
    ("hash-ids-2-63-list", lambda: engram.hash(LAY, [2**63]), E, r"ids: position 0 is 9223372036854775808: not a 64-bit integer"),
    ("hash-ids-float-array", lambda: engram.hash(LAY, np.array([1.0, 2.0])), T, r"ids: dtype float64; expected an integer dtype"),
    ("hash-ids-float-list", lambda: engram.hash(LAY, [1, 2.5]), T, r"ids: position 1 is 2\.5 \(a float, not an integer\)"),
    ("hash-ids-bool-array", lambda: engram.hash(LAY, np.array([True, False])), T, r"ids: dtype bool"),
    ("hash-ids-bool-in-list", lambda: engram.hash(LAY, [1, True]), T, r"ids: position 1 is True \(a bool"),
    ("hash-ids-masked", lambda: engram.hash(LAY, masked(np.arange(4))), T, r"ids: a numpy masked array"),
    ("hash-ids-str", lambda: engram.hash(LAY, "1,2,3"), T, r"ids: must be an array .*got '1,2,3' \(a str\)"),
    ("hash-ids-scalar", lambda: engram.hash(LAY, 5), T, r"ids: must be an array"),
    ("hash-ids-2d", lambda: engram.hash(LAY, [[1, 2], [3, 4]]), E, r"ids: shape \(2, 2\); expected one sequence \[T\]"),
    ("hash-ids-ragged", lambda: engram.hash(LAY, [[1, 2], [3]]), E, r"ids: ragged nested lists"),
    ("hash-ids-negative", lambda: engram.hash(LAY, [1, 2, -2]), E, r"ids: position 2 \(id -2\) is negative"),
    ("hash-ids-object-huge", lambda: engram.hash(LAY, np.array([2**64], dtype=object)), E, r"ids: position 0 is 18446744073709551616"),
    ("hash-out-int32", lambda: engram.hash(LAY, [1], out=np.zeros((1, 2, 24), dtype=np.int32)), T, r"out: .*got dtype int32"),
    ("hash-out-shape", lambda: engram.hash(LAY, [1], out=np.zeros((2, 2, 24), dtype=np.int64)), E, r"out: shape \(2, 2, 24\) but 1 ids need \(1, 2, 24\)"),
    ("hash-out-masked", lambda: engram.hash(LAY, [1], out=masked(np.zeros((1, 2, 24), dtype=np.int64))), T, r"out: must be a writable"),
    ("hash-out-readonly", lambda: engram.hash(LAY, [1], out=np.broadcast_to(np.zeros(1, dtype=np.int64), (1, 2, 24))), T, r"out: .*not C-contiguous or not writable"),
    ("hash-layout-str", lambda: engram.hash("v4.1", [1]), T, r"layout: must be an engram\.Layout, got a str"),
    # HashState
    ("state-capacity-float", lambda: engram.HashState(LAY, 2.5), T, r"rollback_capacity: .*got 2\.5"),
    ("state-capacity-negative", lambda: engram.HashState(LAY, -1), E, r"rollback_capacity: must be an integer in \[0, "),
    ("state-rollback-float", lambda: engram.HashState(LAY).rollback(1.5), T, r"k: must be an integer .*got 1\.5 \(a float"),
    ("state-rollback-bool", lambda: engram.HashState(LAY).rollback(True), T, r"k: .*got True \(a bool"),
    ("state-rollback-too-far", lambda: engram.HashState(LAY).rollback(1), E, r"rollback by 1 but only 0 ids were fed"),
    ("state-append-float", lambda: engram.HashState(LAY).append(np.array([0.5])), T, r"ids: dtype float64"),
    ("state-import-list", lambda: engram.HashState.import_(LAY, []), T, r"history: must be a dict"),
    ("state-import-wrong", lambda: engram.HashState.import_(LAY, {"position": 1}), E, r"history"),
    # token_map
    ("token-map-missing-file", lambda: engram.token_map("/nonexistent/tokenizer.json"), E, r"/nonexistent/tokenizer\.json: cannot open"),
    ("token-map-int", lambda: engram.token_map(5), T, r"tokenizer_json: must be a path"),
    ("token-map-bad-json", lambda: engram.token_map("{not json"), E, r"tokenizer\.json"),
    # decode_rows: codes, scales
    ("decode-codes-float", lambda: engram.decode_rows(np.full(32, 56.9), np.array([127])), T, r"codes: dtype float64; expected an integer dtype"),
    ("decode-codes-312", lambda: engram.decode_rows(np.full(32, 312), np.array([127])), E, r"codes: position 0 is 312: not an E4M3 code, an integer in \[0, 255\]"),
    ("decode-codes-negative", lambda: engram.decode_rows(np.full(32, -1, dtype=np.int8), np.array([127])), E, r"codes: position 0 is -1: not an E4M3 code"),
    ("decode-codes-bool", lambda: engram.decode_rows(np.zeros(32, dtype=bool), np.array([127])), T, r"codes: dtype bool"),
    ("decode-codes-masked", lambda: engram.decode_rows(masked(np.zeros(32, dtype=np.uint8)), np.array([127])), T, r"codes: a numpy masked array"),
    ("decode-scales-256", lambda: engram.decode_rows(np.zeros(32, dtype=np.uint8), [256]), E, r"scales: position 0 is 256: not an E8M0 scale"),
    ("decode-scales-shape", lambda: engram.decode_rows(np.zeros((2, 32), dtype=np.uint8), np.zeros(2, dtype=np.uint8)), E, r"scales: shape \(2,\) but codes of shape \(2, 32\) need \(2, 1\)"),
    ("decode-codes-width", lambda: engram.decode_rows(np.zeros(31, dtype=np.uint8), [1]), E, r"not a multiple of 32"),
    # tp_shard, head_shard: rows, world, rank, columns
    ("tp-shard-negative-rows", lambda: engram.tp_shard(-100, 4), E, r"rows: must be an integer in \[0, 4611686018427387904\].*got -100"),
    ("tp-shard-world-zero", lambda: engram.tp_shard(100, 0), E, r"world: must be an integer in \[1, 4096\].*got 0"),
    ("tp-shard-world-negative", lambda: engram.tp_shard(100, -4), E, r"world: .*got -4"),
    ("tp-shard-world-huge", lambda: engram.tp_shard(100, 10**9), E, r"world: .*got 1000000000"),
    ("tp-shard-world-float", lambda: engram.tp_shard(100, 4.0), T, r"world: .*got 4\.0 \(a float"),
    ("tp-shard-rank-outside", lambda: engram.tp_shard(100, 4, 4), E, r"rank: must be an integer in \[0, 3\]"),
    ("tp-shard-rows-str", lambda: engram.tp_shard("1e3", 4), E, r"rows: .*got '1e3'"),
    ("head-shard-columns-zero", lambda: engram.head_shard(0, 2, 0), E, r"columns: must be an integer in \[1, 258048\]"),
    ("head-shard-world-big", lambda: engram.head_shard(24, 5000, 0), E, r"world: .*got 5000"),
    ("head-shard-rank-none", lambda: engram.head_shard(24, 2, None), T, r"rank: .*got None"),
    # gates: dot/g, precision
    ("gate-v41-dot-str", lambda: engram.gate_v41("0.5"), T, r"dot: must be a real number .*got '0\.5' \(a str\)"),
    ("gate-v41-dot-bool", lambda: engram.gate_v41(True), T, r"dot: .*got True \(a bool\)"),
    ("gate-v41-dot-list", lambda: engram.gate_v41([0.5]), T, r"dot: must be a real number"),
    ("gate-v41-precision", lambda: engram.gate_v41(0.5, "float16"), E, r"precision: 'float16' is neither"),
    ("gate-demo-precision-int", lambda: engram.gate_demo(0.5, 32), T, r"precision: must be a str"),
    ("gate-demo-g-none", lambda: engram.gate_demo(None), T, r"g: must be a real number"),
    # fuse_v41_stream: bf16 arrays, eps, masked
    ("fuse-h-float64", lambda: engram.fuse_v41_stream(np.ones(8), U16, U16, U16, U16, 1e-6), T, r"h: dtype float64; expected uint16 or int16"),
    ("fuse-h-int64", lambda: engram.fuse_v41_stream(np.full(8, -1), U16, U16, U16, U16, 1e-6), T, r"h: dtype int64; expected uint16 or int16"),
    ("fuse-key-list-negative", lambda: engram.fuse_v41_stream(U16, [-1] * 8, U16, U16, U16, 1e-6), E, r"key: position 0 is -1: not a bf16 bit pattern, an integer in \[0, 65535\]"),
    ("fuse-value-list-float", lambda: engram.fuse_v41_stream(U16, U16, [1.0] * 8, U16, U16, 1e-6), T, r"value: position 0 is 1\.0 \(a float"),
    ("fuse-qw-masked", lambda: engram.fuse_v41_stream(U16, U16, U16, masked(U16), U16, 1e-6), T, r"q_weight: a numpy masked array"),
    ("fuse-eps-negative", lambda: engram.fuse_v41_stream(U16, U16, U16, U16, U16, -1), E, r"eps: must be a finite number >= 0 .*got -1"),
    ("fuse-eps-nan", lambda: engram.fuse_v41_stream(U16, U16, U16, U16, U16, float("nan")), E, r"eps: .*got nan"),
    ("fuse-eps-str", lambda: engram.fuse_v41_stream(U16, U16, U16, U16, U16, "1e-6"), T, r"eps: must be a real number"),
    ("fuse-masked-int", lambda: engram.fuse_v41_stream(U16, U16, U16, U16, U16, 1e-6, 1), T, r"masked: must be True or False, got 1"),
    # DemoParams, short_conv, demo_forward
    ("demo-params-size-float", lambda: engram.DemoParams(**with_param(hc=1.5)), T, r"params: hc: must be an integer in \[1, 9223372036854775807\].*got 1\.5"),
    ("demo-params-size-zero", lambda: engram.DemoParams(**with_param(kernel=0)), E, r"params: kernel: must be an integer in \[1, "),
    ("demo-params-size-beyond-int64", lambda: engram.DemoParams(**with_param(hidden=2**64)), E, r"params: hidden: .*got 18446744073709551616"),
    ("short-conv-size-huge", lambda: engram.short_conv(np.zeros((1, 2)), with_param(hidden=2**32)), E, r"demo-v1"),
    ("demo-params-unknown-key", lambda: engram.DemoParams(**with_param(hiden=2)), E, r"params: unknown key 'hiden'"),
    ("demo-params-missing-key", lambda: engram.DemoParams(**{k: v for k, v in PARAMS.items() if k != "conv_w"}), E, r"params: key 'conv_w' is missing"),
    ("demo-params-array-bool", lambda: engram.DemoParams(**with_param(key_b=np.zeros((1, 2), dtype=bool))), T, r"params: key_b: dtype bool"),
    ("demo-params-array-str", lambda: engram.DemoParams(**with_param(key_b=[["a", "b"]])), T, r"params: key_b: position \[0, 0\]: must be a real number"),
    ("short-conv-array-size", lambda: engram.short_conv(np.zeros((1, 2)), engram.DemoParams(**with_param(key_b=np.zeros(3)))), E, r"key_b"),
    ("short-conv-value-1d", lambda: engram.short_conv(np.zeros(2), PARAMS), E, r"value: shape \(2,\); ShortConv takes value\[T, hc \* hidden\]"),
    ("short-conv-value-masked", lambda: engram.short_conv(masked(np.zeros((1, 2))), PARAMS), T, r"value: a numpy masked array"),
    ("short-conv-params-list", lambda: engram.short_conv(np.zeros((1, 2)), [1]), T, r"params: must be a dict"),
    ("demo-forward-e-shape", lambda: engram.demo_forward(np.zeros((1, 3)), np.zeros((1, 1, 2)), PARAMS), E, r"e: shape \(1, 3\); the forward takes e\[T, in\]"),
    ("demo-forward-hidden-shape", lambda: engram.demo_forward(np.zeros((1, 2)), np.zeros((2, 1, 2)), PARAMS), E, r"hidden: shape \(2, 1, 2\)"),
    ("demo-forward-e-complex", lambda: engram.demo_forward(np.zeros((1, 2), dtype=complex), np.zeros((1, 1, 2)), PARAMS), T, r"e: dtype complex128"),
    # explain
    ("explain-position-outside", lambda: engram.explain(LAY, [1, 2, 3], position=10), E, r"position: must be an integer in \[0, 2\] \(a position of the 3 ids\), got 10"),
    ("explain-position-float", lambda: engram.explain(LAY, [1, 2, 3], position=1.0), T, r"position: .*got 1\.0 \(a float"),
    ("explain-position-empty", lambda: engram.explain(LAY, [], position=0), E, r"position: the ids are empty"),
    ("explain-ids-float", lambda: engram.explain(LAY, [0.5]), T, r"ids: position 0 is 0\.5"),
    # random cases
    ("random-seed-float", lambda: engram.random_cases("hash_v41", 1.5, 3), T, r"seed: must be an integer in \[0, 9223372036854775807\].*got 1\.5"),
    ("random-seed-negative", lambda: engram.random_cases("hash_v41", -1, 3), E, r"seed: .*got -1"),
    ("random-n-zero", lambda: engram.random_cases("hash_v41", 1, 0), E, r"n: must be an integer in \[1, 1000000\].*got 0"),
    ("random-n-huge", lambda: engram.random_cases("hash_v41", 1, 10**7, "HashTest"), E, r"n: .*got 10000000"),
    ("random-suite-unknown", lambda: engram.random_cases("nope", 1, 3), E, r"suite nope: no random generator"),
    ("random-type-int", lambda: engram.random_cases("hash_v41", 1, 3, 5), T, r"type: must be a str"),
]


@pytest.mark.parametrize("call, exc, pattern", [p[1:] for p in PROBES], ids=[p[0] for p in PROBES])
def test_bad_input_is_refused(call, exc, pattern):
    with pytest.raises(exc) as info:
        call()
    assert type(info.value) is exc, f"{type(info.value).__name__}: {info.value}"
    assert "incompatible function arguments" not in str(info.value)
    assert re.search(pattern, str(info.value)), str(info.value)


# Valid forms: each equals the canonical call's result.
IDS = [5, 0, 98000, -1, 17]
CANON = engram.hash(LAY, np.array(IDS, dtype=np.int64))
BITS = (np.arange(8, dtype=np.uint16) * 4099 + 16000) & 0x7FFF
ACCEPTED = [
    ("ids-list", lambda: engram.hash(LAY, IDS), CANON),
    ("ids-tuple", lambda: engram.hash(LAY, tuple(IDS)), CANON),
    ("ids-int32", lambda: engram.hash(LAY, np.array(IDS, dtype=np.int32)), CANON),
    ("ids-big-endian", lambda: engram.hash(LAY, np.array(IDS, dtype=">i8")), CANON),
    ("ids-strided", lambda: engram.hash(LAY, np.repeat(np.array(IDS, dtype=np.int64), 2)[::2]), CANON),
    ("ids-uint64-small", lambda: engram.hash(LAY, np.array([5, 0, 98000], dtype=np.uint64)), CANON[:3]),
    ("ids-numpy-scalars", lambda: engram.hash(LAY, [np.int32(i) for i in IDS]), CANON),
    ("ids-decimal-str", lambda: engram.hash(LAY, [str(i) for i in IDS]), CANON),
    ("ids-range", lambda: engram.hash(LAY, range(3)), engram.hash(LAY, np.arange(3))),
    ("layout-v-str", lambda: engram.Layout("v4.1", "99092").multipliers, LAY.multipliers),
    ("layout-v-numpy-int", lambda: engram.Layout("v4.1", np.int64(99092)).multipliers, LAY.multipliers),
    ("tp-shard-str", lambda: engram.tp_shard("100", "4"), engram.tp_shard(100, 4)),
    ("tp-shard-rank", lambda: engram.tp_shard(100, 4, 3), (75, 100)),
    ("tp-shard-world-max", lambda: len(engram.tp_shard(10, 4096)), 4096),
    ("fuse-int16-bits", lambda: engram.fuse_v41_stream(BITS.view(np.int16), BITS, BITS, BITS, BITS, 1e-6)["out_bf16"],
     engram.fuse_v41_stream(BITS, BITS, BITS, BITS, BITS, 1e-6)["out_bf16"]),
    ("fuse-list-bits", lambda: engram.fuse_v41_stream(BITS.tolist(), BITS, BITS, BITS, BITS, 0)["out_bf16"],
     engram.fuse_v41_stream(BITS, BITS, BITS, BITS, BITS, 0.0)["out_bf16"]),
    ("decode-int64-codes", lambda: engram.decode_rows(np.arange(64, dtype=np.int64), [127, 120]),
     engram.decode_rows(np.arange(64, dtype=np.uint8), np.array([127, 120], dtype=np.uint8))),
    ("gate-int-dot", lambda: engram.gate_v41(2), engram.gate_v41(2.0)),
    ("gate-numpy-float32", lambda: engram.gate_v41(np.float32(0.5)), engram.gate_v41(0.5)),
    ("explain-position-str", lambda: engram.explain(LAY, [1, 2, 3], "2"), engram.explain(LAY, [1, 2, 3])[2]),
]


@pytest.mark.parametrize("call, expected", [a[1:] for a in ACCEPTED], ids=[a[0] for a in ACCEPTED])
def test_valid_forms_equal_the_canonical_call(call, expected):
    got = call()
    if isinstance(expected, np.ndarray):
        assert isinstance(got, np.ndarray) and got.dtype == expected.dtype and np.array_equal(got, expected)
    else:
        assert got == expected


def test_every_public_function_has_a_probe():
    """Each function of engram's API is probed with at least one bad input (the table above)."""
    probed = {p[0].split("-")[0] for p in PROBES}
    public = {"layout", "hash", "state", "token", "decode", "tp", "head", "gate", "fuse", "demo", "short", "explain",
              "random"}
    assert public <= probed, public - probed


def test_ml_dtypes_arrays_are_their_bits():
    ml = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed: its bf16/FP8 arrays are not tested")
    vals = np.array([1.0, -2.5, 0.0, 3.0, 0.125, 7.0, -1.0, 2.0])
    b = vals.astype(ml.bfloat16)
    assert np.array_equal(engram.fuse_v41_stream(b, b, b, b, b, 1e-6)["out_bf16"],
                          engram.fuse_v41_stream(*(b.view(np.uint16),) * 5, 1e-6)["out_bf16"])
    codes = np.arange(32, dtype=np.uint8)
    assert np.array_equal(engram.decode_rows(codes.view(ml.float8_e4m3fn), [127]), engram.decode_rows(codes, [127]))
    with pytest.raises(TypeError, match=r"scales: dtype float8_e4m3fn"):
        engram.decode_rows(codes, np.array([127], dtype=np.uint8).view(ml.float8_e4m3fn))


def test_messages_name_the_clis_ranges(engram_cli):
    """The bounds and their reasons are the CLI's: world as `engram lookup --world`, V as --compressed-vocab-size."""
    def cli_bounds(args, option):
        r = subprocess.run([engram_cli, *args], capture_output=True, text=True)
        assert r.returncode != 0, r.stdout
        line = next(x for x in r.stderr.splitlines() if x.startswith(option + ":"))
        return line[line.index("["):].split(", got")[0]

    def our_bounds(call):
        with pytest.raises(engram.Error) as e:
            call()
        return str(e.value)[str(e.value).index("["):].split(", got")[0]

    assert our_bounds(lambda: engram.tp_shard(100, 0)) == cli_bounds(["lookup", "--world", "0"], "--world")
    assert our_bounds(lambda: engram.Layout("v4.1", 0)) == cli_bounds(["layout", "--compressed-vocab-size", "0"],
                                                                       "--compressed-vocab-size")


def test_layout_with_a_profile_is_honoured_from_a_dict_and_refused_against_a_shipped_config():
    v41 = engram.Layout("v4.1", profile="v4.1")  # the shipped one's own profile: accepted
    assert v41.profile == "v4.1"
    with pytest.raises(engram.Error, match="contradicts"):
        engram.Layout("demo-v1", profile="v4.1")
