"""Stand-in of the fp8 kernels the official V4.1 Linear reaches: tt-metal's kernel_cpu.py (act_quant, fp8_gemm) and
sglang's torch_quant.py (naive_linear): the names the adapters load, and no code of either port. The stand-ins'
Linear (official_model.py) computes from the numpy port directly, so these are only found, not called."""

FP8_MAX = 448.0
FP8_BLOCK_SIZE = 32
FP8_AMAX_FLOOR = 1e-4
_FP8_MAX_INV = fast_round_scale = _to_e4m3_satfinite = _block_scaled_gemm = None
ceil_pow2 = block_scale = quant_fp8_act = dequant_fp8_weight = None


def act_quant(x, block_size=128, scale_fmt=None, scale_dtype=None, inplace=False):
    raise NotImplementedError("the stand-in's Linear does not quantize through act_quant")


def fp8_gemm(a, a_s, b, b_s, scale_dtype=None, block_size=128):
    raise NotImplementedError("the stand-in's Linear does not call fp8_gemm")


def naive_linear(x, weight, scale=None):
    return __import__("_ref").linear(x, weight, scale)
