"""The pytest plugin of engram (entry point ``pytest11``; docs/python.md).

``@engram.cases("hash_v41", type="HashTest")`` on a test taking the ``engram_case`` fixture makes one test per
tcId, with ids such as ``hash_v41-tc17`` and the test's flags as marks (``-m NegativeIdRefused``). A test calls
``engram_case.check(port)``: valid cases must return the expected outputs (judged by the runner's rules, §CONF.4),
``result: invalid`` cases must raise. A failure shows the runner's diagnosis.

Options: ``--engram-random N --engram-seed S`` adds the N random cases ``engram conform --random N --seed S``
asks (§CONF.7); ``--engram-save-failures DIR`` writes the failing cases as a vectors directory that
``engram conform --vectors DIR`` replays; ``--engram-shard-index I --engram-shard-count N`` keeps the cases whose
index (per test function, fixed vectors then random cases, 0-based) is I modulo N.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

from . import vectors as _vectors
from ._core import Error, random_suites

_FAILED: List[_vectors.Case] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("engram", "Engram conformance cases (engram.cases / the engram_case fixture)")
    g.addoption("--engram-random", type=int, default=0, metavar="N",
                help="add N random cases per suite with a generator, as engram conform --random N (§CONF.7)")
    g.addoption("--engram-seed", type=int, default=1, metavar="S", help="the random cases' seed (default 1)")
    g.addoption("--engram-save-failures", default=None, metavar="DIR",
                help="write the failing cases to DIR (new or empty) as vectors engram conform --vectors DIR replays")
    g.addoption("--engram-shard-index", type=int, default=None, metavar="I",
                help="run shard I of --engram-shard-count (default: GTEST_SHARD_INDEX, TEST_SHARD_INDEX, "
                     "SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX, CIRCLE_NODE_INDEX)")
    g.addoption("--engram-shard-count", type=int, default=None, metavar="N", help="the number of shards")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "engram_cases(suite, type=None): one test per tcId of an Engram vector suite "
                                       "(engram.cases); the test takes the engram_case fixture")
    config._engram_shard = _shard(config)  # type: ignore[attr-defined]
    status = os.environ.get("TEST_SHARD_STATUS_FILE")
    if status and config._engram_shard[2] == "TEST_SHARD_INDEX":  # type: ignore[attr-defined]
        Path(status).touch()  # Bazel: the test runner understands sharding


def _env_int(name: str) -> Optional[int]:
    v = os.environ.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:
        raise pytest.UsageError(f"{name}: {v!r} is not an integer (engram shard index/count)") from None


def _shard(config: pytest.Config) -> Tuple[int, int, str]:
    """(index, count, source): the options, else the first environment source that is set (issue 31's order)."""
    index = config.getoption("engram_shard_index")
    count = config.getoption("engram_shard_count")
    source = "--engram-shard-index"
    if index is None:
        for idx_name, count_name in (("GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS"),
                                     ("TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS"),
                                     ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT"),
                                     ("JOB_COMPLETION_INDEX", None),
                                     ("CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL")):
            i = _env_int(idx_name)
            if i is None:
                continue
            if idx_name == "SLURM_ARRAY_TASK_ID":
                i -= _env_int("SLURM_ARRAY_TASK_MIN") or 0
            n = _env_int(count_name) if count_name else None
            index, source = i, idx_name
            if count is None:
                count = n
            if count is None:
                raise pytest.UsageError(f"{idx_name} is set ({i}) but no shard count: pass --engram-shard-count N"
                                        + (f" or set {count_name}" if count_name else ""))
            break
    if index is None and count is None:
        return 0, 1, "none"
    if index is None or count is None:
        raise pytest.UsageError("--engram-shard-index and --engram-shard-count go together")
    if count < 1 or not 0 <= index < count:
        raise pytest.UsageError(f"engram shard: index {index} of count {count} (from {source}) is not in [0, count)")
    return index, count, source


def pytest_report_header(config: pytest.Config) -> List[str]:
    index, count, source = config._engram_shard  # type: ignore[attr-defined]
    lines = []
    try:
        lines.append(f"engram: vectors {_vectors.directory()} ({_vectors.kind()})")
    except Error as e:
        lines.append(f"engram: vectors: {e}")
    if count > 1:
        lines.append(f"engram: shard {index} of {count} (from {source}): cases whose index is {index} mod {count}")
    if config.getoption("engram_random"):
        lines.append(f"engram: {config.getoption('engram_random')} random cases per suite, seed "
                     f"{config.getoption('engram_seed')}")
    return lines


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "engram_case" not in metafunc.fixturenames:
        return
    marks = list(metafunc.definition.iter_markers("engram_cases"))
    if not marks:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: takes engram_case but has no @engram.cases(...)")
    config = metafunc.config
    n_random = config.getoption("engram_random")
    seed = config.getoption("engram_seed")
    index, count, _ = config._engram_shard  # type: ignore[attr-defined]
    known = set(random_suites())
    all_cases: List[_vectors.Case] = []
    try:
        for m in marks:
            suite = m.args[0] if m.args else m.kwargs["suite"]
            type_ = m.kwargs.get("type")
            all_cases.extend(_vectors.cases(suite, type_))
            if n_random > 0 and suite in known:
                all_cases.extend(_vectors.random_cases(suite, seed, n_random, type_))
    except Error as e:
        raise pytest.UsageError(f"engram: {e}") from None
    params = []
    for i, case in enumerate(all_cases):
        if i % count != index:
            continue
        for f in case.flags:
            config.addinivalue_line("markers", f"{f}: Engram vector flag (engram.vectors notes)")
        params.append(pytest.param(case, id=case.id, marks=[getattr(pytest.mark, f) for f in case.flags]))
    metafunc.parametrize("engram_case", params)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        case = getattr(item, "funcargs", {}).get("engram_case")
        if isinstance(case, _vectors.Case):
            _FAILED.append(case)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    out = session.config.getoption("engram_save_failures")
    if not out or not _FAILED:
        return
    try:
        if Path(out).exists() and (not Path(out).is_dir() or any(Path(out).iterdir())):
            raise Error(f"{out} exists and is not an empty directory (failures are written into a new or empty one)")
        _vectors.write_failures(out, _FAILED)
    except Error as e:
        session.config.get_terminal_writer().line(f"engram: --engram-save-failures {out}: {e}", red=True)
        return
    session.config._engram_saved = (out, len(_FAILED))  # type: ignore[attr-defined]


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    saved = getattr(config, "_engram_saved", None)
    if saved:
        terminalreporter.write_line(f"engram: {saved[1]} failing case(s) written to {saved[0]}; replay: "
                                    f"engram conform --vectors {saved[0]} --exec '<your adapter>'")
