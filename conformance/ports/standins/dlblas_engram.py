"""Stand-in of DeepLink-org/DLBlas's dlblas/kernels/engram.py API as conformance/ports/dlblas/adapter.py drives it
(EngramTri: its submodules, _precompute_buffers, forward(embeddings, hidden_states); the two autotuned kernels'
config lists), with none of its code: no kernel, the gate, the value and ShortConv come from the in-tree numpy
port (_ref.py) in float32, which follows the spec; so an adapter that maps the API wrongly (the weights' layout,
the streams, the conv taps, the residual) fails. CI runs the adapter on it where torch >= 2.4 and triton are
installed; the real measurement needs the port's checkout."""

# the autotuned kernels as the adapter sees them: a list of configs (it keeps the first), the names of the
# arguments, and a launch `kernel[grid](*args)`; the gate kernel's `output_ptr` receives the gated value
engram_gate_value_rms_kernel = engram_conv_residual_kernel = type("Autotuner", (), {
    "configs": [None], "arg_names": ["output_ptr", "value"],
    "__getitem__": lambda self, grid: lambda output_ptr, value: output_ptr.copy_(value)})()


class EngramTri(nn.Module):
    def __init__(self, engram_hidden_size, hidden_size, kernel_size=4, dilation=1, norm_eps=1e-5, hc_mult=4,
                 activation=True):
        super().__init__()
        self.value_proj = nn.Linear(engram_hidden_size, hidden_size)
        self.key_projs = nn.ModuleList([nn.Linear(engram_hidden_size, hidden_size) for _ in range(hc_mult)])
        self.norm1 = nn.ModuleList([nn.RMSNorm(hidden_size) for _ in range(hc_mult)])
        self.norm2 = nn.ModuleList([nn.RMSNorm(hidden_size) for _ in range(hc_mult)])
        self.norms = nn.ModuleList([nn.RMSNorm(hidden_size, eps=norm_eps) for _ in range(hc_mult)])
        channels = hidden_size * hc_mult
        self.conv = nn.Conv1d(channels, channels, kernel_size=kernel_size, groups=channels, bias=False,
                              padding=(kernel_size - 1) * dilation, dilation=dilation)
        self.hc_mult, self.hidden, self.inn, self.kernel, self.dil = hc_mult, hidden_size, engram_hidden_size, \
            kernel_size, dilation

    def _precompute_buffers(self):
        pass

    def group(self):
        """The module's parameters as a §FUS.10 demo group (the numpy port's Demo reads it)."""
        def flat(*tensors):
            return [float(x).hex() for t in tensors for x in t.detach().reshape(-1).tolist()]

        hc = self.hc_mult
        return {"hc": hc, "hidden": self.hidden, "in": self.inn, "kernel": self.kernel, "dilation": self.dil,
                "keyWeight": flat(*[self.key_projs[c].weight for c in range(hc)]),
                "keyBias": flat(*[self.key_projs[c].bias for c in range(hc)]),
                "norm1Weight": flat(*[self.norm1[c].weight for c in range(hc)]),
                "norm2Weight": flat(*[self.norm2[c].weight for c in range(hc)]),
                "valueWeight": flat(self.value_proj.weight), "valueBias": flat(self.value_proj.bias),
                "convNormWeight": flat(*[self.norms[c].weight for c in range(hc)]),
                "convWeight": flat(self.conv.weight)}

    def forward(self, embeddings, hidden_states):
        """(B, T, in), (B, T, G, C) -> value + ShortConv(value), (B, T, G, C) float32 (§FUS.6, §FUS.7)."""
        ref = __import__("_ref").ref
        B, T, G, C = hidden_states.shape
        dm = ref.fusion.Demo(self.group())
        values, out = [], []
        for b in range(B):
            value = []
            for t in range(T):
                _, v = dm.gate_token(embeddings[b, t].tolist(), hidden_states[b, t].reshape(-1).tolist(), 32)
                value += v
            conv = dm.short_conv(value, T, 32)
            values.append(value)
            out.append([ref.rnd(v + c, 32) for v, c in zip(value, conv)])
        gated = torch.empty((B, T, G, C), dtype=torch.float32)
        engram_gate_value_rms_kernel[(B * T * G,)](gated, torch.tensor(values, dtype=torch.float32).reshape(B, T, G, C))
        return torch.tensor(out, dtype=torch.float32).reshape(B, T, G, C)
