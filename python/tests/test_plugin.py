"""The pytest plugin: one test per tcId, flags as marks, invalid cases must raise, the diagnosis, random cases,
saved failures the CLI replays, shards."""
import json
import os
import subprocess
import sys

import pytest

import engram
from engram_test_util import plugin_args

REFERENCE_PORT = '''
import engram

def port(case):
    rows = engram.hash(case.layout, case.inputs["ids"])
    {bug}
    return {{"rows": rows}}

@engram.cases("hash_v41", type="HashTest")
def test_hash(engram_case):
    engram_case.check(port)
'''
# A planted bug: the last column of every position is one row off.
BUG = 'rows[..., -1] += 1'


def counts(suite, type_, pred=lambda t: True):
    """Tests of the committed vector file (read from the file, not from the plugin)."""
    return sum(1 for g in engram.vectors.load(suite)["testGroups"] if g["type"] == type_ for t in g["tests"] if pred(t))


def run(pytester, bug="", *args):
    pytester.makepyfile(test_port=REFERENCE_PORT.format(bug=bug))
    return pytester.runpytest_subprocess(*plugin_args(), *args)


def test_one_test_per_tcid_all_pass(pytester):
    r = run(pytester, "", "-v")
    n = counts("hash_v41", "HashTest")
    r.assert_outcomes(passed=n)
    r.stdout.fnmatch_lines(["*test_hash?hash_v41-tc1? PASSED*", "*test_hash?hash_v41-tc14? PASSED*"])


def test_planted_bug_fails_with_the_runners_diagnosis(pytester):
    r = run(pytester, BUG, "-q")
    # Only the invalid tests (the port raises) and the empty sequences (trivial) still pass.
    ok = counts("hash_v41", "HashTest", lambda t: t["result"] == "invalid" or t.get("ids") == [])
    r.assert_outcomes(passed=ok, failed=counts("hash_v41", "HashTest") - ok)
    r.stdout.fnmatch_lines(["*hash_v41-tc2: fail (mismatch)*", "*first difference in the outputs: rows[[]0[]][[]0[]][[]23[]]: "
                            "expected *, got *", "*expected intermediate[[]0[]]:*", "FAILED*test_hash?hash_v41-tc2?*"])


def test_flags_are_marks(pytester):
    r = run(pytester, "", "-q", "-m", "NegativeIdRefused")
    r.assert_outcomes(passed=counts("hash_v41", "HashTest", lambda t: "NegativeIdRefused" in t.get("flags", [])),
                      deselected=counts("hash_v41", "HashTest",
                                        lambda t: "NegativeIdRefused" not in t.get("flags", [])))


def test_invalid_cases_must_raise(pytester):
    pytester.makepyfile(test_port='''
import engram

@engram.cases("hash_v41", type="HashTest")
def test_hash(engram_case):
    engram_case.check(lambda c: {"rows": []})  # never refuses
''')
    r = pytester.runpytest_subprocess(*plugin_args(), "-q", "-k", "tc14")
    r.stdout.fnmatch_lines(["*hash_v41-tc14: fail (accepted invalid input)*"])


def test_random_cases_are_added(pytester):
    want = [c.id for c in engram.random_cases("hash_v41", 3, 6, type="HashTest")]
    r = run(pytester, "", "--collect-only", "-q", "--engram-random", "6", "--engram-seed", "3")
    got = [line.split("[", 1)[1].rstrip("]") for line in r.stdout.lines if "random:" in line]
    assert got == want and want


def test_saved_failures_replay(pytester, engram_cli):
    out = pytester.path / "failures"
    r = run(pytester, BUG, "-q", "--engram-save-failures", str(out), "--engram-random", "8")
    r.stdout.fnmatch_lines(["engram: * failing case(s) written to *"])
    doc = json.loads((out / "v1" / "hash_v41.json").read_text())
    saved = [t["tcId"] for g in doc["testGroups"] for t in g["tests"]]
    assert saved == list(range(1, len(saved) + 1))
    comments = [t["comment"] for g in doc["testGroups"] for t in g["tests"]]
    assert comments[0].startswith("hash_v41-tc2: ") and any(c.startswith("random:hash_v41-tc") for c in comments)
    # The CLI accepts the directory: its manifest, schemas and expected values (recomputed by the reference).
    v = subprocess.run([engram_cli, "vectors", "verify", str(out)], capture_output=True, text=True)
    assert v.returncode == 0, v.stdout + v.stderr
    c = subprocess.run([engram_cli, "conform", "--vectors", str(out), "--exec",
                        f"{sys.executable} -m engram.adapter"], capture_output=True, text=True)
    assert c.returncode == 0, c.stdout + c.stderr
    assert "modified, not a released set" in c.stdout
    # ... and so does the plugin, naming it as the CLI does.
    env = dict(os.environ, ENGRAM_VECTORS=str(out))
    k = subprocess.run([sys.executable, "-c", "import engram; print(engram.vectors.kind())"], env=env,
                       capture_output=True, text=True)
    assert k.stdout.strip() == "modified, not a released set", k.stderr


def collected(pytester, *args, env=None):
    pytester.makepyfile(test_port=REFERENCE_PORT.format(bug=""))
    old = dict(os.environ)
    try:
        os.environ.update(env or {})
        r = pytester.runpytest_subprocess(*plugin_args(), "--collect-only", "-q", *args)
    finally:
        os.environ.clear()
        os.environ.update(old)
    return [line for line in r.stdout.lines if "::test_hash[" in line]


def test_shards_are_disjoint_and_cover_every_case(pytester):
    every = collected(pytester)
    shards = [collected(pytester, "--engram-shard-index", str(i), "--engram-shard-count", "3") for i in range(3)]
    assert sorted(sum(shards, [])) == sorted(every)
    assert all(len(s) > 0 for s in shards) and len(set(sum(shards, []))) == len(every)
    assert shards[1] == every[1::3]  # the rule docs/python.md states: case index modulo count


@pytest.mark.parametrize("env", [
    {"GTEST_SHARD_INDEX": "1", "GTEST_TOTAL_SHARDS": "3"},
    {"TEST_SHARD_INDEX": "1", "TEST_TOTAL_SHARDS": "3"},
    {"SLURM_ARRAY_TASK_ID": "6", "SLURM_ARRAY_TASK_MIN": "5", "SLURM_ARRAY_TASK_COUNT": "3"},
    {"CIRCLE_NODE_INDEX": "1", "CIRCLE_NODE_TOTAL": "3"},
])
def test_shard_from_the_environment(pytester, env):
    assert collected(pytester, env=env) == collected(pytester, "--engram-shard-index", "1", "--engram-shard-count", "3")


def test_job_completion_index_takes_the_count_from_the_option(pytester):
    assert collected(pytester, "--engram-shard-count", "3", env={"JOB_COMPLETION_INDEX": "1"}) == \
        collected(pytester, "--engram-shard-index", "1", "--engram-shard-count", "3")
    pytester.makepyfile(test_port=REFERENCE_PORT.format(bug=""))
    os.environ["JOB_COMPLETION_INDEX"] = "1"
    try:
        r = pytester.runpytest_subprocess(*plugin_args(), "--collect-only", "-q")
    finally:
        del os.environ["JOB_COMPLETION_INDEX"]
    r.stderr.fnmatch_lines(["*JOB_COMPLETION_INDEX is set (1) but no shard count: pass --engram-shard-count N*"])
