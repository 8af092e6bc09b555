"""engram.batches / the engram_batch fixture: many cases in one call of the port, each judged alone by the runner's
rules; stacked answers split per case; tensors (CPU or CUDA) brought to the CPU; flags, failures, refusals,
saved failures and shards as for engram_case."""
import json

import numpy as np
import pytest

import engram_conformance as engram
from engram_conformance.batch import Batch, batches_of, to_host
from engram_test_util import plugin_args

# The port answers a whole batch: one list of per-case answers (a refusal is an exception instance).
LIST_PORT = '''
import engram_conformance as engram
def port(batch):
    out = []
    for c in batch.cases:
        try:
            rows = engram.hash(c.layout, c.inputs["ids"])
            {bug}
            out.append({{"rows": rows}})
        except engram.Error as e:
            out.append(e)
    return out

@engram.batches("hash_v41", type="HashTest", size={size})
def test_hash(engram_batch):
    engram_batch.check(port)
'''
BUG = 'rows[..., -1] += 1'


def hash_tests():
    """(group index, tcId, valid) of hash_v41's HashTests, read from the vector file, not from the plugin."""
    out = []
    for gi, g in enumerate(engram.vectors.load("hash_v41")["testGroups"]):
        if g["type"] == "HashTest":
            out += [(gi, t["tcId"], t["result"] == "valid") for t in g["tests"]]
    return out


def expected_batches(size):
    """The batches the rule of docs/python.md makes: consecutive tests of one group, at most size each."""
    n, last, run = 0, None, 0
    for gi, _, _ in hash_tests():
        if gi != last or run == size:
            n, last, run = n + 1, gi, 0
        run += 1
    return n


def run(pytester, bug="", size=8, *args):
    pytester.makepyfile(test_port=LIST_PORT.format(bug=bug, size=size))
    return pytester.runpytest_subprocess(*plugin_args(), *args)


def test_one_test_per_batch_all_pass(pytester):
    r = run(pytester, "", 8, "-v")
    r.assert_outcomes(passed=expected_batches(8))
    r.stdout.fnmatch_lines(["*test_hash?hash_v41-tc1..tc8? PASSED*"])


def test_one_batch_per_group_when_size_is_none(pytester):
    r = run(pytester, "", None, "-q")
    r.assert_outcomes(passed=len({gi for gi, _, _ in hash_tests()}))


def test_planted_bug_names_each_failing_case(pytester):
    r = run(pytester, BUG, 8, "-q")
    # Every batch holds a valid non-empty case, so every batch fails; the message names each case.
    r.assert_outcomes(failed=expected_batches(8))
    r.stdout.fnmatch_lines(["*of 8 cases failed:*", "*hash_v41-tc2: fail (mismatch)*",
                            "*first difference in the outputs: rows[[]0[]][[]0[]][[]23[]]: expected *, got *"])


def test_invalid_cases_must_be_refused(pytester):
    pytester.makepyfile(test_port='''
import engram_conformance as engram
@engram.batches("hash_v41", type="HashTest", size=None)
def test_hash(engram_batch):
    engram_batch.check(lambda b: [{"rows": engram.hash(c.layout, c.inputs["ids"]) if c.valid else []}
                                  for c in b.cases])  # never refuses
''')
    r = pytester.runpytest_subprocess(*plugin_args(), "-q")
    r.stdout.fnmatch_lines(["*hash_v41-tc14: fail (accepted invalid input)*"])


def test_unsupported_skips_the_batch(pytester):
    pytester.makepyfile(test_port='''
import engram_conformance as engram
@engram.batches("hash_v41", type="HashTest", size=None)
def test_hash(engram_batch):
    def port(b):
        raise engram.vectors.Unsupported("no hash here")
    engram_batch.check(port)
''')
    r = pytester.runpytest_subprocess(*plugin_args(), "-q")
    r.assert_outcomes(skipped=len({gi for gi, _, _ in hash_tests()}))


def test_flags_are_marks_of_the_batch(pytester):
    r = run(pytester, "", 1, "-q", "-m", "NegativeIdRefused")
    flagged = sum(1 for g in engram.vectors.load("hash_v41")["testGroups"] if g["type"] == "HashTest"
                  for t in g["tests"] if "NegativeIdRefused" in t["flags"])
    r.assert_outcomes(passed=flagged, deselected=len(hash_tests()) - flagged)


def test_saved_failures_are_the_failing_cases(pytester):
    out = pytester.path / "failures"
    run(pytester, BUG, 8, "-q", "--engram-save-failures", str(out))
    doc = json.loads((out / "v1" / "hash_v41.json").read_text())
    saved = [t["comment"].split(":")[0] for g in doc["testGroups"] for t in g["tests"]]
    # A failing case is a valid one whose rows are not empty (the bug touches the last column of each row).
    want = [f"hash_v41-tc{tc}" for gi, tc, ok in hash_tests() if ok and
            next(t for g in engram.vectors.load("hash_v41")["testGroups"] for t in g["tests"] if t["tcId"] == tc)["ids"]]
    assert saved == want


def test_random_cases_are_batched_and_drawn_when_run(pytester):
    r = run(pytester, "", 8, "-v", "--engram-random", "16", "--engram-seed", "3")
    want = [c.id for c in engram.random_cases("hash_v41", 3, 16, type="HashTest")]
    r.stdout.fnmatch_lines([f"*test_hash?{want[0]}..tc{want[min(7, len(want) - 1)].rsplit('-tc', 1)[1]}? PASSED*"])
    r.assert_outcomes(passed=expected_batches(8) + -(-len(want) // 8))


def test_a_batch_never_judged_fails(pytester):
    pytester.makepyfile(test_port='''
import engram_conformance as engram
@engram.batches("hash_v41", type="HashTest", size=None)
def test_hash(engram_batch):
    pass
''')
    r = pytester.runpytest_subprocess(*plugin_args(), "-q")
    r.assert_outcomes(failed=len({gi for gi, _, _ in hash_tests()}))
    r.stdout.fnmatch_lines(["*took engram_batch but never judged it*"])


def test_shards_cut_cases_before_batching(pytester):
    pytester.makepyfile(test_port=LIST_PORT.format(bug="", size=None))

    def ids(*args):
        r = pytester.runpytest_subprocess(*plugin_args(), "--collect-only", "-q", *args)
        return [line.split("[", 1)[1].rstrip("]") for line in r.stdout.lines if "::test_hash[" in line]

    whole = ids()
    shards = [ids("--engram-shard-index", str(i), "--engram-shard-count", "2") for i in range(2)]
    assert whole and all(shards)
    # Case i belongs to shard i mod 2; each shard batches its own cases (their tcIds in its test ids).
    tcs = [tc for _, tc, _ in hash_tests()]
    assert shards[0][0].startswith(f"hash_v41-tc{tcs[0]}..") and shards[1][0].startswith(f"hash_v41-tc{tcs[1]}..")
    assert len(shards[0]) + len(shards[1]) >= len(whole)


# --------------------------------------------------------------------------- the Batch object itself

def gate_cases():
    return [c for c in engram.vectors.cases("gate_v41", type="GateFunctionTest") if c.valid]


def test_stacked_answers_are_split_per_case():
    cases = gate_cases()
    b = Batch(cases)
    assert b.inputs["dot"] == [c.inputs["dot"] for c in cases]  # hex strings do not stack: a list of B
    gates = np.array([engram.gate_v41(float.fromhex(c.inputs["dot"]), "float32")["gate"] for c in cases])
    verdicts = b.judge({"gate": gates})
    assert [v.status for v in verdicts] == ["pass"] * len(cases)
    wrong = gates.copy()
    wrong[1] = 0.25
    verdicts = b.judge({"gate": wrong})
    assert [v.ok for v in verdicts] == [i != 1 for i in range(len(cases))] and b.failed == [cases[1]]
    with pytest.raises(ValueError, match="one value per case"):
        b.judge({"gate": gates[:-1]})


class FakeTensor:
    """What the plugin needs of a torch tensor: detach(), cpu(), numpy(); on "cuda" numpy() refuses, as torch's
    does, so a CUDA tensor reaching the judge unmoved would fail this test."""

    def __init__(self, values, device):
        self.values, self.device, self.shape = np.asarray(values), device, np.asarray(values).shape

    def detach(self):
        return self

    def cpu(self):
        return FakeTensor(self.values, "cpu")

    def numpy(self):
        if self.device != "cpu":
            raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() first")
        return self.values


def test_cuda_tensors_are_moved_to_the_cpu():
    cases = gate_cases()
    gates = [engram.gate_v41(float.fromhex(c.inputs["dot"]), "float32")["gate"] for c in cases]
    verdicts = Batch(cases).judge({"gate": FakeTensor(gates, "cuda:0")})
    assert all(v.ok for v in verdicts)
    assert to_host({"a": [FakeTensor([1, 2], "cuda:0")]})["a"][0].tolist() == [1, 2]


def test_padded_ids_and_group_batches():
    cases = list(engram.vectors.cases("hash_v41", type="HashTest"))
    batches = batches_of(cases, 5)
    assert [c for b in batches for c in b.cases] == cases
    assert all(len(b) <= 5 and all(c.group == b.group for c in b.cases) for b in batches)
    b = next(b for b in batches if len({len(c.inputs["ids"]) for c in b.cases}) > 1)
    ids, lengths = b.padded("ids", fill=-7)
    for row, n, c in zip(ids, lengths, b.cases):
        assert row[:n].tolist() == list(c.inputs["ids"]) and (row[n:] == -7).all()
    with pytest.raises(ValueError, match="do not stack"):
        b.stack("ids")
    with pytest.raises(ValueError, match="at least 1"):
        batches_of(cases, 0)
