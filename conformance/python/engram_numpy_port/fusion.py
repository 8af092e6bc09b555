"""§FUS gating and fusion (spec/fusion.md): the v4.1 gate and stream, the fp8 and bf16 wkv projections, the
demo-v1 gate, ShortConv (carried across calls too) and the forward of one layer."""
import bisect
import math
import struct

import numpy as np

from .bugs import planted, variant
from .hash import DEAD, State
from .layout import layout_of
from .storage import (BF16_NAN, E4M3_FINITE_POSITIVE, SyntheticTable, e4m3_value, e4m3_values, e8m0_value,
                      float_table_rows, to_bf16)

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
        if planted("no-signed-root"):
            return sigmoid(d, p)
    a = abs(d)
    if planted("plus-eps"):
        clamped = rnd(a + rnd(1e-6, p), p)  # NaN + eps is NaN
    else:
        clamped = a if a != a else max(a, rnd(1e-6, p))  # clamp_min keeps NaN
    root = rnd(math.sqrt(clamped), p)
    if profile == "v4.1" and planted("where-negative"):
        signed = -root if d < 0 else root
    elif (profile == "v4.1" and not planted("sign")) or (profile != "v4.1" and planted("copysign")):
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
    if masked and planted("skip-masked"):
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
    gate = 0.0 if masked and not planted("mask-ignored") else gate_fn(dot, p, "v4.1")
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
            if not planted("non-finite-activation"):
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
            if planted("wkv-block128"):
                sw = e8m0_value(w_scales[(n // 128) * kb + (b * 32) // 128])
            else:
                sw = e8m0_value(w_scales[(n // 32) * kb + b])
            sa = e8m0_value(scales[b])
            prods = [a[i] * e4m3[w_codes[n * inn + i]] for i in range(b * 32, b * 32 + 32)]
            if p == 64:
                for q in prods:
                    acc += q * sa * sw
            elif variant("fp8-gemm-flush"):  # every float32 operation under FTZ + DAZ (§FUS.9 forbids it here)
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
        eps = 1e-5 if planted("rms-norm-eps") else 0.0 if planted("gate-norm-eps-zero") else 2.0 ** -23  # torch's default
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
        eps = 2.0 ** -23 if planted("conv-norm-eps") else 1e-5
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
                    back = (j if planted("tap-order") else self.kernel - 1 - j) * self.dil
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
        eps = 2.0 ** -23 if planted("conv-norm-eps") else 1e-5
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
                if not planted("conv-rollback-kept", "conv-state-restart"):
                    del rows[len(rows) - k:]
                    depth -= k
                continue
            if call["op"] != "append":
                raise ValueError(f"unknown call op {call['op']!r}")
            steps, value = call["steps"], [fx(a) for a in call["value"]]
            if len(value) != steps * C:
                raise ValueError(f"a call's value has {len(value)} entries, expected {steps} x {C}")
            if planted("conv-state-restart"):
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
                        back = (j if planted("tap-order") else K - 1 - j) * dil
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
            if variant("bf16-gemm-flush", "bf16-gemm-flush-min-normal"):
                y[32] = bf16_gemm_flushing(ev, w, out, variant("bf16-gemm-flush-min-normal"))
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
