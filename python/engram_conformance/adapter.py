"""A JSON-lines adapter (§CONF.2) that answers from this module: ``engram conform --exec 'python -m engram_conformance.adapter'``.

It answers the test types the in-process API covers (HashTest, HashStateTest, LayoutTest, the fp8 decode tests,
GateFunctionTest) with ``engram``'s functions, and ``unsupported`` for the others. python/tests/test_cli_equal.py
runs it under the CLI runner and compares each tcId's verdict with the in-process ``judge`` of the same answer.
"""
from __future__ import annotations

import json
import math
import struct
import sys
from typing import Any, Dict, Optional

import numpy as np

import engram_conformance as engram
from engram_conformance import _core

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
        seqs: Dict[str, engram.HashState] = {}
        steps = []
        for step in test["steps"]:
            step = dict(step)
            if step["op"] == "append":
                s = seqs.setdefault(step["seq"], engram.HashState(layout, group.get("rollbackCapacity", 0)))
                step["rows"] = s.append(step["ids"])
                step["positionAfter"], step["historyAfter"] = s.position, s.history()
            elif step["op"] == "rollback":
                s = seqs[step["seq"]]
                s.rollback(step["k"])
                step["positionAfter"], step["historyAfter"] = s.position, s.history()
            elif step["op"] == "fork":
                seqs[step["to"]] = seqs[step["from"]].fork()
            steps.append(step)
        return {"steps": steps}
    return None


def handle(req: Dict[str, Any]) -> Dict[str, Any]:
    op = req.get("op")
    if op == "hello":
        return {"protocol": 1, "name": "engram-python-adapter", "version": engram.__version__, "suites": ["*"],
                "profiles": ["*"], "features": []}
    if op == "bye":
        return {"bye": True}
    if op != "test":
        return {"unsupported": f"op {op}"}
    try:
        out = answer(req["type"], req["group"], req["test"])
    except (engram.Error, ValueError, KeyError, TypeError, IndexError, OverflowError) as e:
        return {"refused": f"{type(e).__name__}: {e}"}
    if out is None:
        return {"unsupported": f"type {req['type']} (engram.adapter answers {', '.join(TYPES)})"}
    return {"outputs": engram.vectors._plain(out)}


def main() -> None:
    for line in sys.stdin:
        req = json.loads(line)
        print(json.dumps(handle(req)), flush=True)
        if req.get("op") == "bye":
            break


if __name__ == "__main__":
    main()
