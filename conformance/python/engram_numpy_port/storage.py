"""§STO the stored tables (spec/storage.md): FP8 E4M3 codes with E8M0 scales decoded to bf16 rows, the
synthetic and float tables, and the tensor-parallel shards (row and head sharding)."""
import functools
import math

import numpy as np

from .bugs import planted


M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
BF16_NAN = 0x7FC0


def e4m3_value(code):
    """§STO.1 one E4M3fn code -> its exact value (a Python float); NaN for 0x7F / 0xFF."""
    s, e, m = code >> 7, (code >> 3) & 0xF, code & 0x7
    if code & 0x7F == 0x7F and not planted("nan-decoded-finite"):  # the bug: (8 + 7) * 2^(15 - 10) = 480
        return float("nan")
    v = m * 2.0 ** -9 if e == 0 else (8 + m) * 2.0 ** (e - 10)
    return -v if s else v


def e8m0_value(scale):
    """§STO.2 2^(s-127), NaN for 0xFF (as a Python float: exact, 2^-127 included).

    --bug e8m0-shift: the shortcut float32(bits = s << 23): 0x00 -> 0.0, 0xFF -> inf.
    --bug e8m0-pow-inf: float32 pow(2, s - 127) (sglang's NPU decode): 0xFF -> inf, the others exact.
    """
    if planted("e8m0-shift"):
        return float(np.array([scale << 23], dtype=np.uint32).view(np.float32)[0])
    if planted("nan-decoded-finite") and scale == 0xFF:
        return float("inf")  # 2^128 as a float32 (ldexp(1, 128)), beyond its range
    if planted("e8m0-pow-inf") and scale == 0xFF:
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
    # uint64 constants: numpy < 2 refuses uint64 >> a Python int on a 0-d array (no safe common type)
    sixteen = np.uint64(16)
    b = ((u + np.uint64(0x7FFF) + ((u >> sixteen) & np.uint64(1))) >> sixteen).astype(np.uint16)
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
    if planted("block128"):
        per_element = np.asarray(scales, dtype=np.uint8)[np.arange(codes.size) // 128]
    nan_in = ((codes & 0x7F) == 0x7F) | (per_element == 0xFF)
    if planted("nan-row-refused") and nan_in.any():
        raise ValueError("the row holds an E4M3 code 0x7F/0xFF or an E8M0 scale 0xFF (refused, as decode_row does)")
    a, b = E4M3_F32[codes], e8m0_f32()[per_element]
    with np.errstate(over="ignore", invalid="ignore"):
        if planted("flush-to-zero"):
            return to_bf16(flush_subnormals(flush_subnormals(a) * flush_subnormals(b)))
        if planted("nan-decoded-finite"):  # ldexp(v, s - 127): +-480 for the NaN codes, 2^128 (0 * it = 0) for 0xFF
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
        if planted("row-outside-zero"):
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
    if planted("even-shards-only") and table.rows % world:
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
            part[mine] = table.lookup(local if planted("local-as-global") else begin + local)
        if acc is None:
            acc = part
        elif planted("keep-neg-zero"):
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
