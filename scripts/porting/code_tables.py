"""What of the per-type reference is code, not text: each type's dimension formulas (a name, the text the
tables show, the function that computes it from a test) and its facts (the text, the function that checks
it), and the conditions the schemas' x-condition annotations name. The texts of the keys themselves are in
the schemas (porting/schema_model.py reads them)."""
from porting.facts import (fact_binary_history, fact_conv_layout, fact_conv_state_replay, fact_demo_forward_params,  # noqa: F401
                           fact_packed_boundaries, fact_packed_positions, fact_packed_states, fact_draft_tree,
                           fact_demo_linear_layout, fact_forward_wkv_layout, fact_hash_trace_shapes,
                           fact_head_ranges, fact_offsets_prefix_sums, fact_packed_offsets,
                           fact_rollbacks_mandatory, fact_row_shards, fact_rows_are_residues_plus_offsets,
                           fact_safetensors_offsets, fact_segments_chain, fact_steps_simulated, fact_token_lookup,
                           fact_token_map, fact_v41_stream_layout, fact_wkv_flush_interval, fact_wkv_layout, fwd_dims,
                           hash_dims, layout_dims,
                           table_d)

HASH_DIMS = {
    "L": ("len(layers), the layers in `layer_ids` order", lambda x: hash_dims(x)["L"]),
    "M": ("maxNgram = len(layers[0].multipliers)", lambda x: hash_dims(x)["M"]),
    "H": ("heads = len(layers[0].primes[0])", lambda x: hash_dims(x)["H"]),
    "C": ("(M − 1) · H columns per layer, order-major: column (n − 2) · H + head", lambda x: hash_dims(x)["C"]),
}

DEMO_DIMS = {
    "hc": ("group `hc`", lambda x: x.g["hc"]),
    "H": ("group `hidden`", lambda x: x.g["hidden"]),
    "K": ("group `in`", lambda x: x.g["in"]),
    "kernel": ("group `kernel`", lambda x: x.g["kernel"]),
}

D_DIMS = {"N": ("len(rowIds)", lambda x: len(x.t["rowIds"])), "d": ("the table's `headDim`", table_d)}
W_DIM = {"W": ("group `world`", lambda x: x.g["world"])}


# x-condition text -> when the key is in the vector, beyond its role's rule (group and input keys: always;
# outputs, optional outputs, references, informative keys: in valid tests). f(x, key name), x a facts Ctx.
CONDITIONS = {
    "some tests": lambda x, k: k in x.t,
    "valid tests with `padId`": lambda x, k: "padId" in x.t,
    "append": lambda x, k: x.e["op"] == "append",
    "rollback": lambda x, k: x.e["op"] == "rollback",
    "fork": lambda x, k: x.e["op"] == "fork",
    "append, rollback": lambda x, k: x.e["op"] != "fork",
    "append, valid tests": lambda x, k: x.e["op"] == "append",
    "append, rollback, valid tests": lambda x, k: x.e["op"] != "fork",
    "not with `sequences`": lambda x, k: "sequences" not in x.t,
    "micro-batch tests": lambda x, k: x.valid and "segments" not in x.t,
    "invalid tests": lambda x, k: not x.valid,
    "valid segment tests": lambda x, k: x.valid and "ids" in x.t,
    "valid micro-batch tests": lambda x, k: x.valid and "sequences" in x.t,
    "`microBatches` elements only": lambda x, k: x.where == "microBatches",
    "bf16 tests": lambda x, k: "weightCodes" not in x.t,
    "fp8 tests": lambda x, k: "weight" not in x.t,
    "valid fp8 tests": lambda x, k: "weight" not in x.t,
    "encoding `engram`": lambda x, k: x.t["encoding"] == "engram",
    "encoding `vllm`": lambda x, k: x.t["encoding"] == "vllm",
    "encoding `onnxruntime`": lambda x, k: x.t["encoding"] == "onnxruntime",
    "encoding `sglang`": lambda x, k: x.t["encoding"] == "sglang",
    "encoding `slotCache`": lambda x, k: x.t["encoding"] == "slotCache",
    "encodings `vllm`, `slotCache`": lambda x, k: x.t["encoding"] in ("vllm", "slotCache"),
    "v4.1": lambda x, k: x.profile == "v4.1",
    "demo-v1": lambda x, k: x.profile == "demo-v1",
}

CODE = {
    "BoundedIntegersTest": dict(
        dims={"count": ("the input `count`", lambda x: x.t["count"])},
        facts=[("every value v has low ≤ v < high", lambda x: all(x.t["low"] <= w < x.t["high"] for w in x.t["values"]))]),
    "MultipliersTest": dict(
        dims={"maxNgram": ("the input `maxNgram`", lambda x: x.t["maxNgram"])},
        facts=[("every multiplier is odd and in [1, 2 · intermediate.bound − 1]",
                lambda x: all(m % 2 == 1 and 1 <= m <= 2 * x.t["intermediate"]["bound"] - 1 for m in x.t["multipliers"]))]),
    "LayoutTest": dict(
        dims={"L": ("the number of layer ids in `config` (in its `text_config` in the HF shape)", lambda x: layout_dims(x)["L"]),
              "M": ("the configuration's max n-gram order", lambda x: layout_dims(x)["M"]),
              "H": ("the configuration's heads per order", lambda x: layout_dims(x)["H"]),
              "C": ("(M − 1) · H", lambda x: layout_dims(x)["C"])},
        facts=[("offsets are the exclusive prefix sums of the primes flattened order-major, and numEmbeddings their sum",
                fact_offsets_prefix_sums)]),
    "HashTest": dict(
        dims=dict(HASH_DIMS, T=("len(ids)", lambda x: len(x.t["ids"]))),
        facts=[("rows[t][l][c] = intermediate[t].residues[l][c] + layers[l].offsets[c], with 0 ≤ residue < the "
                "column's prime (primes flattened order-major)", fact_rows_are_residues_plus_offsets),
               ("each intermediate[t] has exactly the keys window, blocked, tokens, mixes, residues, of lengths M, M, "
                "M, L × (M − 1), L × C, all integers, blocked only 0 or 1", fact_hash_trace_shapes)]),
    "HashStateTest": dict(
        dims=dict(HASH_DIMS, n=("len(step.ids)", lambda x: len(x.e["ids"])),
                  h=("min(positionAfter, M − 1)", lambda x: min(x.e["positionAfter"], hash_dims(x)["M"] - 1))),
        facts=[("replaying the steps on plain id lists (append extends, rollback truncates, fork copies, onto an "
                "existing name too) gives every positionAfter and historyAfter; an append gives one row per id",
                fact_steps_simulated),
               ("every rollback is within the mandatory depth of §HASH.6 (0 for a new sequence, min(d + n, "
                "rollbackCapacity) after an append of n, d − k after a rollback by k, copied by a fork)",
                fact_rollbacks_mandatory)]),
    "HashHandoffTest": dict(
        dims=dict(HASH_DIMS, N=("len(ids)", lambda x: len(x.t["ids"])),
                  S=("len(sequences)", lambda x: len(x.t["sequences"])),
                  n=("to − from", lambda x: x.e["to"] - x.e["from"])),
        facts=[("each segment's historyIn is the previous segment's historyOut of the same sequence; the first "
                "historyIn of a sequence is its start: position P (0, or P > 0 for a sequence that began elsewhere) "
                "with min(P, M − 1) ids; from and to index the ids, so historyIn.position = P + from and "
                "historyOut.position = P + to; each history is the last min(position, M − 1) ids before it (the "
                "start's ids, then the sequence's), and the last historyOut is at P + the sequence's length",
                fact_segments_chain),
               ("historyInBinary decodes (§HASH.9 binary form) to the same position and ids as historyIn, with the "
                "group's layoutFingerprint (or, in invalid tests, historyIn's own)", fact_binary_history)]),
    "TokenMapTest": dict(
        dims={"T": ("the output `tokens`", lambda x: x.t["tokens"]),
              "V": ("the output `compressedSize`", lambda x: x.t["compressedSize"])},
        facts=[("map[0] = 0, the map is dense and first-seen, compressedSize = max(map) + 1, and sha256 is the SHA-256 "
                "of the entries as int32 little-endian", fact_token_map),
               ("compressedPad = map[padId]", lambda x: "padId" not in x.t or x.t["compressedPad"] == x.t["map"][x.t["padId"]]),
               ("compressedSize = engramCompressedVocabSize where that is given",
                lambda x: "engramCompressedVocabSize" not in x.t or x.t["compressedSize"] == x.t["engramCompressedVocabSize"])]),
    "TokenLookupTest": dict(
        dims={"N": ("len(rawIds)", lambda x: len(x.t["rawIds"]))},
        facts=[("ids[i] = map[rawIds[i]], except DEAD (−1) for a raw −1 or where mask[i] is false (v4.1) and rawIds[i] "
                "itself where it is negative (demo-v1)", fact_token_lookup)]),
    "E4M3DecodeTest": dict(
        dims={},
        facts=[]),
    "E8M0DecodeTest": dict(
        dims={},
        facts=[]),
    "ElementDecodeTest": dict(
        dims={},
        facts=[]),
    "SyntheticLookupTest": dict(
        dims=D_DIMS,
        facts=[]),
    "SafetensorsLookupTest": dict(
        dims={"N": D_DIMS["N"], "d": ("group `headDim`", lambda x: x.g["headDim"]),
              "S": ("d / 32 scales per row", lambda x: x.g["headDim"] // 32)},
        facts=[("dataOffset = 8 + len(header); the header puts the weight at [0, R·d) and the scale at "
                "[R·d, R·d + R·S) of the data section; codesOffset = dataOffset + rowId·d and scalesOffset = "
                "dataOffset + R·d + rowId·S", fact_safetensors_offsets)]),
    "PackedLookupTest": dict(
        dims={"N": D_DIMS["N"], "d": ("group `headDim`", lambda x: x.g["headDim"]),
              "W": ("group `rowLength` = d + d/32", lambda x: x.g["rowLength"])},
        facts=[("rowLength = d + d/32 and offset = rowId · rowLength", fact_packed_offsets)]),
    "FloatLookupTest": dict(
        dims={"N": D_DIMS["N"], "w": ("the table's `width`", lambda x: x.g["table"]["width"])},
        facts=[]),
    "RowShardTest": dict(
        dims=dict(D_DIMS, **W_DIM),
        facts=[("part = ⌈R / W⌉ and shards[r] = [min(r·part, R), min((r+1)·part, R))", fact_row_shards)]),
    "HeadShardTest": dict(
        dims=dict({"C": ("group `columns`", lambda x: x.g["columns"]),
                   "P": ("positions: len(rowIds) / C (1 in the 24-column groups; 1–3 in random cases)",
                         lambda x: len(x.t["rowIds"]) / x.g["columns"]),
                   "d": D_DIMS["d"]}, **W_DIM),
        facts=[("headRanges[r] = [min(r·hp, C), min((r+1)·hp, C)) with hp = ⌈C / W⌉", fact_head_ranges),
               ("len(rowIds) is a positive multiple of C", lambda x: len(x.t["rowIds"]) > 0 and len(x.t["rowIds"]) % x.g["columns"] == 0)]),
    "GateFunctionTest": dict(
        dims={},
        facts=[]),
    "V41GateTest": dict(
        dims={"hc": ("group `hc`", lambda x: x.g["hc"]), "dim": ("group `dim`", lambda x: x.g["dim"])},
        facts=[("layout: with h = x[c·dim:(c+1)·dim], k = key[c·dim:(c+1)·dim] and w = qWeight · kWeight over the same "
                "range, Σh², Σk² and Σ(h·w)·k in float64 are `intermediate[c].float64` `sumH2`, `sumK2`, `sumHwk`",
                fact_v41_stream_layout)]),
    "WkvTest": dict(
        dims={"K": ("len(e)", lambda x: len(x.t["e"])), "N": ("`outFeatures`", lambda x: x.t["outFeatures"])},
        facts=[("each test has either weight or weightCodes + weightScales", lambda x: ("weight" in x.t) != ("weightCodes" in x.t)),
               ("layout: `Σ_k e[k] · W[n·K + k]` in float64 is `kvRef64[n]`, with W the decoded bf16 `weight`, or "
                "for fp8 the decoded code `weightCodes[n·K + k]` times `2^(weightScales[(n div 32)·(K/32) + k div 32] "
                "− 127)` and e the activation decoded from the `intermediate` codes and scales", fact_wkv_layout),
               ("bf16 tests: with the terms `t = e[k] · W[n·K + k]`, D those with a subnormal factor and N the nonzero "
                "ones that are not multiples of 2^−126, `kvLow64[n] = min(kvRef64[n], Σ(t, k ∉ D) + Σ(min(t, 0), k ∈ D) "
                "− N · 2^−126)` and `kvHigh64[n]` the same with max and + (§FUS.9: the flushes to zero a bf16 GEMM may "
                "make); fp8 tests have neither", fact_wkv_flush_interval)]),
    "DemoGateTest": dict(
        dims=DEMO_DIMS,
        facts=[("layout: `Σ_k e[k] · keyWeight[(c·H + n)·K + k] + keyBias[c·H + n]` in float64 is "
                "`intermediate.streams[c].float64.key[n]`, and `Σ_k e[k] · valueWeight[n·K + k] + valueBias[n]` is "
                "`intermediate.valueProj.float64[n]`", fact_demo_linear_layout)]),
    "ShortConvTest": dict(
        dims=dict(DEMO_DIMS, T=("the input `steps`", lambda x: x.t["steps"])),
        facts=[("layout: `conv[t][ch] = Σ_j convWeight[ch·kernel + j] · normed[t − (kernel − 1 − j)·dilation][ch]` "
                "(0 before the first step) in float64 is `intermediate.float64.conv`, from its `normed`, "
                "both flat [T][hc·H]", fact_conv_layout)]),
    "ShortConvStateTest": dict(
        dims=dict(DEMO_DIMS,
                  W=("(group `kernel` − 1) · group `dilation`", lambda x: (x.g["kernel"] - 1) * x.g["dilation"]),
                  N=("the steps of every append, summed", lambda x: sum(c["steps"] for c in x.t["calls"] if c["op"] == "append")),
                  n=("the call's `steps`", lambda x: x.e["steps"])),
        facts=[("replaying the calls on a list of normed rows (`stateIn`, or W rows of +0; an append extends it with "
                "the step's `intermediate.float64.normed` row, a rollback by k drops the last k rows) gives every "
                "`intermediate.float64.window[t][j]` as the row (kernel − 1 − j)·dilation before the step's, "
                "`conv[t][ch] = Σ_j convWeight[ch·kernel + j] · window[t][j][ch]`, and `stateOut` as the last W rows; "
                "every rollback is within the depth of §FUS.12", fact_conv_state_replay)]),
    "EngramForwardTest": dict(
        dims={"T": ("len(ids)", lambda x: len(x.t["ids"])),
              "hc": ("`hc_mult` (v4.1) or group `hc` (demo)", lambda x: fwd_dims(x)["hc"]),
              "dim": ("config `dim` (v4.1)", lambda x: fwd_dims(x)["dim"]),
              "C": ("(maxNgram − 1) · heads from the config (v4.1)", lambda x: fwd_dims(x)["C"]),
              "hd": ("config `engram_head_dim` (v4.1)", lambda x: fwd_dims(x)["hd"]),
              "H": ("group `hidden` (demo)", lambda x: fwd_dims(x)["Hd"]),
              "K": ("group `in` (demo)", lambda x: fwd_dims(x)["K"]),
              "kernel": ("group `kernel` (demo)", lambda x: fwd_dims(x)["kernel"])},
        facts=[("demo groups: `hc` = `hc_mult`, `hidden` = `hidden_size`, `kernel` = `kernel_size`, `dilation` = "
                "`max_ngram_size`, `in` = (`max_ngram_size` − 1) · `n_embed_per_ngram` of the config",
                lambda x: x.profile != "demo-v1" or fact_demo_forward_params(x)),
               ("layout (v4.1): per position, wkvWeightCodes[n·(C·hd) + k] decoded with the scale "
                "wkvWeightScales[(n div 32)·(C·hd/32) + k div 32] applied to `intermediate.e` points the same way as "
                "`intermediate.kvRef64` (cosine > 0.99; e is fp8-quantized on the way, §FUS.2.1)",
                fact_forward_wkv_layout)]),
    "PackedBatchTest": dict(
        dims=dict(HASH_DIMS, T=("len(ids): the slots, padding included", lambda x: len(x.t["ids"])),
                  B=("len(cuSeqlens) − 1: the requests", lambda x: len(x.t["cuSeqlens"]) - 1),
                  N=("cuSeqlens[B]: the request slots", lambda x: x.t["cuSeqlens"][-1]),
                  W=("the table's width: the largest P + n of a request", lambda x: len(x.t["tokenTable"][0])),
                  S=("the slot cache's slots", lambda x: len(x.t["slotCache"]))),
        facts=[("cuSeqlens starts at 0 and never decreases, and cuSeqlens[B] ≤ T; the slots from cuSeqlens[B] on "
                "are padding, at position 0 (valid tests)", fact_packed_boundaries),
               ("positions[cuSeqlens[r] + j] = P + j, P the request's position before the call (historyIn[r].position "
                "in `engram`)", fact_packed_positions),
               ("in `engram`, historyOut[r] is at P + n (n the request's slots) and holds the last min(P + n, M − 1) "
                "ids of historyIn[r].history then the request's slots; in `onnxruntime`, presentIds[r] is the last "
                "M − 1 of pastIds[r] then the slots (padding never enters it)", fact_packed_states)]),
    "DraftTreeTest": dict(
        dims=dict(HASH_DIMS, T=("len(ids)", lambda x: len(x.t["ids"])),
                  B=("len(cuSeqlens) − 1: the requests", lambda x: len(x.t["cuSeqlens"]) - 1),
                  N=("cuSeqlens[B] = T", lambda x: x.t["cuSeqlens"][-1])),
        facts=[("each parent is −1 or an earlier draft of its request, each position is P + the draft's depth, and "
                "accepted[r] is a path from a draft of parent −1; in `engram`, historyOut[r] holds historyIn[r] then "
                "the accepted drafts' ids (the rejected ones never)", fact_draft_tree)]),
    "AccumulatedHashTest": dict(
        dims=HASH_DIMS,
        facts=[]),
}
