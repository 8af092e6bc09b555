"""A JSON-lines adapter (§CONF.2) that answers from this module: ``engram conform --exec 'python -m engram_conformance.adapter'``.

The protocol itself (the loop, the answers' shapes, the HashStateTest driver) is the one every in-tree adapter
uses, conformance/python/engram_adapter/protocol.py, shipped in the wheel as ``engram_conformance._protocol``.

It answers the test types the in-process API covers (HashTest, HashStateTest, LayoutTest, the fp8 decode tests,
GateFunctionTest) with ``engram``'s functions, and ``unsupported`` for the others. python/tests/test_cli_equal.py
runs it under the CLI runner and compares each tcId's verdict with the in-process ``judge`` of the same answer.
"""
from __future__ import annotations

import math
import struct
from typing import Any, Dict, Optional

import numpy as np

import engram_conformance as engram
from engram_conformance import _core
from engram_conformance import _protocol as protocol

TYPES = ("HashTest", "HashStateTest", "LayoutTest", "E4M3DecodeTest", "E8M0DecodeTest", "ElementDecodeTest",
         "GateFunctionTest")


def _f32_bits(x: float) -> str:
    if x != x:
        return "7fc00000"
    return struct.pack(">f", x).hex()


def _hexf(x: float) -> str:
    return x.hex() if math.isfinite(x) else ("nan" if x != x else ("inf" if x > 0 else "-inf"))


def _fx(h: str) -> float:
    return float.fromhex(h) if h not in ("inf", "-inf", "nan") else float(h)


def answer(type_: str, group: Dict[str, Any], test: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The outputs for ``test`` (its inputs, §CONF.1) of ``group``; None for a type this adapter does not answer.
    Raises engram.Error (or ValueError, KeyError) for an input the reference refuses."""
    if type_ == "LayoutTest":
        lay = engram.Layout(test["config"], test["compressedVocabSize"], test["compressedPad"], test.get("profile"))
        return {"layers": [{"layerId": lid, "multipliers": m, "primes": p, "offsets": o, "numEmbeddings": n}
                           for lid, m, p, o, n in zip(lay.layer_ids, lay.multipliers, lay.primes, lay.offsets,
                                                      lay.num_embeddings)]}
    if type_ == "E4M3DecodeTest":
        return {"f32Bits": _f32_bits(_core.decode_e4m3(test["code"]))}
    if type_ == "E8M0DecodeTest":
        return {"f32Bits": _f32_bits(_core.decode_e8m0(test["scale"]))}
    if type_ == "ElementDecodeTest":
        codes = np.arange(256, dtype=np.uint8)
        bits = engram.decode_rows(codes, np.full(8, test["scale"], dtype=np.uint8))
        return {"bf16": "".join("%04x" % int(b) for b in bits)}
    if type_ == "GateFunctionTest":
        fn = engram.gate_v41 if group["profile"] == "v4.1" else engram.gate_demo
        d = _fx(test["dot"])
        return {"gate": {p: _hexf(fn(d, p)["gate"]) for p in ("float64", "float32")}}
    if type_ == "HashTest":
        return {"rows": engram.hash(engram.Layout.from_group(group), test["ids"])}
    if type_ == "HashStateTest":
        layout = engram.Layout.from_group(group)
        return protocol.hash_state_test(group, test, lambda capacity: engram.HashState(layout, capacity),
                                        fork=lambda seqs, source, target: seqs[source].fork())
    return None


def handle(req: Dict[str, Any]) -> Dict[str, Any]:
    op = req.get("op")
    if op == "hello":
        return protocol.hello("engram-python-adapter", engram.__version__, ["*"], ["*"])
    if op == "bye":
        return protocol.bye()
    if op != "test":
        return protocol.unsupported(f"op {op}")
    try:
        out = answer(req["type"], req["group"], req["test"])
    except (engram.Error, ValueError, KeyError, TypeError, IndexError, OverflowError) as e:
        return protocol.refused(e)
    if out is None:
        return protocol.unsupported(f"type {req['type']} (engram.adapter answers {', '.join(TYPES)})")
    return protocol.outputs(engram.vectors._plain(out))


def main() -> None:
    protocol.serve(handle)


if __name__ == "__main__":
    main()
