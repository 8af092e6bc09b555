"""The facts a port relies on, each a function of one test that recomputes a statement of docs/porting.md
from the vectors (and, for the token map, from the tokenizers package when it is installed)."""
import hashlib
import json
import math
import os
import struct

from porting.base import DEAD, ROOT  # noqa: F401


def hash_dims(x):
    lay = x.g["layers"]
    m = len(lay[0]["multipliers"])
    h = len(lay[0]["primes"][0])
    return {"L": len(lay), "M": m, "H": h, "C": (m - 1) * h}


def last(ids, n):
    return list(ids[max(0, len(ids) - n):]) if n > 0 else []


LOADED = {"all": [], "hf": None, "hf_maps": {}}  # main() puts the vectors here, for facts that read another test


class Unchecked(Exception):
    """A fact that cannot be checked on this test from what is loaded (counted and reported, not passed)."""


def token_map_of(tokenizer_json):
    """The map of a tokenizer.json as a valid TokenMapTest over the same text states it (the vectors' own
    answer, not a recomputation); None when no loaded TokenMapTest has that tokenizer. Over random cases
    (--vectors DIR), where a TokenLookupTest's tokenizer is drawn for it alone, the map is built by the
    Hugging Face `tokenizers` package the way conformance/crosscheck/hf_token_map.py builds it (an
    implementation nobody here wrote), when that package is installed."""
    for doc in LOADED["all"]:
        for g in doc.get("token_map", {}).get("testGroups", []):
            if g["type"] == "TokenMapTest" and g["tokenizerJson"] == tokenizer_json:
                for t in g["tests"]:
                    if t["result"] == "valid":
                        return t["map"]
    if not LOADED.get("hf"):
        return None
    if tokenizer_json not in LOADED["hf_maps"]:
        LOADED["hf_maps"][tokenizer_json] = LOADED["hf"](tokenizer_json)
    return LOADED["hf_maps"][tokenizer_json]


def fact_token_lookup(x):
    cmap = token_map_of(x.g["tokenizerJson"])
    if cmap is None:
        raise Unchecked("no TokenMapTest of this tokenizer is loaded and the tokenizers package is not installed")
    v41 = x.g["profile"] == "v4.1"
    mask = x.t.get("mask", [True] * len(x.t["rawIds"]))
    want = [-1 if v41 and not m else (cmap[r] if r >= 0 else r) for r, m in zip(x.t["rawIds"], mask)]
    return want == x.t["ids"]


def fact_hash_trace_shapes(x):
    d = hash_dims(x)
    m, layers = d["M"], len(x.g["layers"])
    cols = sum(len(p) for p in x.g["layers"][0]["primes"])
    for tr in x.t["intermediate"]:
        if set(tr) != {"window", "blocked", "tokens", "mixes", "residues"}:
            return False
        if len(tr["window"]) != m or len(tr["blocked"]) != m or len(tr["tokens"]) != m:
            return False
        if any(b not in (0, 1) or isinstance(b, bool) for b in tr["blocked"]):
            return False
        if len(tr["mixes"]) != layers or any(len(r) != m - 1 for r in tr["mixes"]):
            return False
        if len(tr["residues"]) != layers or any(len(r) != cols for r in tr["residues"]):
            return False
        if not all(isinstance(v, int) and not isinstance(v, bool)
                   for k in ("window", "tokens") for v in tr[k]):
            return False
    return True


def fact_rows_are_residues_plus_offsets(x):
    for p, (row, tr) in enumerate(zip(x.t["rows"], x.t["intermediate"])):
        for li, layer in enumerate(x.g["layers"]):
            primes = [p_ for order in layer["primes"] for p_ in order]
            for c, v in enumerate(row[li]):
                r = tr["residues"][li][c]
                if not (0 <= r < primes[c] and v == r + layer["offsets"][c]):
                    return False
    return True


def fact_steps_simulated(x):
    """positionAfter and historyAfter are those of the §HASH.5-6 state after each step."""
    m = hash_dims(x)["M"]
    seqs = {}
    for s in x.t["steps"]:
        if s["op"] == "append":
            seq = seqs.setdefault(s["seq"], [])
            if len(s["rows"]) != len(s["ids"]):
                return False
            seq.extend(s["ids"])
        elif s["op"] == "rollback":
            seq = seqs[s["seq"]]
            if s["k"] > len(seq):
                return False
            del seq[len(seq) - s["k"]:]
        elif s["op"] == "fork":
            if s["from"] not in seqs:
                return False
            seqs[s["to"]] = list(seqs[s["from"]])  # §VEC.7 onto an existing name: replaces it
            continue
        if s["positionAfter"] != len(seq) or s["historyAfter"] != last(seq, m - 1):
            return False
    return True


def fact_rollbacks_mandatory(x):
    """§HASH.6: a valid test never rolls back beyond the mandatory rollback depth."""
    cap, depth = x.g["rollbackCapacity"], {}
    for s in x.t["steps"]:
        if s["op"] == "append":
            depth[s["seq"]] = min(depth.get(s["seq"], 0) + len(s["ids"]), cap)
        elif s["op"] == "rollback":
            if s["k"] > depth.get(s["seq"], 0):
                return False
            depth[s["seq"]] -= s["k"]
        elif s["op"] == "fork":
            depth[s["to"]] = depth[s["from"]]
    return True


def decode_history_binary(h):
    b = bytes.fromhex(h)
    if len(b) < 56 or b[:8] != b"ENGRAMHS":
        return None
    version, = struct.unpack_from("<I", b, 8)
    position, count = struct.unpack_from("<qI", b, 44)
    if len(b) != 56 + 8 * count:
        return None
    ids = list(struct.unpack_from("<%dq" % count, b, 56))
    return {"version": version, "layoutFingerprint": b[12:44].hex(), "position": position, "history": ids}


def segments_of(x):
    """(sequence ids, segment) for every segment of a valid HashHandoffTest, in order."""
    if "segments" in x.t:
        return [(x.t["ids"], s) for s in x.t["segments"]]
    return [(x.t["sequences"][s["sequence"]], s) for batch in x.t["microBatches"] for s in batch]


def fact_segments_chain(x):
    """§HASH.9: positions are absolute, P + index, P the position the sequence's first history carries."""
    m = hash_dims(x)["M"]
    seen, start = {}, {}
    for ids, s in segments_of(x):
        key = id(ids)
        if key not in start:  # the sequence's start: a history of its own
            p, pre = s["historyIn"]["position"], s["historyIn"]["history"]
            if p < 0 or len(pre) != min(p, m - 1):
                return False
            start[key] = (p, pre)
        elif s["historyIn"] != seen[key]:
            return False
        p, pre = start[key]
        if s["historyIn"]["position"] != p + s["from"] or s["historyOut"]["position"] != p + s["to"]:
            return False
        if s["historyIn"]["history"] != last(pre + ids[:s["from"]], m - 1):
            return False
        if s["historyOut"]["history"] != last(pre + ids[:s["to"]], m - 1):
            return False
        seen[key] = s["historyOut"]
    return all(seen.get(id(ids), {}).get("position") == start[id(ids)][0] + len(ids) for ids in
               ([x.t["ids"]] if "segments" in x.t else x.t["sequences"]) if id(ids) in start)


def fact_binary_history(x):
    pairs = [(s["historyIn"], s["historyInBinary"]) for _, s in segments_of(x)] if x.valid else \
        [(x.t["historyIn"], x.t["historyInBinary"])]
    for js, hx in pairs:
        b = decode_history_binary(hx)
        fp = js.get("layoutFingerprint", x.g["layoutFingerprint"])
        if b is None or b["version"] != 1 or b["layoutFingerprint"] != fp or b["position"] != js["position"] \
                or b["history"] != js["history"]:
            return False
    return True


def layout_dims(x):
    c = x.t["config"]
    c = c.get("text_config", c)  # the Hugging Face shape nests the keys (§CFG.2)
    m = c.get("engram_max_ngram_size", c.get("max_ngram_size"))
    h = c.get("engram_n_heads", c.get("n_head_per_ngram"))
    return {"L": len(c.get("engram_layer_ids", c.get("layer_ids"))), "M": m, "H": h, "C": (m - 1) * h}


def fact_offsets_prefix_sums(x):
    for layer in x.t["layers"]:
        primes = [p for order in layer["primes"] for p in order]
        off = 0
        for c, p in enumerate(primes):
            if layer["offsets"][c] != off:
                return False
            off += p
        if layer["numEmbeddings"] != off:
            return False
    return True


def fact_token_map(x):
    mp = x.t["map"]
    high = -1
    for v in mp:
        if v > high + 1:
            return False
        high = max(high, v)
    digest = hashlib.sha256(b"".join(struct.pack("<i", v) for v in mp)).hexdigest()
    return mp[0] == 0 and x.t["compressedSize"] == high + 1 and x.t["sha256"] == digest


def table_d(x):
    g = x.g
    return (g["table"] if "table" in g else g)["headDim"]


def table_r(x):
    g = x.g
    return (g["table"] if "table" in g else g)["rows"]


def fact_safetensors_offsets(x):
    g, d, r = x.g, x.g["headDim"], x.g["rows"]
    hdr = json.loads(g["header"])
    w, s = hdr[g["tensors"]["weight"]], hdr[g["tensors"]["scale"]]
    if g["dataOffset"] != 8 + len(g["header"].encode("utf-8")):
        return False
    if w["data_offsets"] != [0, r * d] or s["data_offsets"] != [r * d, r * d + r * (d // 32)]:
        return False
    for rid, rb in zip(x.t["rowIds"], x.t["rowBytes"]):
        if rb["codesOffset"] != g["dataOffset"] + rid * d:
            return False
        if rb["scalesOffset"] != g["dataOffset"] + r * d + rid * (d // 32):
            return False
    return True


def fact_packed_offsets(x):
    g = x.g
    if g["rowLength"] != g["headDim"] + g["headDim"] // 32:
        return False
    return all(rb["offset"] == rid * g["rowLength"] for rid, rb in zip(x.t["rowIds"], x.t["rowBytes"]))


def fact_row_shards(x):
    g, r, w = x.g, table_r(x), x.g["world"]
    part = -(-r // w)
    return g["part"] == part and g["shards"] == [[min(k * part, r), min((k + 1) * part, r)] for k in range(w)]


def fact_head_ranges(x):
    g, c, w = x.g, x.g["columns"], x.g["world"]
    hp = -(-c // w)
    return g["headRanges"] == [[min(k * hp, c), min((k + 1) * hp, c)] for k in range(w)]


def fwd_dims(x):
    """EngramForwardTest: the dims from the group's configuration (v4.1) or demo parameters."""
    c = x.g["config"]
    if x.g["profile"] == "v4.1":
        m, h, hd = c["engram_max_ngram_size"], c["engram_n_heads"], c["engram_head_dim"]
        return {"hc": c["hc_mult"], "dim": c["dim"], "C": (m - 1) * h, "hd": hd, "T": len(x.t["ids"])}
    return {"hc": x.g["hc"], "Hd": x.g["hidden"], "K": x.g["in"], "kernel": x.g["kernel"], "T": len(x.t["ids"])}


def fact_demo_forward_params(x):
    c, g = x.g["config"], x.g
    return (g["hc"] == c["hc_mult"] and g["hidden"] == c["hidden_size"] and g["kernel"] == c["kernel_size"]
            and g["dilation"] == c["max_ngram_size"] and g["in"] == (c["max_ngram_size"] - 1) * c["n_embed_per_ngram"])


# ---- layout facts: the index order of the flat fusion arrays, recomputed in float64 from the inputs and
# compared with the vector's float64 values (a different order of the same length gives other numbers)

def bf16_value(bits):
    return struct.unpack(">f", struct.pack(">I", bits << 16))[0]


def e4m3_value(code):
    s, e, m = code >> 7, (code >> 3) & 0xF, code & 7
    if e == 15 and m == 7:
        return float("nan")
    v = (m / 8.0) * 2.0 ** -6 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7)
    return -v if s else v


def fl(h):
    return float.fromhex(h)


def close(a, b, rel=1e-9):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b  # (inf − inf is NaN: compared as values, not by their difference)
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-300


def fact_demo_linear_layout(x):
    g, t = x.g, x.t
    hc, hd, k_ = g["hc"], g["hidden"], g["in"]
    e = [fl(v) for v in t["e"]]
    kw, kb = [fl(v) for v in g["keyWeight"]], [fl(v) for v in g["keyBias"]]
    vw, vb = [fl(v) for v in g["valueWeight"]], [fl(v) for v in g["valueBias"]]
    for c in range(hc):
        key = t["intermediate"]["streams"][c]["float64"]["key"]
        for n in range(hd):
            y = sum(e[k] * kw[(c * hd + n) * k_ + k] for k in range(k_)) + kb[c * hd + n]
            if not close(y, fl(key[n])):
                return False
    proj = t["intermediate"]["valueProj"]["float64"]
    return all(close(sum(e[k] * vw[n * k_ + k] for k in range(k_)) + vb[n], fl(proj[n])) for n in range(hd))


def fact_conv_layout(x):
    g, t = x.g, x.t
    ch_n, kern, dil, steps = g["hc"] * g["hidden"], g["kernel"], g["dilation"], t["steps"]
    w = [fl(v) for v in g["convWeight"]]
    normed = [fl(v) for v in t["intermediate"]["float64"]["normed"]]
    conv = [fl(v) for v in t["intermediate"]["float64"]["conv"]]
    for step in range(steps):
        for ch in range(ch_n):
            y = 0.0
            for j in range(kern):
                src = step - (kern - 1 - j) * dil
                if src >= 0:
                    y += w[ch * kern + j] * normed[src * ch_n + ch]
            if not close(y, conv[step * ch_n + ch]):
                return False
    return True


def fact_conv_state_replay(x):
    g, t = x.g, x.t
    ch_n, kern, dil, cap = g["hc"] * g["hidden"], g["kernel"], g["dilation"], g["rollbackCapacity"]
    width = (kern - 1) * dil
    w = [fl(v) for v in g["convWeight"]]
    f64 = t["intermediate"]["float64"]
    normed = [fl(v) for v in f64["normed"]]
    window = [fl(v) for v in f64["window"]]
    conv = [fl(v) for v in f64["conv"]]
    state_in = [fl(v) for v in t["stateIn"]] if "stateIn" in t else [0.0] * (width * ch_n)
    rows = [state_in[i * ch_n:(i + 1) * ch_n] for i in range(width)]
    step, depth = 0, 0
    for call in t["calls"]:
        if call["op"] == "rollback":
            if call["k"] > depth:
                return False
            del rows[len(rows) - call["k"]:]
            depth -= call["k"]
            continue
        for _ in range(call["steps"]):
            rows.append(normed[step * ch_n:(step + 1) * ch_n])
            now = len(rows) - 1
            for ch in range(ch_n):
                y = 0.0
                for j in range(kern):
                    read = rows[now - (kern - 1 - j) * dil][ch]
                    got = window[(step * kern + j) * ch_n + ch]
                    if got != read and not (got != got and read != read):
                        return False
                    y += w[ch * kern + j] * read
                if not close(y, conv[step * ch_n + ch]):
                    return False
            step += 1
        depth = min(depth + call["steps"], cap)
    state_out = [fl(v) for v in t["stateOut"]["float64"]]
    tail = [v for row in rows[len(rows) - width:] for v in row] if width else []
    return step * ch_n == len(normed) and all(a == b or (a != a and b != b) for a, b in zip(tail, state_out)) and \
        len(tail) == len(state_out)


def fact_wkv_layout(x):
    t = x.t
    n_out, k_in = t["outFeatures"], len(t["e"])
    if "weight" in t:
        a = [bf16_value(v) for v in t["e"]]
        w = lambda n, k: bf16_value(t["weight"][n * k_in + k])  # noqa: E731
    else:
        inter = t["intermediate"]
        a = [e4m3_value(c) * 2.0 ** (inter["actScales"][k // 32] - 127) for k, c in enumerate(inter["actCodes"])]
        ks = k_in // 32
        w = lambda n, k: e4m3_value(t["weightCodes"][n * k_in + k]) * 2.0 ** (  # noqa: E731
            t["weightScales"][(n // 32) * ks + k // 32] - 127)
    return all(close(sum(a[k] * w(n, k) for k in range(k_in)), fl(t["kvRef64"][n])) for n in range(n_out))


def same(a, b):
    """The same double, or both NaN."""
    return a == b or (a != a and b != b)


def fact_wkv_flush_interval(x):
    """§FUS.9 a bf16 GEMM's flush to zero: per output, with the terms t = e[k] · W[n·K + k] (exact in a
    double), D those with a subnormal factor and N the nonzero ones that are not multiples of 2^-126,
    kvLow64 = min(r, Σ_(k∉D) t + Σ_(k∈D) min(t, 0) − N · 2^-126) and kvHigh64 the same with max and +
    (the sums in k order, as the generator's); r alone where r is not finite. fp8 tests have neither."""
    t = x.t
    if "weight" not in t:
        return "kvLow64" not in t and "kvHigh64" not in t
    n_out, k_in = t["outFeatures"], len(t["e"])
    q = 2.0 ** -126
    e = [bf16_value(v) for v in t["e"]]
    for n in range(n_out):
        r = fl(t["kvRef64"][n])
        kept = daz_pos = daz_neg = 0.0
        groups = 0
        for k in range(k_in):
            w = bf16_value(t["weight"][n * k_in + k])
            term = e[k] * w
            if 0 < abs(e[k]) < q or 0 < abs(w) < q:
                if term > 0:
                    daz_pos += term
                else:
                    daz_neg += term
            else:
                kept += term
            if term != 0 and (not math.isfinite(term) or math.fmod(term, q) != 0):
                groups += 1  # (an infinite or NaN term leaves r not finite: the bounds are r)
        if not math.isfinite(r):
            lo = hi = r
        else:
            lo, hi = min(r, kept + daz_neg - groups * q), max(r, kept + daz_pos + groups * q)
        if not (same(lo, fl(t["kvLow64"][n])) and same(hi, fl(t["kvHigh64"][n]))):
            return False
    return True


def fact_v41_stream_layout(x):
    g, t = x.g, x.t
    hc, dim = g["hc"], g["dim"]
    for c in range(hc):
        h = [bf16_value(v) for v in t["x"][c * dim:(c + 1) * dim]]
        k = [bf16_value(v) for v in t["key"][c * dim:(c + 1) * dim]]
        w = [bf16_value(q) * bf16_value(kk) for q, kk in zip(t["qWeight"][c * dim:(c + 1) * dim],
                                                           t["kWeight"][c * dim:(c + 1) * dim])]
        ref = t["intermediate"][c]["float64"]
        if not (close(sum(v * v for v in h), fl(ref["sumH2"])) and close(sum(v * v for v in k), fl(ref["sumK2"]))
                and close(sum((hi * wi) * ki for hi, wi, ki in zip(h, w, k)), fl(ref["sumHwk"]))):
            return False
    return True


def fact_forward_wkv_layout(x):
    """v4.1: kv[t] = wkv(e[t]) with wkvWeightCodes [out][in] and wkvWeightScales [out div 32][in div 32]; the
    activation is fp8-quantized on the way (§FUS.2.1), so the unquantized e is compared by direction only."""
    if x.profile != "v4.1":
        return True
    g, t = x.g, x.t
    d = fwd_dims(x)
    n_out, k_in, tt = (d["hc"] + 1) * d["dim"], d["C"] * d["hd"], len(t["ids"])
    ks = k_in // 32
    wv = [e4m3_value(c) * 2.0 ** (g["wkvWeightScales"][(i // k_in // 32) * ks + (i % k_in) // 32] - 127)
          for i, c in enumerate(g["wkvWeightCodes"])]
    e = [bf16_value(v) for v in t["intermediate"]["e"]]
    ref = [fl(v) for v in t["intermediate"]["kvRef64"]]
    for p_ in range(tt):
        y = [sum(e[p_ * k_in + k] * wv[n * k_in + k] for k in range(k_in)) for n in range(n_out)]
        r = ref[p_ * n_out:(p_ + 1) * n_out]
        dot = sum(a * b for a, b in zip(y, r))
        norm = math.sqrt(sum(a * a for a in y) * sum(b * b for b in r))
        if norm == 0 or dot / norm < 0.99:
            return False
    return True


def requests_of(x):
    cu = x.t["cuSeqlens"]
    return [list(range(cu[r], cu[r + 1])) for r in range(len(cu) - 1)]


def fact_packed_boundaries(x):
    cu, t = x.t["cuSeqlens"], x.t["ids"]
    if cu[0] != 0 or any(b < a for a, b in zip(cu, cu[1:])) or cu[-1] > len(t):
        return False
    return all(x.t["positions"][s] == 0 for s in range(cu[-1], len(t)))


def fact_packed_positions(x):
    for r, slots in enumerate(requests_of(x)):
        if not slots:
            continue
        p = x.t["historyIn"][r]["position"] if x.t["encoding"] == "engram" else x.t["positions"][slots[0]]
        if [x.t["positions"][s] for s in slots] != list(range(p, p + len(slots))):
            return False
    return True


def fact_packed_states(x):
    m = hash_dims(x)["M"]
    for r, slots in enumerate(requests_of(x)):
        ids = [x.t["ids"][s] for s in slots]
        if x.t["encoding"] == "engram":
            h, o = x.t["historyIn"][r], x.t["historyOut"][r]
            if o["position"] != h["position"] + len(ids) or o["history"] != last(h["history"] + ids, min(o["position"], m - 1)):
                return False
        elif x.t["encoding"] == "onnxruntime":
            if x.t["presentIds"][r] != last(x.t["pastIds"][r] + ids, m - 1):
                return False
    return True


def fact_draft_tree(x):
    m = hash_dims(x)["M"]
    for r, slots in enumerate(requests_of(x)):
        par = [x.t["parents"][s] for s in slots]
        depth = []
        for j, p in enumerate(par):
            if not -1 <= p < j:
                return False
            depth.append(0 if p < 0 else depth[p] + 1)
        p0 = x.t["historyIn"][r]["position"] if x.t["encoding"] == "engram" else (
            x.t["positions"][slots[0]] if slots else 0)
        if [x.t["positions"][s] for s in slots] != [p0 + d for d in depth]:
            return False
        prev = -1
        for a in x.t["accepted"][r]:
            if not (0 <= a < len(slots) and par[a] == prev):
                return False
            prev = a
        if x.t["encoding"] == "engram":
            h, o = x.t["historyIn"][r], x.t["historyOut"][r]
            kept = [x.t["ids"][slots[a]] for a in x.t["accepted"][r]]
            if o["position"] != h["position"] + len(kept) or o["history"] != last(h["history"] + kept, min(o["position"], m - 1)):
                return False
    return True
