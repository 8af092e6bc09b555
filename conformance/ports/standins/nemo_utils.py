"""Stand-in of NVIDIA-NeMo/Automodel's nemo_automodel/components/models/common/utils.py as
conformance/ports/nemo/adapter.py loads it (HAVE_TE, HAVE_DEEP_EP, HAVE_UCCL_EP, TEFp8Config, BackendConfig,
initialize_linear_module), with none of its code: the linear's sums come from the in-tree numpy port (fusion.linear),
so an adapter that loads the WkvTest's weight or input wrongly (transposed, another dtype) fails."""

HAVE_TE = False
HAVE_DEEP_EP = False
HAVE_UCCL_EP = False


@dataclass(kw_only=True)
class TEFp8Config:
    recipe: Any = "current"


@dataclass(kw_only=True)
class BackendConfig:
    """Only the field the adapter reads: the linear backend, "torch" without Transformer Engine or CUDA."""
    linear: Literal["torch", "te"] = "torch"


def initialize_linear_module(linear_impl, in_features, out_features, bias=False, device=None, dtype=torch.bfloat16):
    """A bias-free linear of weight [out][in] in `dtype`, computed by the numpy port (§FUS.2, float32 sums); defined
    here, as the adapter loads only the names the port's file has."""
    if linear_impl != "torch" or bias:
        raise ValueError(f"the stand-in builds only a bias-free torch linear, not {linear_impl!r}, bias {bias}")

    class Linear(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.zeros((out_features, in_features), dtype=dtype), requires_grad=False)

        def forward(self, x):
            # the numpy port's float32 sums and its bf16 rounding (§FUS.3)
            from engram_numpy_port import fusion
            w = [fusion.bf16v(b & 0xFFFF) for b in self.weight.contiguous().view(torch.int16).reshape(-1).tolist()]
            rows = x.reshape(-1, in_features).contiguous().view(torch.int16).tolist()
            y = [[fusion.bf16_of(v) for v in fusion.linear([fusion.bf16v(b & 0xFFFF) for b in r], w, out_features, 32)]
                 for r in rows]
            bits = torch.tensor(y, dtype=torch.int32).to(torch.int16)  # 0x8000.. wraps to the same 16 bits
            return bits.view(torch.bfloat16).reshape(*x.shape[:-1], out_features)
    return Linear()
