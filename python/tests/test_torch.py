"""Torch tensors in, torch tensors out: every array argument takes a tensor; results come back as tensors on the
caller's device; a torch out= is written in place; the parametrisation helper and assert_conforms.

Skipped, saying so, where torch is not installed (scripts/test_python.sh runs this file with a Python that has
it when there is one). Devices other than the CPU are moved to the CPU for the reference and back; without a
GPU here that path is checked with torch's "meta" device for the way back only.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the torch interface is not tested")
import engram_conformance as engram  # noqa: E402

LAY = engram.Layout("v4.1")
IDS = [5, 0, 98000, -1, 17]


def test_hash_torch_in_torch_out():
    want = engram.hash(LAY, np.array(IDS))
    for dtype in (torch.int64, torch.int32, torch.int16 if max(IDS) < 2**15 else torch.int32):
        got = engram.hash(LAY, torch.tensor(IDS, dtype=dtype))
        assert isinstance(got, torch.Tensor) and got.dtype == torch.int64 and got.device.type == "cpu"
        assert np.array_equal(got.numpy(), want)
    strided = torch.tensor(IDS * 2, dtype=torch.int64).reshape(2, -1).t().reshape(-1)[::2]
    assert np.array_equal(engram.hash(LAY, strided).numpy(), engram.hash(LAY, strided.numpy()))


def test_hash_torch_refusals_name_the_argument():
    with pytest.raises(TypeError, match=r"ids: dtype float32; expected an integer dtype"):
        engram.hash(LAY, torch.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"ids: dtype bool"):
        engram.hash(LAY, torch.tensor([True]))
    with pytest.raises(engram.Error, match=r"ids: position 2 \(id -2\) is negative"):
        engram.hash(LAY, torch.tensor([1, 2, -2]))


def test_torch_out_is_written_in_place():
    out = torch.full((len(IDS), 2, 24), -7, dtype=torch.int64)
    got = engram.hash(LAY, torch.tensor(IDS), out=out)
    assert got is out and np.array_equal(out.numpy(), engram.hash(LAY, IDS))
    s = engram.HashState(LAY)
    out2 = torch.empty((2, 2, 24), dtype=torch.int64)
    assert s.append(torch.tensor(IDS[:2]), out=out2) is out2 and np.array_equal(out2.numpy(), engram.hash(LAY, IDS)[:2])
    with pytest.raises(TypeError, match=r"out: .*got dtype int32"):
        engram.hash(LAY, torch.tensor(IDS), out=torch.empty((len(IDS), 2, 24), dtype=torch.int32))
    with pytest.raises(engram.Error, match=r"out: shape \(1, 2, 24\)"):
        engram.hash(LAY, torch.tensor(IDS), out=torch.empty((1, 2, 24), dtype=torch.int64))


def test_hash_state_and_explain_take_tensors():
    s = engram.HashState(LAY, rollback_capacity=2)
    a = s.append(torch.tensor(IDS[:3]))
    b = s.append(np.array(IDS[3:]))
    assert isinstance(a, torch.Tensor) and isinstance(b, np.ndarray)
    assert np.array_equal(np.concatenate([a.numpy(), b]), engram.hash(LAY, IDS))
    assert engram.explain(LAY, torch.tensor(IDS), position=torch.tensor(2)) == engram.explain(LAY, IDS)[2]


def test_decode_rows_gives_bfloat16():
    codes = torch.arange(64, dtype=torch.uint8).reshape(2, 32)
    scales = torch.tensor([[127], [120]], dtype=torch.uint8)
    got = engram.decode_rows(codes, scales)
    assert got.dtype == torch.bfloat16 and got.shape == (2, 32)
    bits = engram.decode_rows(codes.numpy(), scales.numpy())
    assert np.array_equal(got.view(torch.int16).numpy().view(np.uint16), bits)
    with pytest.raises(engram.Error, match=r"codes: position \[0, 0\] is 312"):
        engram.decode_rows(torch.full((1, 32), 312), scales[:1])
    with pytest.raises(TypeError, match=r"codes: dtype float32"):
        engram.decode_rows(torch.zeros((1, 32)), scales[:1])


def test_fuse_takes_bfloat16_tensors():
    vals = torch.tensor([1.0, -2.5, 0.0, 3.0, 0.125, 7.0, -1.0, 2.0], dtype=torch.bfloat16)
    got = engram.fuse_v41_stream(vals, vals, vals, vals, vals, 1e-6)
    bits = vals.view(torch.int16).numpy().view(np.uint16)
    want = engram.fuse_v41_stream(bits, bits, bits, bits, bits, 1e-6)
    assert got["out_bf16"].dtype == torch.bfloat16 and got["out"].dtype == torch.float64
    assert np.array_equal(got["out_bf16"].view(torch.int16).numpy().view(np.uint16), want["out_bf16"])
    assert got["dot"] == want["dot"]
    with pytest.raises(TypeError, match=r"h: dtype float32; expected uint16 or int16"):
        engram.fuse_v41_stream(vals.float(), vals, vals, vals, vals, 1e-6)


def test_fusion_values_take_any_real_tensor():
    p = engram.DemoParams(hc=1, hidden=2, **{"in": 2}, kernel=2, dilation=1, key_w=torch.ones((1, 2, 2)),
                          key_b=torch.zeros((1, 2)), norm1_w=torch.ones((1, 2)), norm2_w=torch.ones((1, 2)),
                          value_w=torch.ones((2, 2), dtype=torch.bfloat16), value_b=np.zeros(2),
                          conv_norm_w=torch.ones((1, 2)), conv_w=torch.ones((2, 2)))
    value = torch.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=torch.float32)
    got = engram.short_conv(value, p)
    want = engram.short_conv(value.double().numpy(), p)
    assert isinstance(got["act"], torch.Tensor) and np.array_equal(got["act"].numpy(), want["act"])


def test_results_go_back_to_the_callers_device():
    from engram_conformance import _kind
    a = _kind.back(np.arange(3), torch, torch.device("meta"))
    assert a.device.type == "meta" and a.shape == (3,)
    b = _kind.back(np.array([0x3F80], dtype=np.uint16), torch, torch.device("meta"), bf16=True)
    assert b.device.type == "meta" and b.dtype == torch.bfloat16


def test_requires_grad_inputs_are_read_without_copying_gradients():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    assert engram.gate_v41(x[0]) == engram.gate_v41(1.0)
    out = torch.zeros((1, 2, 24), dtype=torch.int64)
    assert engram.hash(LAY, torch.tensor([3]), out=out) is out


# The parametrisation helper: (case, device, dtype), a device that cannot be used here is skipped.
@engram.parametrize("hash_v41", type="HashTest", devices=["cpu", "cuda"], dtypes=[torch.int64, torch.int32])
def test_parametrize_over_devices_and_dtypes(case, device, dtype):
    assert device == "cpu" or torch.cuda.is_available()
    if not case.valid:
        with pytest.raises(engram.Error) as e:
            engram.hash(case.layout, torch.tensor(case.inputs["ids"], dtype=torch.int64, device=device))
        engram.assert_conforms(case, refused=str(e.value))
        return
    if dtype == torch.int32 and any(abs(i) >= 2**31 for i in case.inputs["ids"]):
        pytest.skip("ids beyond int32")
    ids = torch.tensor(case.inputs["ids"], dtype=dtype, device=device)
    rows = engram.hash(case.layout, ids)
    assert rows.device == ids.device
    engram.assert_conforms(case, {"rows": rows})


def test_case_params_ids_and_skips():
    params = engram.case_params("hash_v41", "HashTest", devices=["cpu", "cuda"], dtypes=[torch.int32])
    n = sum(1 for _ in engram.vectors.cases("hash_v41", "HashTest"))
    assert len(params) == 2 * n
    assert params[0].id == "hash_v41-tc1-cpu-int32" and params[1].id == "hash_v41-tc1-cuda-int32"
    skips = [m for m in params[1].marks if m.name == "skip"]
    assert bool(skips) != torch.cuda.is_available()


def test_assert_conforms_gives_the_runners_diagnosis():
    case = next(c for c in engram.vectors.cases("hash_v41", "HashTest") if c.valid and len(c.inputs["ids"]) > 2)
    rows = engram.hash(case.layout, torch.tensor(case.inputs["ids"]))
    rows[1, 0, 3] += 1
    with pytest.raises(AssertionError) as e:
        engram.assert_conforms(case, {"rows": rows})
    assert "first difference in the outputs: rows[1][0][3]" in str(e.value) and "Mismatched elements" not in str(e.value)
