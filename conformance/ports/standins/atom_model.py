"""Stand-in of ROCm/ATOM's atom/models/deepseek_v41.py Engram classes as conformance/ports/atom/adapter.py loads them
(_V41_ENGRAM_AITER, _V41_ENGRAM_FUSED_GATE, _ENGRAM_SCALE_BLOCK, _aiter_op, EngramEmbedding, Engram), with none of
the port's code: the table's rows and the gated streams come from the in-tree numpy port (_ref.py), an id outside
the table refused as the spec says (the port reads it as zeros: docs/ports.md), so an adapter that loads the codes
or scales wrongly, or
passes the gate's kv, q / k or eps wrongly, fails. CI runs the adapter on it; the measurement needs the checkout."""

_V41_ENGRAM_AITER = False
_V41_ENGRAM_FUSED_GATE = False
_ENGRAM_SCALE_BLOCK = 32


def _aiter_op(name):
    return None


class EngramEmbedding(nn.Module):
    """One rank's fp8 table: weight [rows, dim] E4M3, weight_scale [rows, dim // block] E8M0 bytes."""

    def __init__(self, num_embeddings, dim, block=32):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(num_embeddings, dim, dtype=torch.float8_e4m3fn), requires_grad=False)
        self.weight_scale = nn.Parameter(torch.zeros(num_embeddings, dim // block, dtype=torch.uint8),
                                         requires_grad=False)

    @property
    def scale(self):  # the name _ref.table_rows reads
        return self.weight_scale

    def forward(self, indices):
        return __import__("_ref").table_rows(self, indices)


class Engram(nn.Module):
    def __init__(self, args, layer_id, layout):
        super().__init__()
        self.dim, self.hc_mult, self.eps = args.dim, args.hc_mult, args.norm_eps
        self.embed = EngramEmbedding(layout.num_embeddings[layout.layer_ids.index(layer_id)], layout.head_dim)
        self.wkv = ReplicatedLinear(layout.n_hash_cols * layout.head_dim, args.dim * (args.hc_mult + 1), bias=False,
                                    quant_config=args.quant_config, prefix=f"layers.{layer_id}.engram.wkv")
        self.q_weight = nn.Parameter(torch.ones(args.hc_mult, args.dim), requires_grad=False)
        self.k_weight = nn.Parameter(torch.ones(args.hc_mult, args.dim), requires_grad=False)

    def forward(self, x, hash_ids, token_mask=None):
        return __import__("_ref").engram_forward(self, x, hash_ids, token_mask)
