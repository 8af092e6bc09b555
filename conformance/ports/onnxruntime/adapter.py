#!/usr/bin/env python3
"""JSON-lines adapter for onnxruntime's Engram contrib ops on the CPU (com.microsoft NGramHashMapping,
VarlenNGramHashMapping, EngramGate) and the contrib ops that carry the rest of an Engram layer (CausalConvWithState /
VarlenCausalConvWithState for the ShortConv, GatherBlockQuantized for the FP8 table), as a released wheel ships them.
Two ports: Ort here, the fixed-shape ops; OrtVarlen, the packed (varlen) ops, run by
conformance/ports/onnxruntime-varlen/adapter.py. See README.md beside this file.

The checkout is the unpacked wheel (scripts/ports_restore.py restores it from the pinned wheel): the adapter
imports that onnxruntime, builds small ONNX graphs with the onnx package and runs them on the
CPUExecutionProvider. Nothing of onnxruntime is built or changed here.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/onnxruntime/adapter.py --checkout DIR"
"""
import os
import sys

import numpy as np

from engram_adapter.portlib import (DEAD, Adapter, Unsupported, fp8_decode_by_rows, hash_state_test, lookup_table,
                                    main, replayed_rollback)
from engram_adapter.serving import Packed, boundary_problem

MS = "com.microsoft"


def hexf(x):
    return float(x).hex()


def floats32(values):
    return np.asarray([float.fromhex(x) if isinstance(x, str) else x for x in values], dtype=np.float32)


class Ort(Adapter):
    """The fixed-shape ops: NGramHashMapping, EngramGate, CausalConvWithState, GatherBlockQuantized."""
    name = "onnxruntime contrib ops NGramHashMapping / EngramGate / CausalConvWithState / GatherBlockQuantized (CPU)"
    suites = ["hash_demo", "hash_v41", "hash_state", "gate_demo", "short_conv_demo", "table_lookup", "fp8_decode"]
    profiles = ["demo-v1", "v4.1"]
    varlen = False  # OrtVarlen: the hash and the ShortConv through the packed ops

    def __init__(self, checkout):
        super().__init__(checkout)
        # The unpacked wheel is a package (submodules, a native extension) imported by its name from the checkout
        # the user names: on the path, first, and checked below.
        sys.path.insert(0, checkout)
        import onnxruntime  # the checkout's: the unpacked wheel
        if not os.path.abspath(onnxruntime.__file__).startswith(os.path.abspath(checkout) + os.sep):
            raise SystemExit(f"imported onnxruntime from {onnxruntime.__file__}, not from the checkout {checkout}")
        import onnx
        from onnx import TensorProto, helper
        self.ort, self.onnx, self.helper, self.TP = onnxruntime, onnx, helper, TensorProto
        self.version = onnxruntime.__version__
        self.sessions = {}

    # ------------------------------------------------------------------ graphs

    def session(self, key, build, opset=17):
        """A session of the graph build() returns, kept under `key` (None: not kept, e.g. a graph holding a
        test's table as initializers)."""
        if key is None or key not in self.sessions:
            graph = build()
            model = self.helper.make_model(graph, opset_imports=[self.helper.make_opsetid("", opset),
                                                                  self.helper.make_opsetid(MS, 1)])
            model.ir_version = 8 if opset < 21 else 10
            opts = self.ort.SessionOptions()
            opts.intra_op_num_threads = 1
            opts.inter_op_num_threads = 1
            opts.log_severity_level = 3
            sess = self.ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
            if key is None:
                return sess
            self.sessions[key] = sess
        return self.sessions[key]

    def hash_session(self, m, heads, pad, varlen, carried=False):
        """One NGramHashMapping node (carried: with past_ids; or VarlenNGramHashMapping with its state inputs) for
        one layer: the layer's multipliers, primes (vocab_sizes) and offsets (head_offsets) are inputs, so one
        session serves every layer."""
        h, TP = self.helper, self.TP
        cols = (m - 1) * heads

        def build():
            attrs = dict(pad_id=pad, n_head_per_ngram=heads, max_ngram_size=m)
            ins = [h.make_tensor_value_info("input_ids", TP.INT64, ["T"] if varlen else [1, "T"]),
                   h.make_tensor_value_info("multipliers", TP.INT64, [m]),
                   h.make_tensor_value_info("vocab_sizes", TP.INT64, [cols])]
            outs = [h.make_tensor_value_info("hash_ids", TP.INT64, None),
                    h.make_tensor_value_info("present_ids", TP.INT64, None)]
            if varlen:
                ins += [h.make_tensor_value_info("cu", TP.INT32, ["B1"]),
                        h.make_tensor_value_info("past_ids", TP.INT64, ["B", m - 1]),
                        h.make_tensor_value_info("head_offsets", TP.INT64, [cols]),
                        h.make_tensor_value_info("segment_ids", TP.INT32, ["T"]),
                        h.make_tensor_value_info("past_segment_ids", TP.INT32, ["B", m - 1])]
                outs.append(h.make_tensor_value_info("present_segment_ids", TP.INT32, None))
                node = h.make_node("VarlenNGramHashMapping",
                                   ["input_ids", "multipliers", "vocab_sizes", "cu", "past_ids", "head_offsets", "",
                                    "segment_ids", "past_segment_ids"],
                                   ["hash_ids", "present_ids", "present_segment_ids"], domain=MS, **attrs)
            else:
                ins += [h.make_tensor_value_info("head_offsets", TP.INT64, [cols]),
                        h.make_tensor_value_info("segment_ids", TP.INT32, [1, "T"])]
                if carried:
                    ins.append(h.make_tensor_value_info("past_ids", TP.INT64, [1, m - 1]))
                node = h.make_node("NGramHashMapping",
                                   ["input_ids", "multipliers", "vocab_sizes", "past_ids" if carried else "",
                                    "head_offsets", "", "segment_ids"], ["hash_ids", "present_ids"], domain=MS, **attrs)
            return h.make_graph([node], "engram_hash", ins, outs)

        return self.session(("hash", m, heads, pad, varlen, carried), build)

    # ------------------------------------------------------------------ hash

    @staticmethod
    def segments(ids, start=0):
        """v4.1 DEAD as the ops' segment boundaries: a DEAD position opens a segment of its own and the next
        position another, so that no window reaches across it (every slot at or before a DEAD reads the pad)."""
        seg, out = start, []
        prev_dead = False
        for i in ids:
            if i == DEAD or prev_dead:
                seg += 1
            out.append(seg)
            prev_dead = i == DEAD
        return out, prev_dead

    def layer_inputs(self, layer):
        return (np.asarray(layer["multipliers"], dtype=np.int64),
                np.asarray([p for order in layer["primes"] for p in order], dtype=np.int64),
                np.asarray(layer["offsets"], dtype=np.int64))

    @staticmethod
    def geometry(group):
        layers = group["layers"]
        m = len(layers[0]["multipliers"])
        heads = len(layers[0]["primes"][0]) if layers[0]["primes"] else 0
        if m < 2 or heads < 1:
            raise Unsupported(f"max n-gram {m}, {heads} heads: the ops need max_ngram_size >= 2 and a head")
        return m, heads

    def hash_chunk(self, group, ids, past=None):
        """Row ids [T][layer][col] for one chunk of a sequence and the state after it; past: the state after the
        previous chunk (None: the sequence's start)."""
        return (self.hash_chunk_varlen if self.varlen else self.hash_chunk_fixed)(group, ids, past)

    def chunk_state(self, group, ids):
        """The state after `ids` (a sequence's ids so far) in the form hash_chunk threads, rebuilt from the caller's
        own ids: the op returns its state only at a call's end."""
        m, pad = len(group["layers"][0]["multipliers"]), group["compressedPad"]
        v41 = group["profile"] == "v4.1"
        tail = ids[-(m - 1):]
        past = [pad] * (m - 1 - len(tail)) + [pad if (v41 and i == DEAD) else i for i in tail]
        if not self.varlen:
            return np.asarray([past], dtype=np.int64), [False] * (m - 1 - len(tail)) + [v41 and i == DEAD for i in tail]
        segs, last_dead = Ort.segments(ids) if v41 else ([0] * len(ids), False)
        seg_tail = segs[-(m - 1):]
        past_seg = [seg_tail[0] if seg_tail else 0] * (m - 1 - len(seg_tail)) + seg_tail
        return (np.asarray([past], dtype=np.int64), np.asarray([past_seg], dtype=np.int32), last_dead)

    def hash_chunk_fixed(self, group, ids, past):
        """NGramHashMapping with past_ids: past = (the op's present_ids [1, M - 1], which of those slots the caller
        fed DEAD as the pad). The op applies segment boundaries only within its chunk (its doc: not inferred from
        past_ids), so a boundary it cannot see is written into past_ids as the pad: every slot at or before a DEAD
        in the history, and the whole history when the chunk opens with a DEAD (a segment of its own): the slots
        §HASH.2 blocks read the pad."""
        v41 = group["profile"] == "v4.1"
        layers, pad = group["layers"], group["compressedPad"]
        m, heads = self.geometry(group)
        w = m - 1
        if past is None:
            past = (np.full((1, w), pad, dtype=np.int64), [False] * w)
        if not ids:
            return [], past
        present, dead = past
        past_ids = np.array(present, dtype=np.int64)
        if v41 and ids[0] == DEAD:
            past_ids[:] = pad
        elif any(dead):
            past_ids[0, :max(j for j, d in enumerate(dead) if d) + 1] = pad
        feed = np.asarray([[pad if (v41 and i == DEAD) else i for i in ids]], dtype=np.int64)
        segs = np.asarray([self.segments(ids)[0] if v41 else [0] * len(ids)], dtype=np.int32)
        sess = self.hash_session(m, heads, pad, False, carried=True)
        rows = [[None] * len(layers) for _ in ids]
        for li, layer in enumerate(layers):
            mult, primes, offsets = self.layer_inputs(layer)
            out = sess.run(None, {"input_ids": feed, "multipliers": mult, "vocab_sizes": primes,
                                  "head_offsets": offsets, "segment_ids": segs, "past_ids": past_ids})
            for t in range(len(ids)):
                rows[t][li] = [int(x) for x in out[0][0, t]]
            present = out[1]
        return rows, (present, (list(dead) + [v41 and i == DEAD for i in ids])[-w:])

    def hash_chunk_varlen(self, group, ids, past):
        """VarlenNGramHashMapping, one request: past = (past_ids, past_segment_ids, last was DEAD), the op's
        present_ids / present_segment_ids threaded."""
        v41 = group["profile"] == "v4.1"
        layers, pad = group["layers"], group["compressedPad"]
        m, heads = self.geometry(group)
        feed_ids = [pad if (v41 and i == DEAD) else i for i in ids]
        if past is None:
            past = (np.full((1, m - 1), pad, dtype=np.int64), np.zeros((1, m - 1), dtype=np.int32), False)
        past_ids, past_seg, last_dead = past
        if v41:
            seg0 = int(past_seg[0, -1])
            segs, now_dead = self.segments(ids, seg0 + (1 if last_dead else 0))
        else:
            segs, now_dead = [0] * len(ids), False
        rows = [[None] * len(layers) for _ in ids]
        state = past
        if not ids:
            return [], past
        sess = self.hash_session(m, heads, pad, True)
        for li, layer in enumerate(layers):
            mult, primes, offsets = self.layer_inputs(layer)
            out = sess.run(None, {"input_ids": np.asarray(feed_ids, dtype=np.int64), "multipliers": mult,
                                  "vocab_sizes": primes, "cu": np.asarray([0, len(ids)], dtype=np.int32),
                                  "past_ids": past_ids, "head_offsets": offsets,
                                  "segment_ids": np.asarray(segs, dtype=np.int32), "past_segment_ids": past_seg})
            for t in range(len(ids)):
                rows[t][li] = [int(x) for x in out[0][t]]
            state = (out[1], out[2], now_dead)
        return rows, state

    def hash_test(self, group, ids):
        """A whole sequence through NGramHashMapping (no past: the op pads before the start); OrtVarlen: one
        VarlenNGramHashMapping call of one request (cumulative_sequence_length [0, T], past_ids all pad)."""
        if self.varlen:
            return self.hash_chunk_varlen(group, ids, None)[0]
        v41 = group["profile"] == "v4.1"
        layers, pad = group["layers"], group["compressedPad"]
        m, heads = self.geometry(group)
        if not ids:
            return []
        feed = np.asarray([[pad if (v41 and i == DEAD) else i for i in ids]], dtype=np.int64)
        segs = np.asarray([self.segments(ids)[0] if v41 else [0] * len(ids)], dtype=np.int32)
        sess = self.hash_session(m, heads, pad, False)
        rows = [[None] * len(layers) for _ in ids]
        for li, layer in enumerate(layers):
            mult, primes, offsets = self.layer_inputs(layer)
            out = sess.run(None, {"input_ids": feed, "multipliers": mult, "vocab_sizes": primes,
                                  "head_offsets": offsets, "segment_ids": segs})
            for t in range(len(ids)):
                rows[t][li] = [int(x) for x in out[0][0, t]]
        return rows

    # ------------------------------------------------------------------ hash_state: a history handed over

    def handoff(self, group, test):
        """HashHandoffTest: an imported history is the op's past_ids (its ids right-aligned and pad-filled, DEAD as
        hash_chunk carries it), then one call on the segment's ids. The op takes no position, no layout fingerprint
        and no V, so it imports any history: historyOut's position is the caller's count, and its ids the caller's
        record of the history and the ids consumed (the op's present_ids hold DEAD as the pad)."""
        w = len(group["layers"][0]["multipliers"]) - 1
        self.geometry(group)

        def segment(seg, ids):
            hist = list(seg["historyIn"]["history"])
            chunk = list(ids[seg["from"]:seg["to"]])
            rows, _ = self.hash_chunk(group, chunk, self.chunk_state(group, hist))
            position = seg["historyIn"]["position"] + len(chunk)
            record = hist + chunk
            keep = min(max(position, 0), w)
            return dict(seg, rows=rows, historyOut={"position": position, "history": record[len(record) - keep:]})

        if "historyIn" in test:  # an import alone: the op takes the history as past_ids and the ids after it
            past = self.chunk_state(group, list(test["historyIn"]["history"]))
            self.hash_chunk(group, list(test.get("ids", [])), past)
            return {"imported": True}
        if "segments" in test:
            return {"segments": [segment(seg, test["ids"]) for seg in test["segments"]]}
        return {"microBatches": [[segment(seg, test["sequences"][seg["sequence"]]) for seg in mb]
                                 for mb in test["microBatches"]]}

    # ------------------------------------------------------------------ serving: one VarlenNGramHashMapping call

    def packed(self, group, test, type_):
        """A serving_v41 test as one VarlenNGramHashMapping call per layer: the flat ids, cumulative_sequence_length,
        past_ids [B, M - 1] right-aligned and pad-filled, DEAD as segment boundaries (as hash_chunk), and the
        requests' state after the call from the op's present_ids."""
        if type_ == "DraftTreeTest":
            raise Unsupported("tree drafts: VarlenNGramHashMapping takes no parent indices; a token's window is the "
                              "tokens before it in its request")
        layers, pad = group["layers"], group["compressedPad"]
        m, heads = self.geometry(group)
        w = m - 1
        if boundary_problem(test):  # the op checks its boundaries itself: the call goes as the test writes it
            feed = [pad if i == DEAD else i for i in test["ids"]]
            past = np.full((max(len(test["cuSeqlens"]) - 1, 0), w), pad, dtype=np.int64)
            rows, _ = self.run_varlen(m, heads, pad, layers, feed, test["cuSeqlens"], past,
                                      np.zeros(past.shape, np.int32), [0] * len(feed))
            return {"rows": rows}  # the op took them: the runner reports the accepted invalid input
        pk = Packed(group, test)
        # the op refuses a request with no token and a buffer longer than its last boundary (its messages: "every
        # request must contain at least one token", "cumulative_sequence_length[batch_size] must equal
        # total_tokens"): the call carries the requests that have slots, and no padding
        live = [r for r in range(pk.b) if pk.cu[r] < pk.cu[r + 1]]
        states = [pk.consumed_state(r) for r in range(pk.b)]
        if not live:
            return {"rows": [], **pk.write(states)}
        feed, segs, cu, past, past_seg = [], [], [0], [], []
        for r in live:
            h = pk.reqs[r]
            hist = h["ids"]
            hseg, last_dead = self.segments(hist)
            past.append([pad] * (w - len(hist)) + [pad if i == DEAD else i for i in hist])
            past_seg.append([hseg[0] if hseg else 0] * (w - len(hseg)) + hseg)
            chunk = [pk.ids[t] for t in pk.slots(r)]
            cseg, _ = self.segments(chunk, past_seg[-1][-1] + (1 if last_dead else 0))
            feed += [pad if i == DEAD else i for i in chunk]
            segs += cseg
            cu.append(len(feed))
        rows, present = self.run_varlen(m, heads, pad, layers, feed, cu, np.asarray(past, dtype=np.int64),
                                        np.asarray(past_seg, dtype=np.int32), segs)
        for j, r in enumerate(live):  # the op's present_ids, DEAD where the adapter fed DEAD as the pad
            s = states[r]
            k = len(s["ids"])
            got = [int(x) for x in present[j][w - k:]] if k else []
            s["ids"] = [DEAD if x == DEAD else y for x, y in zip(s["ids"], got)]
        return {"rows": rows, **pk.write(states)}

    def run_varlen(self, m, heads, pad, layers, feed, cu, past, past_seg, segs):
        sess = self.hash_session(m, heads, pad, True)
        rows = [[None] * len(layers) for _ in feed]
        present = None
        for li, layer in enumerate(layers):
            mult, primes, offsets = self.layer_inputs(layer)
            out = sess.run(None, {"input_ids": np.asarray(feed, dtype=np.int64), "multipliers": mult,
                                  "vocab_sizes": primes, "cu": np.asarray(cu, dtype=np.int32), "past_ids": past,
                                  "head_offsets": offsets, "segment_ids": np.asarray(segs, dtype=np.int32),
                                  "past_segment_ids": past_seg})
            for t in range(len(feed)):
                rows[t][li] = [int(x) for x in out[0][t]]
            present = out[1]
        return rows, present

    # ------------------------------------------------------------------ gate

    def gate_session(self, hc, hid, k):
        h, TP = self.helper, self.TP

        def build():
            f = TP.FLOAT
            ins = [h.make_tensor_value_info("e", f, [1, k]), h.make_tensor_value_info("hidden", f, [1, 1, hc, hid]),
                   h.make_tensor_value_info("wk", f, [k, hc * hid]), h.make_tensor_value_info("bk", f, [hc * hid]),
                   h.make_tensor_value_info("wv", f, [k, hid]), h.make_tensor_value_info("bv", f, [hid]),
                   h.make_tensor_value_info("n1", f, [hc, hid]), h.make_tensor_value_info("n2", f, [hc, hid])]
            shape_k = h.make_tensor("shape_k", TP.INT64, [4], [1, 1, hc, hid])
            shape_v = h.make_tensor("shape_v", TP.INT64, [3], [1, 1, hid])
            ones = h.make_tensor("ones", f, [1, 1, hid], [1.0] * hid)
            nodes = [
                # the key and value projections stay outside the op (its doc): MatMul + Add as an exporter writes them
                h.make_node("MatMul", ["e", "wk"], ["k0"]), h.make_node("Add", ["k0", "bk"], ["k1"]),
                h.make_node("Reshape", ["k1", "shape_k"], ["key"]),
                h.make_node("MatMul", ["e", "wv"], ["v0"]), h.make_node("Add", ["v0", "bv"], ["v1"]),
                h.make_node("Reshape", ["v1", "shape_v"], ["value"]),
                # the demo's RMSNorm eps is torch's float32 epsilon (nn.RMSNorm(eps=None)): the attribute an
                # exporter of the demo model sets
                h.make_node("EngramGate", ["key", "hidden", "value", "n1", "n2"], ["gated"], domain=MS,
                            epsilon=2.0 ** -23),
                # the op returns gate * value only: the same gate times ones gives the gate itself
                h.make_node("EngramGate", ["key", "hidden", "ones", "n1", "n2"], ["gates"], domain=MS,
                            epsilon=2.0 ** -23),
            ]
            outs = [h.make_tensor_value_info("gated", f, None), h.make_tensor_value_info("gates", f, None)]
            return h.make_graph(nodes, "engram_gate", ins, outs, initializer=[shape_k, shape_v, ones])

        return self.session(("gate", hc, hid, k), build)

    def demo_gate(self, group, test):
        hc, hid, k = group["hc"], group["hidden"], group["in"]

        def arr(key, shape):
            return np.asarray([float.fromhex(x) if isinstance(x, str) else x for x in group[key]],
                              dtype=np.float32).reshape(shape)

        # as many values as the test holds: a wrong width is for onnxruntime to refuse (the graph declares [1, k])
        e = np.asarray([float.fromhex(x) for x in test["e"]], dtype=np.float32).reshape(1, -1)
        if len(test["hidden"]) != hc * hid:
            raise Unsupported(f"hidden of {len(test['hidden'])} values: the op takes it as [batch, seq, hc, hidden] "
                              f"= [1, 1, {hc}, {hid}]")
        hidden = np.asarray([float.fromhex(x) for x in test["hidden"]], dtype=np.float32).reshape(1, 1, hc, hid)
        feed = {"e": e, "hidden": hidden,
                "wk": np.ascontiguousarray(arr("keyWeight", (hc * hid, k)).T), "bk": arr("keyBias", (hc * hid,)),
                "wv": np.ascontiguousarray(arr("valueWeight", (hid, k)).T), "bv": arr("valueBias", (hid,)),
                "n1": arr("norm1Weight", (hc, hid)), "n2": arr("norm2Weight", (hc, hid))}
        gated, gates = self.gate_session(hc, hid, k).run(None, feed)
        return {"gate": [hexf(gates[0, 0, c, 0]) for c in range(hc)],
                "value": [hexf(x) for x in gated.reshape(-1)]}

    # ------------------------------------------------------------------ ShortConv: CausalConvWithState

    def conv_session(self, hc, hid, kernel, dilation, carried):
        """RMSNorm per stream (ONNX RMSNormalization, eps 1e-5 as the demo's ShortConv; the op holds no norm) and
        CausalConvWithState, channels-last [1, T, hc, hidden] (channel c * hidden + j, the spec's order), weight
        [hc * hidden, 1, kernel], no bias, activation SiLU; carried: past_state [1, W, hc, hidden] in, the op's
        present_state out (the spec's exchanged state: W normed rows, oldest first), else the op's zero padding."""
        h, TP = self.helper, self.TP

        def build():
            f = TP.FLOAT
            ins = [h.make_tensor_value_info("value", f, ["N"]), h.make_tensor_value_info("shape", TP.INT64, [4]),
                   h.make_tensor_value_info("norm_w", f, [hc, hid]),
                   h.make_tensor_value_info("conv_w", f, [hc * hid, 1, kernel])]
            ones = h.make_tensor("ones", f, [hid], [1.0] * hid)
            conv_in = ["normed", "conv_w"]
            if carried:
                ins.append(h.make_tensor_value_info("past", f, [1, "W", hc, hid]))
                conv_in += ["", "past"]
            nodes = [
                # the test's values as they are: a count that is not steps x hc x hidden is Reshape's to refuse
                h.make_node("Reshape", ["value", "shape"], ["x"], allowzero=1),
                h.make_node("RMSNormalization", ["x", "ones"], ["n0"], axis=-1, epsilon=1e-5),
                h.make_node("Mul", ["n0", "norm_w"], ["normed"]),
                h.make_node("CausalConvWithState", conv_in, ["y", "present"], domain=MS, channels_last=1,
                            dilation=dilation, activation="silu"),
            ]
            outs = [h.make_tensor_value_info("y", f, None), h.make_tensor_value_info("present", f, None)]
            return h.make_graph(nodes, "engram_short_conv", ins, outs, initializer=[ones])

        return self.session(("conv", hc, hid, kernel, dilation, carried), build, opset=23)

    def conv_run(self, group, value, steps, past=None):
        """One call: (output [steps * hc * hidden], the op's present_state [1, W, hc, hidden]). A value of another
        count than steps x hc x hidden is no [.., hc, hidden] tensor the op could be handed: unsupported (a Reshape
        in the adapter's graph would refuse it, which would measure the adapter, not the op)."""
        if len(value) != steps * group["hc"] * group["hidden"]:
            raise Unsupported(f"value has {len(value)} values: the op takes [{steps}, {group['hc']}, "
                              f"{group['hidden']}] ({steps} steps)")
        if self.varlen:
            return self.conv_run_varlen(group, value, steps, past)
        hc, hid, kernel = group["hc"], group["hidden"], group["kernel"]
        feed = {"value": np.asarray(value, dtype=np.float32), "shape": np.asarray([1, steps, hc, hid], np.int64),
                "norm_w": floats32(group["convNormWeight"]).reshape(hc, hid),
                "conv_w": floats32(group["convWeight"]).reshape(hc * hid, 1, kernel)}
        if past is not None:
            feed["past"] = past
        y, present = self.conv_session(hc, hid, kernel, group["dilation"], past is not None).run(None, feed)
        return y.reshape(-1), present

    def conv_session_varlen(self, hc, hid, kernel, dilation):
        """As conv_session, through VarlenCausalConvWithState: the normed values token-major [T, hc * hidden], one
        sequence (cumulative_sequence_length [0, T]), initial_state / final_state [1, hc * hidden, W] (channels
        first, the op's layout), activation SiLU, no bias."""
        h, TP = self.helper, self.TP

        def build():
            f = TP.FLOAT
            ins = [h.make_tensor_value_info("value", f, ["N"]), h.make_tensor_value_info("shape", TP.INT64, [3]),
                   h.make_tensor_value_info("norm_w", f, [hc, hid]),
                   h.make_tensor_value_info("conv_w", f, [hc * hid, 1, kernel]),
                   h.make_tensor_value_info("cu", TP.INT32, ["B1"]),
                   h.make_tensor_value_info("initial_state", f, ["B", hc * hid, "W"])]
            ones = h.make_tensor("ones", f, [hid], [1.0] * hid)
            flat = h.make_tensor("flat", TP.INT64, [2], [-1, hc * hid])
            nodes = [
                # the test's values as they are: a count that is not steps x hc x hidden is Reshape's to refuse
                h.make_node("Reshape", ["value", "shape"], ["x"], allowzero=1),
                h.make_node("RMSNormalization", ["x", "ones"], ["n0"], axis=-1, epsilon=1e-5),
                h.make_node("Mul", ["n0", "norm_w"], ["n1"]),
                h.make_node("Reshape", ["n1", "flat"], ["normed"]),
                h.make_node("VarlenCausalConvWithState", ["normed", "conv_w", "cu", "", "initial_state"],
                            ["y", "final_state"], domain=MS, dilation=dilation, activation="silu"),
            ]
            outs = [h.make_tensor_value_info("y", f, None), h.make_tensor_value_info("final_state", f, None)]
            return h.make_graph(nodes, "engram_short_conv_varlen", ins, outs, initializer=[ones, flat])

        return self.session(("conv_varlen", hc, hid, kernel, dilation), build, opset=23)

    def conv_run_varlen(self, group, value, steps, past):
        """conv_run through VarlenCausalConvWithState: the state in the exchanged form [1, W, hc, hidden] (W rows,
        oldest first; None: a fresh sequence, W rows of +0) goes to the op transposed to [1, hc * hidden, W] and
        comes back the same way. A call with no token is unsupported: the op's schema has every sequence contribute a
        token and its CPU kernel refuses zero (varlen_causal_conv_with_state.cc:88), so an engine makes no call for an
        empty append; keeping the state for it would be the adapter's answer, not the op's."""
        hc, hid, kernel = group["hc"], group["hidden"], group["kernel"]
        C, W = hc * hid, (kernel - 1) * group["dilation"]
        if steps == 0:
            raise Unsupported("an empty append: VarlenCausalConvWithState takes at least one token per sequence "
                              "(its CPU kernel: total_tokens must be at least batch_size, "
                              "varlen_causal_conv_with_state.cc:88); an engine makes no call for it")
        if past is None:
            past = np.zeros((1, W, hc, hid), dtype=np.float32)
        feed = {"value": np.asarray(value, dtype=np.float32), "shape": np.asarray([steps, hc, hid], np.int64),
                "norm_w": floats32(group["convNormWeight"]).reshape(hc, hid),
                "conv_w": floats32(group["convWeight"]).reshape(C, 1, kernel),
                "cu": np.asarray([0, steps], dtype=np.int32),
                "initial_state": np.ascontiguousarray(past.reshape(past.shape[1], C).T[None])}
        y, final = self.conv_session_varlen(hc, hid, kernel, group["dilation"]).run(None, feed)
        return y.reshape(-1), np.ascontiguousarray(final[0].T).reshape(1, -1, hc, hid)

    def short_conv(self, group, test):
        y, _ = self.conv_run(group, floats32(test["value"]), test["steps"])
        return {"output": [hexf(x) for x in y]}

    def short_conv_state(self, group, test):
        """ShortConvStateTest: one CausalConvWithState call per append, its present_state threaded into the next
        call's past_state. A rollback restores the state kept at the end of an earlier call and replays the kept
        values after it through the op (the op returns its state only at a call's end, and its CPU kernel refuses
        state_window; the ops' doc: a caller that may roll back must preserve the state and replay)."""
        hc, hid = group["hc"], group["hidden"]
        C, W = hc * hid, (group["kernel"] - 1) * group["dilation"]
        if "stateIn" in test:
            si = floats32(test["stateIn"])
            if len(si) % C:
                raise Unsupported(f"stateIn of {len(si)} values: the op takes past_state as [1, rows, {hc}, {hid}]")
            state = si.reshape(1, -1, hc, hid)
        else:
            state = np.zeros((1, W, hc, hid), dtype=np.float32)  # a fresh sequence: W rows of +0
        kept = [(0, state)]  # (position, the state after it): the call ends
        values, out = [], []
        for call in test["calls"]:
            if call["op"] == "rollback":
                k = call["k"]
                replayed_rollback(k, len(values))
                target = len(values) - k
                while kept[-1][0] > target:
                    kept.pop()
                at, st = kept[-1]
                if at < target:
                    _, st = self.conv_run(group, [v for row in values[at:target] for v in row], target - at, st)
                    kept.append((target, st))
                del values[target:]
                continue
            steps, value = call["steps"], floats32(call["value"])
            y, st = self.conv_run(group, value, steps, kept[-1][1])
            out += [hexf(x) for x in y]
            if len(value) == steps * C:
                values += [value[t * C:(t + 1) * C] for t in range(steps)]
            kept.append((len(values), st))
        return {"output": out, "stateOut": [hexf(x) for x in kept[-1][1].reshape(-1)]}

    # ------------------------------------------------------------------ the FP8 table: GatherBlockQuantized

    def decode(self, raw, d, local):
        """GatherBlockQuantized (FP8 data: output = float(data) * scale per block) on a table of the given rows:
        data [rows, d] float8e4m3fn, one scale per 32 elements (block_size 32, quantize_axis 1), gathered on axis 0
        at the row ids `local`; each row's bf16 bit patterns. The op's scales are floats, not E8M0 bytes (its CPU
        kernel takes float32 or float16 scales for FP8 data; float16 cannot hold 2^-127): the adapter writes each
        scale byte s as the float32 2^(s - 127), NaN for 0xFF. Its output is the float32 product; a Cast to
        bfloat16 (onnxruntime's) gives the bf16 row."""
        h, TP = self.helper, self.TP
        n = len(raw)
        data = h.make_tensor("data", TP.FLOAT8E4M3FN, [n, d], vals=b"".join(c for c, _ in raw), raw=True)
        sb = np.frombuffer(b"".join(sc for _, sc in raw), dtype=np.uint8).reshape(n, -1)
        scale = np.where(sb == 0xFF, np.uint32(0x7FC00000),
                         np.where(sb == 0, np.uint32(0x00400000), sb.astype(np.uint32) << 23)).view(np.float32)
        scales = h.make_tensor("scales", TP.FLOAT, list(sb.shape), vals=scale.tobytes(), raw=True)
        nodes = [h.make_node("GatherBlockQuantized", ["data", "ids", "scales"], ["f32"], domain=MS, block_size=32,
                             quantize_axis=1, gather_axis=0),
                 h.make_node("Cast", ["f32"], ["b16"], to=TP.BFLOAT16),
                 # onnxruntime's Python API returns no bfloat16 array: widened back to float32 (exact), whose high
                 # 16 bits are the bf16 pattern
                 h.make_node("Cast", ["b16"], ["out"], to=TP.FLOAT)]
        graph = h.make_graph(nodes, "engram_fp8_rows", [h.make_tensor_value_info("ids", TP.INT64, ["R"])],
                             [h.make_tensor_value_info("out", TP.FLOAT, None)], initializer=[data, scales])
        sess = self.session(None, lambda: graph, opset=21)
        out = sess.run(None, {"ids": np.asarray(local, dtype=np.int64)})[0]
        return (np.ascontiguousarray(out, dtype=np.float32).view(np.uint32) >> 16).reshape(len(local), d).tolist()

    def lookup(self, type_, group, test):
        import engram_numpy_port as synthetic  # (only its synthetic-table generator: a test's input bytes)
        d, raw, local = lookup_table(type_, group, test, synthetic.table_of)
        return {"rows": ["".join(f"{int(b) & 0xFFFF:04x}" for b in row) for row in self.decode(raw, d, local)]}

    # ------------------------------------------------------------------ the protocol

    def answer(self, suite, type_, group, test):
        if type_ == "HashTest":
            return {"rows": self.hash_test(group, list(test["ids"]))}
        if type_ == "HashStateTest":
            return hash_state_test(group, test, lambda capacity: Session(self, group))
        if type_ == "HashHandoffTest":
            return self.handoff(group, test)
        if type_ == "DemoGateTest":
            return self.demo_gate(group, test)
        if type_ in ("PackedBatchTest", "DraftTreeTest"):
            if not self.varlen:
                raise Unsupported("a packed batch: VarlenNGramHashMapping's, measured as the onnxruntime-varlen port")
            return self.packed(group, test, type_)
        if type_ == "ShortConvTest":
            return self.short_conv(group, test)
        if type_ == "ShortConvStateTest":
            return self.short_conv_state(group, test)
        if type_ in ("SafetensorsLookupTest", "PackedLookupTest", "SyntheticLookupTest"):
            return self.lookup(type_, group, test)
        if type_ in ("E4M3DecodeTest", "ElementDecodeTest"):
            # the op decodes FP8 only as a gather of table rows: the test's codes go through a table of one row
            return fp8_decode_by_rows(type_, test, lambda codes, scales: self.decode([(codes, scales)], len(codes),
                                                                                   [0])[0])
        if type_ == "E8M0DecodeTest":
            raise Unsupported("GatherBlockQuantized takes float scales, not E8M0 bytes: the scale's decode is the "
                              "adapter's (2^(s - 127) as a float32 input), so the op has no E8M0 decode to measure")
        if type_ == "FloatLookupTest":
            raise Unsupported("a demo-v1 float32 table: no Engram or FP8 op reads it (a plain Gather would be "
                              "onnxruntime's generic op, not an Engram one)")
        if type_ == "GateFunctionTest":
            raise Unsupported("EngramGate takes key, query and value, not a dot: the gate function alone has no entry")
        raise Unsupported(f"{type_}: not one of the Engram contrib ops")


class OrtVarlen(Ort):
    """The packed (varlen) ops: VarlenNGramHashMapping (HashTest as one request, HashStateTest threading its state,
    PackedBatchTest) and VarlenCausalConvWithState (ShortConvTest, ShortConvStateTest: one sequence per call)."""
    name = "onnxruntime contrib ops VarlenNGramHashMapping / VarlenCausalConvWithState (CPU, packed batches)"
    suites = ["hash_demo", "hash_v41", "hash_state", "short_conv_demo", "serving_v41"]
    varlen = True

    def answer(self, suite, type_, group, test):
        if suite not in self.suites:
            raise Unsupported(f"{suite}: the fixed-shape ops' (the onnxruntime port)")
        return super().answer(suite, type_, group, test)


class Session:
    """A sequence through NGramHashMapping (OrtVarlen: VarlenNGramHashMapping, a batch of one): the op's
    present_ids (and present_segment_ids) are the state threaded into the next call's past_ids (past_segment_ids).
    A rollback restores the state the caller kept for that position (the ops' doc: a caller that may roll back
    must preserve past_ids)."""

    def __init__(self, adapter, group):
        self.adapter, self.group = adapter, group
        self.m = len(group["layers"][0]["multipliers"])
        self.ids, self.states = [], [None]  # states[p]: the op's state after position p (None: the start)

    @property
    def position(self):
        return len(self.ids)

    def append(self, ids):
        rows, state = self.adapter.hash_chunk(self.group, list(ids), self.states[-1])
        # the state after each position: the op returns it after the chunk; the caller keeps the chunk's end
        self.states += [None] * (len(ids) - 1) + [state] if ids else []
        self.ids += list(ids)
        return rows

    def rollback(self, k):
        replayed_rollback(k, self.position)
        target = self.position - k
        del self.ids[target:]
        del self.states[target + 1:]
        if self.states[target] is None and target != 0:
            # inside a chunk the op returned no state: the caller's own ids give it (the last max_ngram - 1 ids,
            # DEAD as the pad, and where the DEADs were or the segment ids the adapter numbered them with), as a
            # caller that rolls back must keep past_ids (the ops' doc)
            self.states[target] = self.adapter.chunk_state(self.group, self.ids)

    def history(self):
        h = min(self.position, self.m - 1)
        return self.ids[self.position - h:]

    def __deepcopy__(self, memo):
        other = Session(self.adapter, self.group)
        other.ids, other.states = list(self.ids), list(self.states)
        return other


if __name__ == "__main__":
    sys.exit(main(Ort, __doc__))
