#!/usr/bin/env python3
"""Cross-check data for spec/fusion.md (§FUS.2-§FUS.7), computed by an independent numpy
implementation in float64 and in float32.

Written from DeepSeek's code as read (spec/sources.md [SRC-V41], [SRC-DEMO]) and the spec text in numpy's array style,
NOT translated from reference/fusion.cc. In particular the float32 mode uses numpy's own
reductions (np.sum: pairwise summation) and numpy's float32 exp, so it is a *different*
float32 implementation from the reference's sequential mirror: the C++ test checks that it
passes the tolerance rule of §FUS.9 against the reference's float64 values.

  v4.1 (per token and stream): h = x_c (bf16 -> float), w = q_weight_c * k_weight_c,
    rstd = rsqrt(mean(h^2) + eps) * rsqrt(mean(k^2) + eps),
    dot = sum(h * w * k) * rstd * dim**-0.5,
    gate = sigmoid(copysign(sqrt(max(|dot|, 1e-6)), dot)), 0 where masked,
    out = bf16(h + gate * v).
  fp8 wkv: activations quantized per 32 values with a power-of-two scale
    2^ceil(log2(max(amax, 1e-4) / 448)), weights E4M3 [out, in] with E8M0 scales per 32x32
    block, scale index [n // 32, k // 32].
  demo-v1: key_c = Linear_c(e) + b, g = sum(RMSNorm1_c(key_c) * RMSNorm2_c(hidden_c)) / sqrt(H)
    (RMSNorm eps = float32 eps), gate = sigmoid(sqrt(max(|g|, 1e-6)) * sign(g)),
    value = gate * (Linear_v(e) + b_v); ShortConv = SiLU(depthwise causal conv(dilation d,
    kernel K, padding (K-1)*d, truncated) of RMSNorm_c(value) with eps 1e-5); out = value + conv.

Usage: numpy_fusion.py --out FILE [--seed S]
Writes {"numpy_version", "v41": [...], "gates": [...], "fp8": [...], "demo": [...]}; every
float is written with float.hex() (exact). Read by NumpyCrosscheck.FusionFileIfPresent
(reference/fusion_test.cc) through the environment variable ENGRAM_NUMPY_FUSION_CROSSCHECK.
"""

import argparse
import json
import math

import numpy as np

F32 = np.float32
F64 = np.float64


def hexes(a):
    return [float(v).hex() for v in np.asarray(a, dtype=F64).ravel()]


def bf16_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint32) << 16).view(F32)


def f32_to_bf16(x):
    """float32 -> bf16 bits, round to nearest even (the usual bit trick), NaN -> 0x7FC0."""
    b = np.asarray(x, dtype=F32).view(np.uint32).astype(np.uint64)
    rounded = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(np.asarray(x, dtype=F32)), np.uint16(0x7FC0), rounded)


def random_bf16(rng, n, scale=1.0):
    return f32_to_bf16((rng.standard_normal(n) * scale).astype(F32))


# ---------------------------------------------------------------- v4.1 post-wkv

def v41_stream(h_bits, k_bits, v_bits, qw_bits, kw_bits, eps, masked, dt):
    h = bf16_to_f32(h_bits).astype(dt)
    k = bf16_to_f32(k_bits).astype(dt)
    v = bf16_to_f32(v_bits).astype(dt)
    w = bf16_to_f32(qw_bits).astype(dt) * bf16_to_f32(kw_bits).astype(dt)
    dim = h.shape[-1]
    e = dt(eps)
    rstd_h = dt(1) / np.sqrt(np.sum(h * h, dtype=dt) / dt(dim) + e)
    rstd_k = dt(1) / np.sqrt(np.sum(k * k, dtype=dt) / dt(dim) + e)
    rstd = rstd_h * rstd_k
    dot = np.sum(h * w * k, dtype=dt) * rstd * dt(dim ** -0.5)
    gate = dt(0) if masked else gate_v41(dot, dt)
    out = h + gate * v
    scale = float(np.sum(np.abs(h.astype(F64) * w.astype(F64) * k.astype(F64)))) * float(rstd) * dim ** -0.5
    return {"rstd": rstd, "dot": dot, "gate": gate, "out": out, "scale": scale}


def gate_v41(dot, dt):
    with np.errstate(invalid="ignore"):
        root = np.sqrt(np.maximum(np.abs(dt(dot)), dt(1e-6)))  # np.maximum propagates NaN
        s = np.copysign(root, dt(dot))
        return dt(1) / (dt(1) + np.exp(-s))


def gate_demo(g, dt):
    with np.errstate(invalid="ignore"):
        g = dt(g)
        root = np.sqrt(np.maximum(np.abs(g), dt(1e-6)))
        sign = dt((g > 0) * 1.0 - (g < 0) * 1.0)  # torch.sign: 0 for +-0 and NaN
        s = root * sign
        return dt(1) / (dt(1) + np.exp(-s))


# ---------------------------------------------------------------- fp8 wkv

def e4m3_values():
    vals = []
    for c in range(256):
        e, m = (c >> 3) & 0xF, c & 7
        v = m * 2.0 ** -9 if e == 0 else (8 + m) * 2.0 ** (e - 10)
        if (c & 0x7F) == 0x7F:
            v = math.nan
        vals.append(-v if c & 0x80 else v)
    return np.array(vals, dtype=F64)


E4M3 = e4m3_values()


def e4m3_encode(x):
    """Round to the nearest E4M3fn value, ties to the even code, saturate at 448."""
    x = np.asarray(x, dtype=F64)
    pos = E4M3[:0x7F]  # codes 0..126, increasing
    a = np.minimum(np.abs(x), 448.0)
    hi = np.searchsorted(pos, a, side="left")
    lo = np.maximum(hi - 1, 0)
    dlo, dhi = a - pos[lo], pos[hi] - a
    code = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(lo % 2 == 0, lo, hi)))
    code = np.where(pos[hi] == a, hi, code)
    return (code | np.where(np.signbit(x), 0x80, 0)).astype(np.uint8)


def act_quant(x_bits):
    x = bf16_to_f32(x_bits).reshape(-1, 32)
    amax = np.maximum(np.abs(x).max(axis=1), F32(1e-4))
    t = (amax * F32(1.0 / 448.0)).astype(F32)
    exp = np.ceil(np.log2(t.astype(F64))).astype(np.int64)  # t is normal: exact ceil(log2)
    scale = np.ldexp(np.ones_like(exp, dtype=F64), exp)
    codes = e4m3_encode((x.astype(F64) / scale[:, None]).astype(F32))
    return codes.ravel(), (exp + 127).astype(np.uint8)


def fp8_gemm(a_codes, a_scales, w_codes, w_scales, dt):
    out, k = w_codes.shape
    a = E4M3[a_codes].reshape(k // 32, 32)
    sa = np.ldexp(1.0, a_scales.astype(np.int64) - 127)
    w = E4M3[w_codes].reshape(out, k // 32, 32)
    sw = np.ldexp(1.0, w_scales.astype(np.int64) - 127)[np.arange(out) // 32]  # [out, k/32]
    if dt is F64:
        return np.sum(np.einsum("nbi,bi->nb", w, a) * sa[None, :] * sw, axis=1)
    partial = np.sum((w.astype(F32) * a.astype(F32)[None]), axis=2, dtype=F32)  # [out, k/32]
    acc = np.zeros(out, dtype=F32)
    for b in range(k // 32):
        acc = acc + partial[:, b] * F32(sa[b]) * sw[:, b].astype(F32)
    return acc


# ---------------------------------------------------------------- demo-v1

def rmsnorm(x, w, eps, dt):
    x = x.astype(dt)
    ms = np.sum(x * x, axis=-1, keepdims=True, dtype=dt) / dt(x.shape[-1])
    return x * (dt(1) / np.sqrt(ms + dt(eps))) * w.astype(dt)


def demo_forward(p, e, hidden, dt):
    hc, H, K, d = p["hc"], p["hidden"], p["kernel"], p["dilation"]
    T = e.shape[0]
    e = e.astype(dt)
    vp = e @ p["value_w"].astype(dt).T + p["value_b"].astype(dt)  # [T, H]
    gates = np.zeros((T, hc), dtype=dt)
    for c in range(hc):
        key = e @ p["key_w"][c].astype(dt).T + p["key_b"][c].astype(dt)
        nk = rmsnorm(key, p["norm1_w"][c], np.finfo(F32).eps, dt)
        nq = rmsnorm(hidden[:, c, :], p["norm2_w"][c], np.finfo(F32).eps, dt)
        g = np.sum(nk * nq, axis=-1, dtype=dt) / dt(math.sqrt(H))
        gates[:, c] = [gate_demo(gi, dt) for gi in g]
    value = gates[:, :, None] * vp[:, None, :]  # [T, hc, H]
    normed = np.concatenate([rmsnorm(value[:, c, :], p["conv_norm_w"][c], 1e-5, dt) for c in range(hc)], axis=-1)
    pad = (K - 1) * d
    xp = np.concatenate([np.zeros((pad, hc * H), dtype=dt), normed], axis=0)  # left zero padding
    conv = np.zeros((T, hc * H), dtype=dt)
    for j in range(K):  # cross-correlation: tap j reads x[t + j*d - pad]
        conv = conv + p["conv_w"][:, j].astype(dt)[None, :] * xp[j * d: j * d + T]
    act = conv / (dt(1) + np.exp(-conv))
    out = value + act.reshape(T, hc, H)
    return {"gates": gates, "value": value, "act": act, "output": out}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20260501)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    doc = {"numpy_version": np.__version__, "v41": [], "gates": [], "fp8": [], "demo": []}

    dim = 64
    for i in range(24):
        scale_h = [1.0, 1e-3, 40.0][i % 3]
        h, k, v = random_bf16(rng, dim, scale_h), random_bf16(rng, dim), random_bf16(rng, dim)
        qw, kw = random_bf16(rng, dim, 0.5), random_bf16(rng, dim, 2.0)
        if i == 5:
            h[:] = 0  # all-zero stream: mean 0, rstd = eps**-0.5, dot = +0
        if i == 7:
            k = h.copy()
        eps = [1e-20, 1e-6, 1e-20, 0.5][i % 4]
        masked = i % 6 == 4
        r64 = v41_stream(h, k, v, qw, kw, eps, masked, F64)
        r32 = v41_stream(h, k, v, qw, kw, eps, masked, F32)
        doc["v41"].append({
            "h": h.tolist(), "key": k.tolist(), "value": v.tolist(), "q_weight": qw.tolist(),
            "k_weight": kw.tolist(), "eps": float(eps).hex(), "masked": masked,
            "f64": {"rstd": float(r64["rstd"]).hex(), "dot": float(r64["dot"]).hex(),
                    "gate": float(r64["gate"]).hex(), "out": hexes(r64["out"]), "dot_scale": float(r64["scale"]).hex()},
            "f32": {"rstd": float(r32["rstd"]).hex(), "dot": float(r32["dot"]).hex(),
                    "gate": float(r32["gate"]).hex(), "out_bf16": f32_to_bf16(r32["out"]).tolist()},
        })

    dots = [0.0, -0.0, 1e-7, -1e-7, 1e-6, -1e-6, 2e-6, 0.25, -0.25, 3.0, -7.5, 1e3, -1e3, math.inf, -math.inf, math.nan]
    dots += list(rng.standard_normal(16) * 2)
    for x in dots:
        doc["gates"].append({"x": float(x).hex(),
                             "v41_f64": float(gate_v41(x, F64)).hex(), "v41_f32": float(gate_v41(x, F32)).hex(),
                             "demo_f64": float(gate_demo(x, F64)).hex(), "demo_f32": float(gate_demo(x, F32)).hex()})

    for i in range(4):
        k_in, out = 64, 40
        x = random_bf16(rng, k_in, [1.0, 1e-6, 300.0, 0.01][i])
        w_codes = rng.integers(0, 256, size=(out, k_in)).astype(np.uint8)
        w_codes[(w_codes & 0x7F) == 0x7F] = 0x3C  # no NaN codes
        w_scales = rng.integers(110, 135, size=((out + 31) // 32, k_in // 32)).astype(np.uint8)
        a_codes, a_scales = act_quant(x)
        y64 = fp8_gemm(a_codes, a_scales, w_codes, w_scales, F64)
        y32 = fp8_gemm(a_codes, a_scales, w_codes, w_scales, F32)
        doc["fp8"].append({"x": x.tolist(), "w_codes": w_codes.ravel().tolist(), "w_scales": w_scales.ravel().tolist(),
                           "out": out, "in": k_in, "a_codes": a_codes.tolist(), "a_scales": a_scales.tolist(),
                           "y64": hexes(y64), "y32_bf16": f32_to_bf16(y32).tolist()})

    for i in range(3):
        hc, H, n_in, K, d, T = 2, 16, 32, 4, 3, 9
        f = lambda *shape, s=1.0: (rng.standard_normal(shape) * s).astype(F32)
        p = {"hc": hc, "hidden": H, "in": n_in, "kernel": K, "dilation": d,
             "key_w": f(hc, H, n_in, s=0.2), "key_b": f(hc, H, s=0.1), "norm1_w": f(hc, H, s=0.5) + F32(1),
             "norm2_w": f(hc, H, s=0.5) + F32(1), "value_w": f(H, n_in, s=0.2), "value_b": f(H, s=0.1),
             "conv_norm_w": f(hc, H, s=0.5) + F32(1), "conv_w": f(hc * H, K, s=0.5)}
        e, hidden = f(T, n_in), f(T, hc, H, s=[1.0, 3.0, 0.1][i])
        r64 = demo_forward(p, e, hidden, F64)
        r32 = demo_forward(p, e, hidden, F32)
        case = {k: (v if isinstance(v, int) else hexes(v)) for k, v in p.items()}
        case.update({"steps": T, "e": hexes(e), "hidden_states": hexes(hidden)})
        case["f64"] = {k: hexes(v) for k, v in r64.items()}
        case["f32"] = {k: hexes(v) for k, v in r32.items()}
        doc["demo"].append(case)

    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
    print(f"numpy_fusion: {len(doc['v41'])} v4.1 streams, {len(doc['gates'])} gate inputs, "
          f"{len(doc['fp8'])} fp8 GEMMs, {len(doc['demo'])} demo sequences -> {args.out}")


if __name__ == "__main__":
    main()
