"""The numpy port's batched hash (numpy_port.numpy_hash_batch) against every HashTest of both profiles, 64 cases
per call: the shape of a GPU kernel's test, one launch per batch, each case judged alone as engram conform judges
it. A kernel refuses a launch whose input it refuses; the port then answers that batch case by case, so that only
the cases it refuses are refused (an exception each).

    pytest examples/python/test_numpy_batch.py
"""
import engram_conformance as engram
from numpy_port import numpy_hash_batch


def launch(batch):
    g = batch.group
    ids, lengths = batch.padded("ids")
    rows = numpy_hash_batch(ids, lengths, g["profile"], g["compressedVocabSize"], g["compressedPad"], g["layers"])
    return [{"rows": r} for r in rows]


def port(batch):
    try:
        return launch(batch)  # one call for the whole batch
    except ValueError:
        answers = []
        for case in batch.cases:
            try:
                answers.extend(launch(engram.Batch([case])))
            except ValueError as e:
                answers.append(e)
        return answers


@engram.batches("hash_v41", type="HashTest", size=64)
@engram.batches("hash_demo", type="HashTest", size=64)
def test_hash_batches(engram_batch):
    engram_batch.check(port)
