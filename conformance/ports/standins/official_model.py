"""Stand-in of the official V4.1 inference/model.py's Engram classes as tt-metal vendors them (Linear, linear,
ParallelEngramEmbedding, Engram and the module globals they read), and of the Linear sglang's manual-test model
keeps in dsv41_linear.py: the names and signatures conformance/python/engram_adapter/official_api.py calls, and no
code of either port. Every value comes from the in-tree numpy port (_ref.py)."""

world_size = 1
rank = 0
default_dtype = torch.float8_e4m3fn
fp8_block_size = 32
fp4_block_size = 32
scale_fmt = "ue8m0"
scale_dtype = torch.float8_e8m0fnu


def linear(x, weight, bias=None):
    return __import__("_ref").linear(x, weight, getattr(weight, "scale", None))


class Linear(nn.Module):
    def __init__(self, in_features, out_features, bias=False, dtype=None):
        super().__init__()
        __import__("_ref").linear_params(self, in_features, out_features, dtype or torch.float8_e4m3fn)

    def forward(self, x):
        return __import__("_ref").linear(x, self.weight, self.scale)


class ParallelEngramEmbedding(nn.Module):
    """One rank's table: an id outside it reads as a row of +0, as the official mask does (RowOutsideTableZeroed)."""

    def __init__(self, num_embeddings, dim):
        super().__init__()
        __import__("_ref").fp8_table(self, num_embeddings, dim)

    def forward(self, indices):
        return __import__("_ref").table_rows(self, indices, outside_zero=True)


class Engram(nn.Module):
    def __init__(self, args, layer_id, layout):
        super().__init__()
        __import__("_ref").engram_params(self, args, layer_id, layout, ParallelEngramEmbedding, Linear)

    def forward(self, x, hash_ids, token_mask=None):
        return __import__("_ref").engram_forward(self, x, hash_ids, token_mask)
