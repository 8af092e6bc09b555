"""Stand-in of the `onnxruntime` package as conformance/ports/onnxruntime/adapter.py uses it (InferenceSession,
SessionOptions, __version__), with none of its code: it evaluates the adapter's graphs node by node with numpy,
the com.microsoft Engram ops as their schemas document them (a window of max_ngram_size ids, padded before the
sequence and across segment boundaries; mix = XOR of id * multiplier; a Euclidean modulo per head plus the head
offset) and EngramGate's gate from the in-tree numpy port's RMSNorm and demo gate function (_ref.py). CI runs the
adapter on it; the real measurement needs the released wheel."""
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


class InferenceSession:
    def __init__(self, model_bytes, options=None, providers=None):
        self.model = onnx.load_from_string(model_bytes)

    def run(self, names, feed):
        env = dict(feed)
        for init in self.model.graph.initializer:
            env[init.name] = numpy_helper.to_array(init)
        for node in self.model.graph.node:
            ins = [env.get(n) if n else None for n in node.input]
            a = _attrs(node)
            if node.op_type == "MatMul":
                res = [np.matmul(ins[0], ins[1]).astype(np.float32)]
            elif node.op_type == "Add":
                res = [(ins[0] + ins[1]).astype(np.float32)]
            elif node.op_type == "Reshape":
                res = [ins[0].reshape(ins[1])]
            elif node.op_type == "EngramGate":
                res = [_gate(ins[0], ins[1], ins[2], ins[3], ins[4], a.get("epsilon", 1e-5))]
            elif node.op_type in ("NGramHashMapping", "VarlenNGramHashMapping"):
                m, heads, pad = a["max_ngram_size"], a["n_head_per_ngram"], a["pad_id"]
                if node.op_type == "NGramHashMapping":
                    ids, mult, primes, _, offsets, _, segs = ins
                    rows, p_ids, _ = _hash(ids[0], mult, primes, offsets, segs[0], [pad] * (m - 1), [0] * (m - 1),
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
