"""The numpy port (numpy_port.py) against every HashTest of both profiles: one pytest test per tcId.

    pip install .            # from the repository root
    pytest examples/python   # --engram-random 100 adds the random cases engram conform --random 100 asks
"""
import engram_conformance as engram
from numpy_port import numpy_hash


def port(case):
    g = case.group
    return {"rows": numpy_hash(case.inputs["ids"], g["profile"], g["compressedVocabSize"], g["compressedPad"],
                               g["layers"])}


@engram.cases("hash_v41", type="HashTest")
@engram.cases("hash_demo", type="HashTest")
def test_hash(engram_case):
    engram_case.check(port)  # valid cases: the rows, judged as engram conform judges; invalid ones: must raise
