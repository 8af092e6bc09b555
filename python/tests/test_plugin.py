"""The pytest plugin: one test per tcId, flags as marks, invalid cases must raise, the diagnosis, random cases,
saved failures the CLI replays, shards."""
import json
import os
import shutil
import subprocess
import sys

import pytest

import engram_conformance as engram
from engram_test_util import plugin_args

REFERENCE_PORT = '''
import engram_conformance as engram
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
import engram_conformance as engram
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
                        f"{sys.executable} -m engram_conformance.adapter"], capture_output=True, text=True)
    assert c.returncode == 0, c.stdout + c.stderr
    assert "modified, not a released set" in c.stdout
    # ... and so does the plugin, naming it as the CLI does.
    env = dict(os.environ, ENGRAM_VECTORS=str(out))
    k = subprocess.run([sys.executable, "-c", "import engram_conformance as engram; print(engram.vectors.kind())"], env=env,
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
    r.stderr.fnmatch_lines(["*JOB_COMPLETION_INDEX=1 is set but --engram-shard-count is not*"])


# --- The same shard from the same environment (one C++ resolution, conformance/runner/shard.cc) ---------------

SHARD_ENVS = [
    {},
    {"GTEST_SHARD_INDEX": "1", "GTEST_TOTAL_SHARDS": "3"},
    {"GTEST_SHARD_INDEX": "1", "GTEST_TOTAL_SHARDS": "3", "TEST_SHARD_INDEX": "2", "TEST_TOTAL_SHARDS": "3"},
    {"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "6", "SLURM_ARRAY_TASK_STEP": "2",
     "SLURM_ARRAY_TASK_COUNT": "4"},
    {"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "9", "SLURM_ARRAY_TASK_STEP": "1",
     "SLURM_ARRAY_TASK_COUNT": "3"},
    {"CIRCLE_NODE_INDEX": "2", "CIRCLE_NODE_TOTAL": "3"},
    # Before, the plugin read each of these as a number (int()) where conform refuses it.
    {"GTEST_SHARD_INDEX": "1_0", "GTEST_TOTAL_SHARDS": "20"},
    {"GTEST_SHARD_INDEX": "+1", "GTEST_TOTAL_SHARDS": "3"},
    {"GTEST_SHARD_INDEX": "\u0661", "GTEST_TOTAL_SHARDS": "3"},
    {"GTEST_SHARD_INDEX": "0", "GTEST_TOTAL_SHARDS": str(2**64)},
    {"GTEST_SHARD_INDEX": "", "GTEST_TOTAL_SHARDS": ""},
]


SLURM_4 = {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3",
           "SLURM_ARRAY_TASK_STEP": "1", "SLURM_ARRAY_TASK_COUNT": "4"}
# (--shard-index, --shard-count, environment): the options beside the environment.
SHARD_OPTIONS = [(None, None, env) for env in SHARD_ENVS] + [
    ("1", "4", {}),
    (None, "4", {}),
    ("5", "4", {}),
    (None, "3", {"JOB_COMPLETION_INDEX": "1"}),
    # Before, the plugin took a count beside a Slurm array where conform refuses it (shard.cc).
    (None, "4", SLURM_4),
    ("2", "4", SLURM_4),
]


def test_the_plugin_and_the_cli_resolve_the_same_shard(engram_cli, tmp_path):
    from engram_conformance.pytest_plugin import resolve_shard
    for index, count, env in SHARD_OPTIONS:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("GTEST_", "TEST_", "SLURM_", "JOB_", "CIRCLE_"))}
        options = (["--shard-index", index] if index is not None else []) + \
            (["--shard-count", count] if count is not None else [])
        r = subprocess.run([engram_cli, "conform", "--vectors", str(tmp_path / "none"), "--exec", "true", *options],
                           env=dict(base, **env), capture_output=True, text=True)
        try:
            plugin = resolve_shard(index, count, env)
        except engram.Error as e:
            plugin = str(e)
        first = r.stderr.splitlines()[0] if r.stderr else ""
        case = (index, count, env, r.stderr)
        if isinstance(plugin, str):  # refused by both, with the same words (each naming its own options)
            assert first == "engram conform: " + plugin.replace("--engram-shard-", "--shard-"), case
        elif plugin[1] == 1:
            assert "shard" not in first, case
        else:
            assert first == f"engram conform: shard {plugin[0]} of {plugin[1]} (from {plugin[2]})", case


# --- As strict as engram conform (§CONF.4) ---------------------------------------------------------------------

def test_a_session_that_tests_nothing_fails_and_an_unjudged_case_fails(pytester):
    pytester.makepyfile(test_port="""
import engram_conformance as engram
from engram_conformance.vectors import Unsupported

def refuse_to_compute(case):
    raise Unsupported("no")

@engram.cases("layout")
def test_unsupported(engram_case):
    engram_case.check(refuse_to_compute)

@engram.cases("layout", type="LayoutTest")
def test_unjudged(engram_case):
    assert engram_case.type == "LayoutTest"   # takes the case, never judges it
""")
    r = pytester.runpytest_subprocess(*plugin_args(), "-q", "-p", "no:cacheprovider")
    n = counts("layout", "LayoutTest")
    r.assert_outcomes(skipped=n, failed=n)  # before: n skipped, n passed, exit 0
    assert r.ret == 1
    r.stdout.fnmatch_lines(["*the test took engram_case but never judged it*", "engram: FAILED: nothing was tested*"])


def test_a_suite_answered_only_unsupported_fails_though_another_is_tested(pytester):
    pytester.makepyfile(test_port=REFERENCE_PORT.format(bug="") + """
from engram_conformance.vectors import Unsupported

def refuse_to_compute(case):
    raise Unsupported("no")

@engram.cases("layout")
def test_layout(engram_case):
    engram_case.check(refuse_to_compute)
""")
    r = pytester.runpytest_subprocess(*plugin_args(), "-q", "-p", "no:cacheprovider")
    assert r.ret == 1  # every test passed or skipped; before: exit 0
    r.stdout.fnmatch_lines(["engram: FAILED: layout: answered by the implementation, but no non-trivial valid test*"])


@pytest.mark.parametrize("args,why", [
    (["--engram-random", "0x10"], "--engram-random 0x10: must be a decimal integer in [0, 100000]"),
    (["--engram-random", "1000000"], "--engram-random 1000000: must be a decimal integer in [0, 100000]"),
    (["--engram-save-failures", "/proc/engram-failures"], "--save-failures /proc/engram-failures: cannot create"),
])
def test_options_are_checked_before_the_run(pytester, args, why):
    pytester.makepyfile(test_port=REFERENCE_PORT.format(bug=""))
    r = pytester.runpytest_subprocess(*plugin_args(), "-q", *args)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert why in r.stderr.str()
    r.stdout.no_fnmatch_line("*passed*")


def test_an_unknown_type_is_an_error(pytester):
    pytester.makepyfile(test_port="""
import engram_conformance as engram
@engram.cases("hash_v41", type="HashTst")
def test_hash(engram_case):
    engram_case.check(lambda c: {"rows": []})
""")
    r = pytester.runpytest_subprocess(*plugin_args(), "-q")
    assert r.ret == pytest.ExitCode.INTERRUPTED  # an error at collection; before: 1 skipped, exit 0
    assert "type='HashTst'): the suite has no test of that type (its types: HashStateTest, HashTest)" in r.stdout.str()


def test_random_cases_are_drawn_a_test_at_a_time():
    from engram_conformance.pytest_plugin import _RandomRef, case_params
    params = case_params("hash_v41", "HashTest", 40, 3)
    randoms = [p for p in params if not isinstance(p, engram.vectors.Case)]
    assert randoms and all(isinstance(p, _RandomRef) for p in randoms)  # collected as (suite, seed, index) only
    eager = engram.random_cases("hash_v41", 3, 40, type="HashTest")
    assert [p.id for p in randoms] == [c.id for c in eager]
    drawn = randoms[-1].draw()
    assert drawn.test == eager[-1].test and drawn.group == eager[-1].group


def _vectors_copy(tmp_path, edit):
    """The committed vectors with v1/hash_v41.json edited by `edit` (its text) and its manifest line re-signed."""
    import hashlib
    src = engram.vectors.directory()
    dst = tmp_path / "vectors"
    shutil.copytree(src, dst)
    path = dst / "v1" / "hash_v41.json"
    path.write_text(edit(path.read_text()))
    manifest = dst / "MANIFEST.sha256"
    lines = [(hashlib.sha256(path.read_bytes()).hexdigest() + "  v1/hash_v41.json") if ln.endswith("  v1/hash_v41.json")
             else ln for ln in manifest.read_text().splitlines()]
    manifest.write_text("\n".join(lines) + "\n")
    return dst


def test_the_vectors_are_checked_as_conform_checks_them(tmp_path):
    from engram_conformance.vectors import _manifest  # the directory: digests, files, parse
    # A repeated "rows" key (Python's json keeps the last) and a set re-signed without its expected rows.
    dup = _vectors_copy(tmp_path / "dup", lambda t: t.replace('"rows": [', '"rows": [], "rows": [', 1))
    with pytest.raises(engram.Error, match="duplicate key 'rows'"):
        _manifest(str(dup))
    def no_rows(text):
        doc = json.loads(text)
        for g in doc["testGroups"]:
            for t in g["tests"]:
                t.pop("rows", None)
        return json.dumps(doc, indent=1)
    gone = _vectors_copy(tmp_path / "gone", no_rows)
    with pytest.raises(engram.Error, match="v1/hash_v41.json"):
        engram.vectors._load(str(gone), "hash_v41")  # checked against its schema when it is loaded
    # A FIFO listed in the manifest is refused, never opened blocking.
    fifo_dir = _vectors_copy(tmp_path / "fifo", lambda t: t)
    (fifo_dir / "v1" / "hash_v41.json").unlink()
    os.mkfifo(fifo_dir / "v1" / "hash_v41.json")
    with pytest.raises(engram.Error, match="FIFO"):
        _manifest(str(fifo_dir))
