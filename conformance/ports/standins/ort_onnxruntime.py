"""Stand-in of the `onnxruntime` package as conformance/ports/onnxruntime/adapter.py uses it (InferenceSession,
SessionOptions, __version__), with none of its code: it evaluates the adapter's graphs node by node with numpy,
the com.microsoft Engram ops as their schemas document them (a window of max_ngram_size ids, padded before the
sequence and across segment boundaries; mix = XOR of id * multiplier; a Euclidean modulo per head plus the head
offset), EngramGate's gate from the in-tree numpy port's RMSNorm and demo gate function (_ref.py), CausalConvWithState
(channels-last, depthwise, dilated, SiLU, past_state / present_state of (kernel - 1) * dilation rows),
VarlenCausalConvWithState (the same per request of a token-major batch, its state [batch, channels, rows]) and
GatherBlockQuantized on FP8 data (the E4M3 value times the float scale in float32; an index outside [-rows, rows)
gives zeros) from the same port's E4M3 values and float32 rounding. CI runs the adapter on it; the real
measurement needs the released wheel."""
import numpy as np
import onnx
from onnx import numpy_helper

__version__ = "stand-in"


class SessionOptions:
    intra_op_num_threads = inter_op_num_threads = log_severity_level = 0


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _hash(ids, mult, primes, offsets, segs, past, past_segs, pad, m, heads):
    """[T, cols] row ids of one request, and its trailing (ids, segments) state."""
    hist = list(past) + list(ids)
    hseg = list(past_segs) + list(segs)
    base = len(past)
    out = np.zeros((len(ids), (m - 1) * heads), dtype=np.int64)
    for t in range(len(ids)):
        i = base + t
        mix = 0
        for k in range(m):
            j = i - k
            # a slot before the request, or before the most recent segment boundary at or before i, reads the pad
            blocked = j < 0 or any(hseg[x] != hseg[x - 1] for x in range(max(j + 1, 1), i + 1))
            tok = pad if blocked else int(hist[j])
            prod = np.int64(tok) * np.int64(mult[k])  # int64 wrap, as the ops' unsigned multiply
            mix = prod if k == 0 else np.bitwise_xor(np.int64(mix), prod)
            if k >= 1:
                for h in range(heads):
                    c = (k - 1) * heads + h
                    out[t, c] = int(mix) % int(primes[c]) + int(offsets[c])
    return out, np.asarray(hist[-(m - 1):], dtype=np.int64), np.asarray(hseg[-(m - 1):], dtype=np.int32)


def _varlen(ids, mult, primes, cu, past, offsets, segs, past_segs, pad, m, heads):
    """VarlenNGramHashMapping: one _hash per request of cumulative_sequence_length, which (its schema) starts at 0,
    ends at the buffer's end and gives every request a token."""
    cu = [int(x) for x in cu]
    if cu[0] != 0 or cu[-1] != len(ids) or any(cu[b + 1] <= cu[b] for b in range(len(cu) - 1)):
        raise ValueError(f"stand-in VarlenNGramHashMapping: boundaries {cu} for {len(ids)} ids")
    rows, p_ids, p_segs = [], [], []
    for b in range(len(cu) - 1):
        r, pi, ps = _hash(ids[cu[b]:cu[b + 1]], mult, primes, offsets, segs[cu[b]:cu[b + 1]], past[b], past_segs[b],
                          pad, m, heads)
        rows.append(r)
        p_ids.append(pi)
        p_segs.append(ps)
    return [np.concatenate(rows), np.stack(p_ids), np.stack(p_segs)]


def _gate(key, query, value, n1, n2, eps):
    ref = __import__("_ref").ref
    b, s, hc, hid = query.shape
    out = np.zeros(query.shape, dtype=np.float32)
    for c in range(hc):
        k = ref.rms_norm([float(x) for x in key[0, 0, c]], [float(x) for x in n1[c]], float(np.float32(eps)), 32)
        q = ref.rms_norm([float(x) for x in query[0, 0, c]], [float(x) for x in n2[c]], float(np.float32(eps)), 32)
        g = ref.rnd(ref.seq_sum((ref.rnd(a * bb, 32) for a, bb in zip(k, q)), 32) / ref.rnd(hid ** 0.5, 32), 32)
        gate = ref.gate_fn(g, 32, "demo-v1")
        out[0, 0, c] = [ref.rnd(gate * float(v), 32) for v in value.reshape(-1)]
    return out


def _conv(x, w, past, dilation):
    """CausalConvWithState, channels-last x [1, T, *channels], weight [C, 1, K], past [1, W, *channels] or None
    (zeros): SiLU of the sequential float32 sum of the taps, the last tap on the current step."""
    ref = __import__("_ref").ref
    T, C, K = x.shape[1], w.shape[0], w.shape[2]
    width = (K - 1) * dilation
    rows = np.zeros((width, C), np.float32) if past is None else past.reshape(past.shape[1], -1)
    if rows.shape != (width, C):
        raise ValueError(f"stand-in CausalConvWithState: past_state {past.shape}, expected {width} rows of {C}")
    seq = np.concatenate([rows, x.reshape(T, C)]).astype(np.float32)
    out = np.zeros((T, C), np.float32)
    for t in range(T):
        for ch in range(C):
            acc = 0.0
            for j in range(K):
                acc = ref.rnd(acc + ref.rnd(float(w[ch, 0, j]) * float(seq[width + t - (K - 1 - j) * dilation, ch]),
                                            32), 32)
            out[t, ch] = ref.fusion.silu(acc, 32)
    return [out.reshape(x.shape), seq[len(seq) - width:].reshape((1, width) + x.shape[2:])]


def _varlen_conv(x, w, cu, state, dilation):
    """VarlenCausalConvWithState: x [T, C], initial_state [B, C, W]; each request as _conv on its own tokens (its
    schema: every request has a token, the boundaries start at 0 and end at T)."""
    cu = [int(v) for v in cu]
    if cu[0] != 0 or cu[-1] != len(x) or any(cu[b + 1] <= cu[b] for b in range(len(cu) - 1)):
        raise ValueError(f"stand-in VarlenCausalConvWithState: boundaries {cu} for {len(x)} tokens")
    ys, finals = [], []
    for b in range(len(cu) - 1):
        y, fin = _conv(x[None, cu[b]:cu[b + 1]], w, state[b].T[None], dilation)
        ys.append(y[0])
        finals.append(fin[0].T)
    return [np.concatenate(ys), np.stack(finals)]


def _gather_fp8(codes, ids, scales):
    """GatherBlockQuantized, FP8 data [rows, d], float scales [rows, d / 32], gather axis 0, blocks of 32."""
    E4M3_F32 = __import__("_ref").ref.storage.E4M3_F32
    n, d = codes.shape
    out = np.zeros((len(ids), d), np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        for i, r in enumerate(int(x) for x in ids):
            if -n <= r < n:
                out[i] = E4M3_F32[codes[r]] * np.repeat(scales[r], 32)
    return out


def _init(t):
    if t.data_type == onnx.TensorProto.FLOAT8E4M3FN:
        return np.frombuffer(t.raw_data, dtype=np.uint8).reshape(tuple(t.dims))  # the codes as bytes
    return numpy_helper.to_array(t)


class InferenceSession:
    def __init__(self, model_bytes, options=None, providers=None):
        self.model = onnx.load_from_string(model_bytes)

    def run(self, names, feed):
        env = dict(feed)
        for init in self.model.graph.initializer:
            env[init.name] = _init(init)
        for node in self.model.graph.node:
            ins = [env.get(n) if n else None for n in node.input]
            a = _attrs(node)
            if node.op_type == "MatMul":
                res = [np.matmul(ins[0], ins[1]).astype(np.float32)]
            elif node.op_type == "Add":
                res = [(ins[0] + ins[1]).astype(np.float32)]
            elif node.op_type == "Reshape":  # allowzero: a 0 in the shape is a 0
                res = [ins[0].reshape(tuple(int(v) for v in ins[1]))]
            elif node.op_type == "Mul":
                res = [(ins[0] * ins[1]).astype(np.float32)]
            elif node.op_type == "RMSNormalization":
                ref = __import__("_ref").ref
                flat = ins[0].reshape(-1, ins[0].shape[-1])
                res = [np.asarray([ref.rms_norm([float(v) for v in r], [float(v) for v in ins[1]], a["epsilon"], 32)
                                   for r in flat], np.float32).reshape(ins[0].shape)]
            elif node.op_type == "VarlenCausalConvWithState":
                res = _varlen_conv(ins[0], ins[1], ins[2], ins[4], a.get("dilation", 1))
            elif node.op_type == "CausalConvWithState":
                res = _conv(ins[0], ins[1], ins[3] if len(ins) > 3 else None, a.get("dilation", 1))
            elif node.op_type == "GatherBlockQuantized":
                res = [_gather_fp8(ins[0], ins[1], ins[2])]
            elif node.op_type == "Cast":  # float32 -> bfloat16 (its bits, round to nearest even) -> float32
                ref = __import__("_ref").ref
                res = [ref.storage.to_bf16(ins[0]) if a["to"] == onnx.TensorProto.BFLOAT16
                       else ref.storage.bf16_to_f32(ins[0])]
            elif node.op_type == "EngramGate":
                res = [_gate(ins[0], ins[1], ins[2], ins[3], ins[4], a.get("epsilon", 1e-5))]
            elif node.op_type in ("NGramHashMapping", "VarlenNGramHashMapping"):
                m, heads, pad = a["max_ngram_size"], a["n_head_per_ngram"], a["pad_id"]
                if node.op_type == "NGramHashMapping":
                    ids, mult, primes, past, offsets, _, segs = ins
                    # past_ids (pad where omitted); its doc: segment boundaries are not checked against past_ids
                    rows, p_ids, _ = _hash(ids[0], mult, primes, offsets, segs[0],
                                           [pad] * (m - 1) if past is None else past[0], [segs[0][0]] * (m - 1),
                                           pad, m, heads)
                    res = [rows[None], p_ids[None]]
                else:
                    ids, mult, primes, cu, past, offsets, _, segs, past_segs = ins
                    res = _varlen(ids, mult, primes, cu, past, offsets, segs, past_segs, pad, m, heads)
            else:
                raise NotImplementedError(f"stand-in: op {node.op_type}")
            for name, val in zip(node.output, res):
                env[name] = val
        return [env[o.name] for o in self.model.graph.output]
