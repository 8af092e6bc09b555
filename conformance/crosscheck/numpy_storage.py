#!/usr/bin/env python3
"""Cross-check data for spec/storage.md (§STO.1-§STO.4), computed independently of reference/storage.cc.

Written from DeepSeek's code as read (spec/sources.md [SRC-V41]) and spec/storage.md, not translated from the C++ code.

FP8 decode of all 256 x 256 (E4M3fn code, E8M0 scale) pairs -> bf16 bits, three ways that must agree
(any NaN matches any NaN; the file records NaN as 0x7FC0):
  A. numpy: E4M3fn by its definition (sign, 4-bit exponent bias 7, 3-bit mantissa, subnormals m*2^-9,
     0x7F/0xFF NaN) in float64, cast to float32 (exact); scale 2.0**(s-127) cast to float32 (2^-127 is
     a float32 subnormal, exact); the float32 product (numpy float32 multiply, as torch's
     weight.float() * scale.float()); bf16 by round-to-nearest-even on the uint32 bit pattern.
  B. exact rationals: Python Fraction of code value times 2^(s-127), rounded once to bf16 (8 significant
     bits, emin -126, subnormal quantum 2^-133, overflow to inf at 2^128), ties to even; no floats.
  C. ml_dtypes (PyPI): uint8 viewed as float8_e4m3fn / float8_e8m0fnu, astype(float32), float32 product,
     astype(bfloat16). Skipped (and reported) when ml_dtypes is not installed.

Safetensors reader: writes FILE.safetensors with the `safetensors` package (numpy backend, ml_dtypes
float8 arrays -> dtypes "F8_E4M3" / "F8_E8M0") holding a small table under `layers.1.engram.embed`
plus unrelated tensors and metadata, and FILE.packed with the same rows in the packed layout (codes then
scales); the JSON lists every row's bytes (hex) and its bf16 decode by method A.

Usage: numpy_storage.py --out FILE.json [--rows N] [--seed S]
The JSON is read by the GoogleTests NumpyStorageCrosscheck.* (reference/storage_test.cc) through the
environment variable ENGRAM_NUMPY_STORAGE_CROSSCHECK.
"""

import argparse
import json
import os
import sys
from fractions import Fraction

import numpy as np

try:
    import ml_dtypes
except ImportError:  # method C is optional
    ml_dtypes = None

NAN_BF16 = 0x7FC0


def e4m3_value(code):
    """(sign, Fraction magnitude) or None for NaN, by the definition of E4M3fn."""
    sign = -1 if code & 0x80 else 1
    e = (code >> 3) & 0xF
    m = code & 0x7
    if e == 0xF and m == 0x7:
        return None
    if e == 0:
        mag = Fraction(m, 2**9)
    else:
        mag = Fraction(8 + m, 1) * Fraction(2) ** (e - 10)
    return sign, mag


def bf16_bits_of_exact(sign, mag):
    """Round sign*mag (Fraction, >= 0) to bf16, nearest-even, return the 16-bit pattern."""
    sbit = 0x8000 if sign < 0 else 0
    if mag == 0:
        return sbit
    # exponent E with 2^E <= mag < 2^(E+1)
    e = mag.numerator.bit_length() - mag.denominator.bit_length()
    if Fraction(2) ** e > mag:
        e -= 1
    quantum = Fraction(2) ** (max(e, -126) - 7)
    q = mag / quantum
    n = q.numerator // q.denominator
    rest = q - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
        n += 1
    value = n * quantum
    if value >= Fraction(2) ** 128:
        return sbit | 0x7F80
    if value == 0:
        return sbit
    # encode: exponent field and 7-bit fraction
    e2 = value.numerator.bit_length() - value.denominator.bit_length()
    if Fraction(2) ** e2 > value:
        e2 -= 1
    if e2 < -126:  # subnormal: value = f * 2^-133
        f = value / Fraction(2) ** -133
        assert f.denominator == 1 and 0 < f < 128
        return sbit | int(f)
    f = value / Fraction(2) ** (e2 - 7) - 128
    assert f.denominator == 1 and 0 <= f < 128
    return sbit | ((e2 + 127) << 7) | int(f)


def method_a():
    codes = np.arange(256)
    e4m3 = np.array([np.nan if e4m3_value(c) is None else e4m3_value(c)[0] * float(e4m3_value(c)[1]) for c in codes],
                    dtype=np.float64)
    # keep -0.0 for code 0x80
    e4m3[0x80] = -0.0
    e4m3_f32 = e4m3.astype(np.float32)
    scales = np.array([np.nan if s == 0xFF else 2.0 ** (s - 127) for s in range(256)], dtype=np.float64)
    scales_f32 = scales.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        prod = scales_f32[:, None] * e4m3_f32[None, :]  # [scale][code], float32
    u = prod.view(np.uint32).astype(np.uint64)
    bf = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    bf[np.isnan(prod)] = NAN_BF16
    return bf, e4m3_f32, scales_f32


def method_b():
    out = np.zeros((256, 256), dtype=np.uint16)
    for s in range(256):
        for c in range(256):
            v = e4m3_value(c)
            if v is None or s == 0xFF:
                out[s, c] = NAN_BF16
            else:
                out[s, c] = bf16_bits_of_exact(v[0], v[1] * Fraction(2) ** (s - 127))
    return out


def method_c():
    codes = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    scales = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        prod = scales[:, None] * codes[None, :]
    return prod.astype(ml_dtypes.bfloat16).view(np.uint16), codes, scales


def is_nan_bf16(a):
    return ((a & 0x7F80) == 0x7F80) & ((a & 0x7F) != 0)


def compare(name, ref, other):
    same = (ref == other) | (is_nan_bf16(ref) & is_nan_bf16(other))
    bad = np.argwhere(~same)
    if bad.size:
        s, c = bad[0]
        sys.exit(f"numpy_storage: method {name} disagrees with A on {len(bad)} pairs, first scale 0x{s:02x} code "
                 f"0x{c:02x}: A 0x{ref[s, c]:04x}, {name} 0x{other[s, c]:04x}")
    return int(same.sum())


def write_tables(base, rows, seed, bf_a):
    """A small table in both file layouts; returns the JSON description."""
    rng = np.random.default_rng(seed)
    head_dim = 256
    codes = rng.integers(0, 256, size=(rows, head_dim), dtype=np.uint8)
    scales = rng.integers(0, 256, size=(rows, head_dim // 32), dtype=np.uint8)
    scales[0, :] = [0x00, 0xFF, 127, 110, 130, 1, 254, 200]  # edge scales in row 0
    codes[1, :8] = [0x00, 0x80, 0x7F, 0xFF, 0x01, 0x81, 0x7E, 0xFE]  # +-0, NaN, subnormal, max in row 1
    prefix = "layers.1.engram.embed"
    st_path = base + ".safetensors"
    if ml_dtypes is not None:
        from safetensors.numpy import save_file
        tensors = {
            "layers.0.attn.wq.weight": rng.standard_normal((4, 8)).astype(np.float32),
            prefix + ".weight": codes.view(ml_dtypes.float8_e4m3fn),
            prefix + ".scale": scales.view(ml_dtypes.float8_e8m0fnu),
            "layers.14.engram.embed.weight": codes[:3].view(ml_dtypes.float8_e4m3fn),
        }
        save_file(tensors, st_path, metadata={"format": "pt", "note": "engram storage cross-check"})
        writer = "safetensors " + __import__("safetensors").__version__
    else:
        writer = None
    packed_path = base + ".packed"
    np.concatenate([codes, scales], axis=1).tofile(packed_path)
    rows_json = []
    for r in range(rows):
        bf = [int(bf_a[scales[r, j // 32], codes[r, j]]) for j in range(head_dim)]
        rows_json.append({"codes": codes[r].tobytes().hex(), "scales": scales[r].tobytes().hex(),
                          "bf16": "".join(f"{v:04x}" for v in bf)})
    return {"safetensors": st_path if writer else None, "writer": writer, "packed": packed_path,
            "prefix": prefix, "rows": rows, "head_dim": head_dim, "row_bytes": rows_json}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rows", type=int, default=40)
    ap.add_argument("--seed", type=int, default=20260)
    args = ap.parse_args()

    bf_a, e4m3_f32, scales_f32 = method_a()
    bf_b = method_b()
    agree_b = compare("B", bf_a, bf_b)
    agree_c = None
    if ml_dtypes is not None:
        bf_c, codes_c, scales_c = method_c()
        agree_c = compare("C", bf_a, bf_c)
        # the element decodes agree too (NaN with NaN)
        for name, x, y in (("e4m3", e4m3_f32, codes_c), ("e8m0", scales_f32, scales_c)):
            ok = (x.view(np.uint32) == y.view(np.uint32)) | (np.isnan(x) & np.isnan(y))
            if not ok.all():
                sys.exit(f"numpy_storage: ml_dtypes {name} disagrees at {np.argwhere(~ok)[0]}")

    base = os.path.splitext(os.path.abspath(args.out))[0] + "_table"
    doc = {
        "numpy_version": np.__version__,
        "ml_dtypes_version": ml_dtypes.__version__ if ml_dtypes is not None else None,
        "methods_agreeing": {"B_exact": agree_b, "C_ml_dtypes": agree_c},
        "e4m3_f32_bits": [int(v) for v in e4m3_f32.view(np.uint32)],
        "e8m0_f32_bits": [int(v) for v in scales_f32.view(np.uint32)],
        "bf16": ["".join(f"{int(v):04x}" for v in bf_a[s]) for s in range(256)],
        "tables": write_tables(base, args.rows, args.seed, bf_a),
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    print(f"numpy_storage: 65536 pairs; exact-rational oracle agrees on {agree_b}, ml_dtypes on {agree_c}; "
          f"tables: {doc['tables']['writer'] or 'no safetensors (ml_dtypes missing)'}", file=sys.stderr)


if __name__ == "__main__":
    main()
