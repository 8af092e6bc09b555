"""The in-process API: what the reference computes, refusals as engram.Error with the CLI's message."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import engram_conformance as engram
def v41_case(tc):
    return next(c for c in engram.vectors.cases("hash_v41", "HashTest") if c.tc_id == tc)


def test_hash_equals_the_vector():
    c = v41_case(2)
    rows = engram.hash(c.layout, c.inputs["ids"])
    assert rows.dtype == np.int64 and rows.shape == (len(c.inputs["ids"]), 2, 24)
    assert rows.tolist() == c.expected["rows"]


def test_layout_of_the_shipped_config_is_the_vectors():
    lay = engram.Layout("v4.1")
    g = v41_case(2).group
    assert lay.multipliers == [layer["multipliers"] for layer in g["layers"]]
    assert lay.offsets == [layer["offsets"] for layer in g["layers"]]


def test_hash_state_split_anywhere_equals_one_call():
    lay = engram.Layout("v4.1")
    ids = np.arange(1, 40, dtype=np.int64) * 977 % 99092
    whole = engram.hash(lay, ids)
    s = engram.HashState(lay, rollback_capacity=4)
    a = s.append(ids[:10])
    f = s.fork()
    s.rollback(3)
    assert s.position == 7 and f.position == 10
    b = s.append(ids[7:25])
    t = engram.HashState.import_(lay, s.export())
    c = t.append(ids[25:])
    assert np.array_equal(np.concatenate([a[:7], b, c]), whole)
    assert np.array_equal(f.append(ids[10:]), whole[10:])


def test_refusals_raise_engram_error_naming_the_field():
    lay = engram.Layout("v4.1")
    with pytest.raises(engram.Error, match=r"ids: position 2 \(id -2\) is negative"):
        engram.hash(lay, [1, 2, -2])
    with pytest.raises(engram.Error, match="precision"):
        engram.gate_v41(0.5, "float16")


def test_error_message_is_the_clis(tmp_path):
    cli = os.environ.get("ENGRAM_CLI") or shutil.which("engram")
    if not cli:
        pytest.skip("ENGRAM_CLI is not set: the comparison with the CLI's message is skipped")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"engram_layer_ids": [1, 1], "engram_max_ngram_size": 3, "engram_n_heads": 2}))
    with pytest.raises(engram.Error) as e:
        engram.Layout(bad, 100)
    r = subprocess.run([cli, "layout", "--config", str(bad), "--compressed-vocab-size", "100"], capture_output=True,
                       text=True)
    assert r.returncode != 0 and r.stderr.strip() == f"engram: error: {e.value}"


def test_decode_rows_shape_and_values():
    codes = np.arange(256, dtype=np.uint8).reshape(4, 64)
    bits = engram.decode_rows(codes, np.full((4, 2), 127, dtype=np.uint8))
    assert bits.dtype == np.uint16 and bits.shape == (4, 64)
    c = next(c for c in engram.vectors.cases("fp8_decode", "ElementDecodeTest") if c.test["scale"] == 127)
    assert "".join("%04x" % b for b in bits.ravel()) == c.expected["bf16"]


def test_tp_shard_covers_the_rows():
    parts = engram.tp_shard(384006168, 7)
    assert parts[0][0] == 0 and parts[-1][1] == 384006168
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))


def test_the_built_vectors_ship_in_the_package():
    # §VEC.13 the set the module was built with: this version's release, or its unreleased set between releases
    assert engram.vectors.kind() in (f"released set {engram.SPEC_VERSION}",
                                     f"unreleased set {engram.SPEC_VERSION} (the set this tool was built with; not a release)")
    assert "hash_v41" in engram.vectors.suites()


def test_tampered_vectors_are_refused(tmp_path, monkeypatch):
    src = engram.vectors.directory()
    shutil.copytree(src, tmp_path / "v")
    f = tmp_path / "v" / "v1" / "layout.json"
    f.write_text(f.read_text().replace('"tcId": 1,', '"tcId": 1, ', 1))
    monkeypatch.setenv("ENGRAM_VECTORS", str(tmp_path / "v"))
    with pytest.raises(engram.Error, match="v1/layout.json does not match MANIFEST.sha256"):
        engram.vectors.suites()


def test_a_size_product_that_wraps_is_refused_not_indexed():
    """§ERR.3 in = 2^62 with hidden 4: hidden·in and hc·hidden·in wrap to 0 in 64 bits, so empty arrays once "had
    the expected size" and engram.demo_forward indexed them: the interpreter died (SIGSEGV). Run apart, so that a
    crash fails this test instead of the session."""
    code = """
import numpy as np, engram_conformance as engram
p = engram.DemoParams(hc=1, hidden=4, **{"in": 2**62}, kernel=1, dilation=1, key_w=[], key_b=[0.0] * 4,
                      norm1_w=[1.0] * 4, norm2_w=[1.0] * 4, value_w=[], value_b=[0.0] * 4, conv_norm_w=[1.0] * 4,
                      conv_w=[0.0] * 4)
try:
    engram.demo_forward(np.zeros((4, 0)), np.zeros((4, 1, 4)), p)
except engram.Error as e:
    print("refused:", e)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert "refused:" in r.stdout and "does not fit in 64 bits" in r.stdout, r.stdout + r.stderr
