"""What the stand-ins delegate to: the in-tree numpy port (conformance/python/engram_numpy_port), which passes
every vector of the hash family (conform_tests). A stand-in has a port's API (names, signatures, tensor shapes)
and none of its code: it answers as the spec does, so that an adapter run on it must give OK, and an adapter
that maps the API wrongly (DEAD, the pad, the position, the history, the layout fields) fails."""
import engram_numpy_port as ref  # conformance/python, on PYTHONPATH (standin_test.py sets it)

DEAD = ref.DEAD


def v41_config(layer_ids, max_ngram, heads, base, num_embeddings=None):
    return {"profile": "v4.1", "layer_ids": list(layer_ids), "max_ngram": max_ngram, "heads": heads,
            "bases": [base] * max(max_ngram - 1, 0), "num_embeddings": None if num_embeddings is None
            else list(num_embeddings), "seed": 0, "v": None, "pad_id": 0}


def check_v41_config(cfg):
    """The §CFG checks the numpy port's parse_config makes, on the stand-in's own fields."""
    doc = {"engram_layer_ids": cfg["layer_ids"], "engram_max_ngram_size": cfg["max_ngram"],
           "engram_n_heads": cfg["heads"], "engram_vocab_size": cfg["bases"][0] if cfg["bases"] else 2,
           "engram_pad_id": 0, "engram_compressed_vocab_size": 1, "engram_head_dim": 1}
    if cfg["num_embeddings"] is not None:
        doc["engram_num_embeddings"] = cfg["num_embeddings"]
    ref.parse_config(doc, "v4.1")


def next_prime(start, seen):
    """§LAY.2 The smallest prime above `start` not in `seen` (the stand-ins' find_next_prime)."""
    candidate = start + 1
    while not ref.is_prime(candidate) or candidate in seen:
        candidate += 1
    return candidate


def multipliers_of(layer_ids, max_ngram, v):
    """§RNG.4 [layer][slot] multipliers of seed 0 (the stand-ins' compute_hash_multipliers)."""
    return [ref.multipliers(0, l, v, max_ngram) for l in layer_ids]


def v41_layout(layer_ids, max_ngram, heads, base, num_embeddings):
    """The §CFG / §LAY checks of a v4.1 configuration and its layout (primes [layer][order][head], offsets
    [layer][col]); V plays no part in them."""
    cfg = v41_config(layer_ids, max_ngram, heads, base, num_embeddings)
    check_v41_config(cfg)
    layout = ref.build_layout(cfg, 1, 0)
    return {"primes": tuple(tuple(tuple(order) for order in l["primes"]) for l in layout["layers"]),
            "offsets": [l["offsets"] for l in layout["layers"]]}


# ------------------------------------------------------------------ the official module's stand-ins (torch >= 2.1)

def fp8_table(module, rows, dim):
    """§STO.1-2 an fp8 table's parameters on `module`: weight [rows][dim] E4M3 codes, scale [rows][dim / 32] E8M0."""
    import torch
    module.weight = torch.nn.Parameter(torch.zeros((rows, dim), dtype=torch.uint8).view(torch.float8_e4m3fn),
                                       requires_grad=False)
    module.scale = torch.nn.Parameter(torch.zeros((rows, dim // 32), dtype=torch.uint8).view(torch.float8_e8m0fnu),
                                      requires_grad=False)


def table_rows(module, indices, outside_zero=False):
    """§STO.6 the bf16 rows of `indices` in the module's fp8 table, decoded by the numpy port; an id outside the table
    is refused, or with `outside_zero` read as a row of +0 (the official ParallelEngramEmbedding's mask)."""
    import numpy as np
    import torch
    codes, scales = module.weight.view(torch.uint8).numpy(), module.scale.view(torch.uint8).numpy()
    n, d = codes.shape
    rows = []
    for i in indices.reshape(-1).tolist():
        if not 0 <= i < n and not outside_zero:
            raise IndexError(f"row {i} outside the table of {n}")
        rows.append(ref.decode_row(codes[i], scales[i]) if 0 <= i < n else np.zeros(d, dtype=np.uint16))
    return torch.tensor(np.array(rows, dtype=np.uint16).reshape(-1, d).astype(np.int16)).view(
        torch.bfloat16).reshape(*indices.shape, d)


def linear_params(module, in_features, out_features, dtype):
    """A Linear's parameters: weight [out][in] of `dtype`; for fp8, scale [ceil(out / 32)][ceil(in / 32)] E8M0."""
    import torch
    module.weight = torch.nn.Parameter(torch.zeros((out_features, in_features), dtype=dtype), requires_grad=False)
    module.scale = None
    if dtype == torch.float8_e4m3fn:
        module.scale = torch.nn.Parameter(torch.zeros(((out_features + 31) // 32, (in_features + 31) // 32),
                                                      dtype=torch.float8_e8m0fnu), requires_grad=False)
        module.weight.scale = module.scale


def linear(x, weight, scale):
    """§FUS.2 x [..., K] bf16 projected by `weight`: fp8 (act_quant, the 32 x 32 block GEMM) or bf16 (float32 sums),
    as the numpy port computes WkvTest; bf16 results [..., N]."""
    import numpy as np
    import torch
    from engram_numpy_port import fusion
    shape, n = x.shape, weight.shape[0]
    rows = [[b & 0xFFFF for b in r] for r in x.reshape(-1, shape[-1]).contiguous().view(torch.int16).tolist()]
    if weight.dtype == torch.bfloat16:
        w = [fusion.bf16v(b & 0xFFFF) for b in weight.contiguous().view(torch.int16).reshape(-1).tolist()]
        y = [fusion.linear([fusion.bf16v(b) for b in r], w, n, 32) for r in rows]
    else:
        codes, scales = weight.view(torch.uint8).reshape(-1).tolist(), scale.view(torch.uint8).reshape(-1).tolist()
        y = [fusion.fp8_linear(*fusion.act_quant(r), codes, scales, n, len(r), 32) for r in rows]
    bits = np.array([[fusion.bf16_of(v) for v in r] for r in y], dtype=np.uint16).astype(np.int16)
    return torch.tensor(bits).view(torch.bfloat16).reshape(*shape[:-1], n)


def engram_params(module, args, layer_id, layout, embedding_class, linear_class):
    """What Engram.__init__ sets: dim, hc_mult, eps, the layer's fp8 table, the fp8 wkv and the q / k weights."""
    import torch
    module.dim, module.hc_mult, module.eps = args.dim, args.hc_mult, args.norm_eps
    module.embed = embedding_class(layout.num_embeddings[layout.layer_ids.index(layer_id)], layout.head_dim)
    cols = (layout.max_ngram_size - 1) * layout.n_heads
    module.wkv = linear_class(cols * layout.head_dim, args.dim * (args.hc_mult + 1), dtype=torch.float8_e4m3fn)
    module.q_weight = torch.nn.Parameter(torch.ones(args.hc_mult, args.dim), requires_grad=False)
    module.k_weight = torch.nn.Parameter(torch.ones(args.hc_mult, args.dim), requires_grad=False)


def engram_forward(module, x, hash_ids, token_mask):
    """§FUS.3 x + gate * value for every position and copy, by the numpy port's float32 mirror (v41_stream)."""
    import torch
    kv = module.wkv(module.embed(hash_ids).flatten(-2))
    _, steps, hc, dim = x.shape
    out = torch.zeros(x.shape, dtype=torch.float32)
    for t in range(steps):
        row = kv[0, t].float().tolist()
        masked = token_mask is not None and not bool(token_mask[0, t])
        for c in range(hc):
            _, vals = ref.v41_stream(x[0, t, c].float().tolist(), row[c * dim:(c + 1) * dim], row[hc * dim:],
                                     module.q_weight[c].float().tolist(), module.k_weight[c].float().tolist(),
                                     module.eps, masked, 32)
            out[0, t, c] = torch.tensor(vals, dtype=torch.float32)
    return out.to(x.dtype)


# ------------------------------------------------------------------ the demo-v1 modules' stand-ins (engram_demo_v1.py,
# Megatron's EngramModule): gates and the ShortConv from the numpy port's float32 demo-v1 fusion (torch, imported late)

def demo_fusion(hc, hidden, inn, kernel, dilation, arrays):
    """engram_numpy_port.fusion.Demo over the given tensors (the others zero: they play no part)."""
    from engram_numpy_port import fusion
    sizes = {"keyWeight": hc * hidden * inn, "keyBias": hc * hidden, "norm1Weight": hc * hidden,
             "norm2Weight": hc * hidden, "valueWeight": hidden * inn, "valueBias": hidden,
             "convNormWeight": hc * hidden, "convWeight": hc * hidden * kernel}
    g = {"hc": hc, "hidden": hidden, "in": inn, "kernel": kernel, "dilation": dilation}
    for key, n in sizes.items():
        values = arrays[key].reshape(-1).tolist() if key in arrays else [0.0] * n
        g[key] = [float(v).hex() for v in values]
    return fusion.Demo(g)


_WEIGHT = []


def demo_weight(*shape, bias=False):
    """A torch module holding a weight (a stand-in's RMSNorm) or a weight and bias (its value projection, whose
    output is the numpy port's float32 linear: the adapters hook that output)."""
    if not _WEIGHT:
        import torch
        from engram_numpy_port import fusion

        class Weight(torch.nn.Module):
            def __init__(self, *shape, bias=False):
                super().__init__()
                self.weight = torch.nn.Parameter(torch.ones(*shape))
                self.bias = torch.nn.Parameter(torch.zeros(shape[0])) if bias else None

            def forward(self, x):
                out, inn = self.weight.shape
                w, b = self.weight.reshape(-1).tolist(), self.bias.tolist()
                rows = [fusion.linear(r, w, out, 32, b) for r in x.reshape(-1, inn).tolist()]
                return torch.tensor(rows, dtype=torch.float32).reshape(*x.shape[:-1], out)

        _WEIGHT.append(Weight)
    return _WEIGHT[0](*shape, bias=bias)


def demo_short_conv(x, norms, conv_weight, kernel, dilation):
    """x [B, T, hc, H] -> the numpy port's §FUS.7 ShortConv (norm eps 1e-5, SiLU) of the given norm modules and
    depthwise conv weight, [B, T, hc, H]."""
    import torch
    B, T, G, H = x.shape
    dm = demo_fusion(G, H, 1, kernel, dilation, {"convNormWeight": torch.stack([n.weight for n in norms]),
                                                 "convWeight": conv_weight})
    out = [dm.short_conv(x[b].reshape(-1).tolist(), T, 32) for b in range(B)]
    return torch.tensor(out, dtype=torch.float32).reshape(B, T, G, H)


def demo_gates(module, e, hidden):
    """The numpy port's §FUS.6 gates [B, S, hc] of a module's key_projs / norm1 / norm2 / value_proj for
    embeddings e [B, S, K] and hidden states [B, S, hc * H] (one per slot)."""
    import torch
    B, S, K = e.shape
    dm = demo_fusion(len(module.key_projs), module.value_proj.weight.shape[0], K, 1, 1,
                     {"keyWeight": torch.stack([p.weight for p in module.key_projs]),
                      "keyBias": torch.stack([p.bias for p in module.key_projs]),
                      "norm1Weight": torch.stack([n.weight for n in module.norm1]),
                      "norm2Weight": torch.stack([n.weight for n in module.norm2]),
                      "valueWeight": module.value_proj.weight, "valueBias": module.value_proj.bias})
    return torch.tensor([[dm.gate_token(e[b, s].tolist(), hidden[b, s].tolist(), 32)[0] for s in range(S)]
                         for b in range(B)], dtype=torch.float32)
