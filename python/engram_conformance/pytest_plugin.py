"""The pytest plugin of engram (entry point ``pytest11``; docs/python.md).

``@engram.cases("hash_v41", type="HashTest")`` on a test taking the ``engram_case`` fixture makes one test per
tcId, with ids such as ``hash_v41-tc17`` and the test's flags as marks (``-m NegativeIdRefused``). A test calls
``engram_case.check(port)``: valid cases must return the expected outputs (judged by the runner's rules, §CONF.4),
``result: invalid`` cases must raise. A failure shows the runner's diagnosis.

As strict as ``engram conform`` (§CONF.4): the vectors are checked by the same C++ before anything is collected
(a directory conform refuses is refused); a test that takes ``engram_case`` and never judges it fails; a session
whose engram cases tested nothing (every case unsupported, or only trivial ones) fails, as does a suite answered
only ``unsupported``; an unknown ``type=`` is an error; the options are checked before the run.

``@engram.batches("hash_v41", type="HashTest", size=64)`` on a test taking the ``engram_batch`` fixture makes one
test per batch of cases instead (engram.batch: one call for many cases, each judged alone, held to the same
rules).

Options: ``--engram-random N --engram-seed S`` adds N random cases to each ``@engram.cases`` (§CONF.7), each drawn
when its test runs: with ``type=T``, the first N cases of type T in the stream ``engram conform --random --seed S``
draws from (at most max(10,000, 100 N) looked at); without, cases 1 ... N of the suite; ``--engram-save-failures DIR`` writes the failing cases as a
vectors directory that ``engram conform --vectors DIR`` replays; ``--engram-shard-index I --engram-shard-count N``
keeps the cases whose index (per test function, fixed vectors then random cases, 0-based) is I modulo N. Without
them the shard comes from the environment, resolved by ``engram conform``'s own rules (the same C++, §CONF.9).
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple

import pytest

from . import batch as _batch
from . import vectors as _vectors
from . import _core
from ._core import Error, random_suites

_FAILED: List[_vectors.Case] = []
# §CONF.4 every engram case's outcome: (label, status, reason, valid, trivial).
_OUTCOMES: List[Tuple[str, str, str, bool, bool]] = []

# The most random cases per suite a session collects: each is a pytest item (a few KiB of pytest's own).
MAX_RANDOM = 100000


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("engram", "Engram conformance cases (engram.cases / the engram_case fixture)")
    g.addoption("--engram-random", default="0", metavar="N",
                help=f"add N random cases of the test's type to each @engram.cases of a suite with a generator, "
                     f"drawn from engram conform --random's stream (§CONF.7; at most {MAX_RANDOM})")
    g.addoption("--engram-seed", default="1", metavar="S", help="the random cases' seed (default 1)")
    g.addoption("--engram-save-failures", default=None, metavar="DIR",
                help="write the failing cases to DIR (new or empty) as vectors engram conform --vectors DIR replays")
    g.addoption("--engram-shard-index", default=None, metavar="I",
                help="run shard I of --engram-shard-count (default: GTEST_SHARD_INDEX, TEST_SHARD_INDEX, "
                     "SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX, CIRCLE_NODE_INDEX, as engram conform reads them)")
    g.addoption("--engram-shard-count", default=None, metavar="N", help="the number of shards")


def resolve_shard(index: Optional[str], count: Optional[str], env: Dict[str, str]) -> Tuple[int, int, str]:
    """§CONF.9 item 1 (index, count, source): ``engram conform``'s resolution (conformance/runner/shard.cc, through
    the binding), from the options' text and the environment ``env``."""
    try:
        return _core.choose_shard(index, count, dict(env))
    except Error as e:  # the same refusal, naming this plugin's options
        text = str(e).replace("--shard-index", "--engram-shard-index").replace("--shard-count", "--engram-shard-count")
        raise Error(text.replace("--engram-engram-", "--engram-")) from None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "engram_cases(suite, type=None): one test per tcId of an Engram vector suite "
                                       "(engram.cases); the test takes the engram_case fixture")
    config.addinivalue_line("markers", "engram_batches(suite, type=None, size=64): one test per batch of cases "
                                       "(engram.batches); the test takes the engram_batch fixture")
    # §CONF.4 the options, checked before anything is collected or run, by the runner's rules.
    try:
        config._engram_random = _core.decimal_in(  # type: ignore[attr-defined]
            "--engram-random", config.getoption("engram_random"), 0, MAX_RANDOM)
        config._engram_seed = _core.decimal_in(  # type: ignore[attr-defined]
            "--engram-seed", config.getoption("engram_seed"), 0, 2**63 - 1)
        config._engram_shard = resolve_shard(config.getoption("engram_shard_index"),  # type: ignore[attr-defined]
                                             config.getoption("engram_shard_count"), os.environ)
        # Bazel exports GTEST_SHARD_INDEX too: the status file is touched whichever variables gave the shard.
        _core.touch_shard_status_file(dict(os.environ))
        out = config.getoption("engram_save_failures")
        if out:
            _core.check_save_failures(out)
    except Error as e:
        raise pytest.UsageError(f"engram: {e}") from None


def pytest_report_header(config: pytest.Config) -> List[str]:
    index, count, source = config._engram_shard  # type: ignore[attr-defined]
    lines = []
    try:
        lines.append(f"engram: vectors {_vectors.directory()} ({_vectors.kind()})")
    except Error as e:
        lines.append(f"engram: vectors: {e}")
    if count > 1:
        lines.append(f"engram: shard {index} of {count} (from {source}): cases whose index is {index} mod {count}")
    n = config._engram_random  # type: ignore[attr-defined]
    if n:
        lines.append(f"engram: {n} random cases per @engram.cases (of its type), seed {config._engram_seed}")  # type: ignore[attr-defined]
    return lines


class _RandomRef:
    """A random case not drawn yet: its suite, seed and case number (§CONF.7). The case is drawn when its test
    runs, so that collecting N cases holds N of these, not N cases."""

    __slots__ = ("suite", "seed", "index")

    def __init__(self, suite: str, seed: int, index: int) -> None:
        self.suite, self.seed, self.index = suite, seed, index

    @property
    def id(self) -> str:
        return f"random:{self.suite}-tc{self.index}"

    def draw(self) -> _vectors.Case:
        return _vectors.random_case(self.suite, self.seed, self.index)


def case_params(suite: str, type_: Optional[str], n_random: int, seed: int) -> List[Any]:
    """The cases of one ``@engram.cases(suite, type=...)``: the fixed vectors' Case objects, then the random cases as
    _RandomRef (their types drawn and dropped to apply ``type``). Raises Error for an unknown suite or type."""
    doc = _vectors.load(suite)
    types = sorted({g.get("type", "") for g in doc["testGroups"]})
    numbers: List[int] = []
    if n_random > 0 and suite in set(random_suites()):
        if type_ is None:
            numbers = list(range(1, n_random + 1))
        elif type_ in types or type_ in _core.random_types(suite, seed, min(n_random, 1000)):
            # N cases of the type: the first N of it in conform --random's stream (at most max(10^4, 100 N) looked at)
            numbers = _core.random_numbers(suite, seed, n_random, type_)
    if type_ is not None and type_ not in types and not numbers:
        raise Error(f"engram.cases({suite!r}, type={type_!r}): the suite has no test of that type (its types: "
                    f"{', '.join(types)})")
    out: List[Any] = list(_vectors.cases(suite, type_))
    out.extend(_RandomRef(suite, seed, k) for k in numbers)
    return out


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "engram_batch" in metafunc.fixturenames:
        _generate_batches(metafunc)
    if "engram_case" not in metafunc.fixturenames:
        return
    marks = list(metafunc.definition.iter_markers("engram_cases"))
    if not marks:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: takes engram_case but has no @engram.cases(...)")
    config = metafunc.config
    index, count, _ = config._engram_shard  # type: ignore[attr-defined]
    all_cases: List[Any] = []
    try:
        for m in marks:
            suite = m.args[0] if m.args else m.kwargs["suite"]
            all_cases.extend(case_params(suite, m.kwargs.get("type"), config._engram_random,  # type: ignore[attr-defined]
                                         config._engram_seed))  # type: ignore[attr-defined]
    except Error as e:
        raise pytest.UsageError(f"engram: {e}") from None
    params = []
    for i, case in enumerate(all_cases):
        if i % count != index:
            continue
        flags = case.flags if isinstance(case, _vectors.Case) else []
        for f in flags:
            config.addinivalue_line("markers", f"{f}: Engram vector flag (engram.vectors notes)")
        params.append(pytest.param(case, id=case.id, marks=[getattr(pytest.mark, f) for f in flags]))
    metafunc.parametrize("engram_case", params, indirect=True)


@pytest.fixture
def engram_case(request: pytest.FixtureRequest) -> _vectors.Case:
    """The case of this test (a random one is drawn now)."""
    p = request.param
    case = p.draw() if isinstance(p, _RandomRef) else p
    case.verdict = None
    case.unsupported = False
    return case


def _record(case: _vectors.Case, status: str, reason: str) -> None:
    trivial = bool(case.verdict and case.verdict.trivial)
    _OUTCOMES.append((case.label, status, reason, case.valid, trivial))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    batch = getattr(item, "funcargs", {}).get("engram_batch")
    if isinstance(batch, _batch.Batch):
        _report_batch(batch, report)
    case = getattr(item, "funcargs", {}).get("engram_case")
    if not isinstance(case, _vectors.Case):
        return
    if report.when == "setup" and report.skipped:
        _record(case, "skipped", "skipped")
    if report.when != "call":
        return
    if report.passed and case.verdict is None:
        # §CONF.4 a case never judged tests nothing: it fails, not passes.
        report.outcome = "failed"
        report.longrepr = (f"engram: {case.id}: the test took engram_case but never judged it (call "
                           f"engram_case.check(port), or engram.judge(engram_case, outputs))")
    if report.skipped:
        _record(case, "skipped", "unsupported" if case.unsupported else "skipped")
    elif case.verdict is not None and report.passed:
        _record(case, case.verdict.status, case.verdict.reason)
    else:
        _record(case, "fail", case.verdict.reason if case.verdict is not None else "not judged")
    if report.failed:
        _FAILED.append(case)


def _generate_batches(metafunc: pytest.Metafunc) -> None:
    """engram.batches: the marks' cases (fixed vectors, then --engram-random's, as case_params gives them),
    numbered and cut to this shard as engram_case numbers them, then batched (engram.batch.batch_params)."""
    marks = list(metafunc.definition.iter_markers("engram_batches"))
    if not marks:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: takes engram_batch but has no @engram.batches(...)")
    sizes = {m.kwargs.get("size", 64) for m in marks}
    if len(sizes) != 1:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: its @engram.batches marks give sizes "
                                f"{sorted(sizes, key=str)}; one size per test")
    config = metafunc.config
    index, count, _ = config._engram_shard  # type: ignore[attr-defined]
    items: List[Any] = []
    try:
        for m in marks:
            suite = m.args[0] if m.args else m.kwargs["suite"]
            items.extend(case_params(suite, m.kwargs.get("type"), config._engram_random,  # type: ignore[attr-defined]
                                     config._engram_seed))  # type: ignore[attr-defined]
        batches = _batch.batch_params([c for i, c in enumerate(items) if i % count == index], sizes.pop())
    except (Error, ValueError) as e:
        raise pytest.UsageError(f"engram: {e}") from None
    params = []
    for b in batches:
        for f in b.flags:
            config.addinivalue_line("markers", f"{f}: Engram vector flag (engram.vectors notes)")
        params.append(pytest.param(b, id=b.id, marks=[getattr(pytest.mark, f) for f in b.flags]))
    metafunc.parametrize("engram_batch", params, indirect=True)


@pytest.fixture
def engram_batch(request: pytest.FixtureRequest) -> _batch.Batch:
    """The batch of this test (its random cases are drawn now)."""
    return request.param.draw()


def _report_batch(batch: _batch.Batch, report: pytest.TestReport) -> None:
    """engram_case's rules for every case of a batch: outcomes recorded for the session's verdict, a batch never
    judged fails, the failing cases saved."""
    if report.when == "setup" and report.skipped:
        for c in batch.cases:
            _record(c, "skipped", "skipped")
    if report.when != "call":
        return
    if report.passed and not batch.verdicts:
        report.outcome = "failed"
        report.longrepr = (f"engram: {batch.id}: the test took engram_batch but never judged it (call "
                           f"engram_batch.check(port), or engram_batch.judge(answer))")
    judged = {id(v.case): v for v in batch.verdicts}
    for c in batch.cases:
        v = judged.get(id(c))
        if report.skipped:
            _record(c, "skipped", "unsupported" if batch.unsupported else "skipped")
        elif v is not None and (v.ok or report.failed):
            _record(c, v.status, v.reason)
        else:
            _record(c, "fail", "not judged")
    if report.failed:
        _FAILED.extend(batch.failed or [c for c in batch.cases if id(c) not in judged] or batch.cases)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    # §CONF.4 engram conform's rule on the whole session: nothing tested, or a suite answered only `unsupported`
    # (or only trivially), fails it.
    if _OUTCOMES:
        problems = _core.session_problems(_OUTCOMES, config._engram_random)  # type: ignore[attr-defined]
        if problems:
            config._engram_problems = problems  # type: ignore[attr-defined]
            if session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
    out = config.getoption("engram_save_failures")
    if not out or not _FAILED:
        return
    try:
        _vectors.write_failures(out, _FAILED)
    except Error as e:
        config.get_terminal_writer().line(f"engram: --engram-save-failures {out}: {e}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return
    config._engram_saved = (out, len(_FAILED))  # type: ignore[attr-defined]


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    for p in getattr(config, "_engram_problems", []):
        terminalreporter.write_line(f"engram: FAILED: {p}", red=True)
    saved = getattr(config, "_engram_saved", None)
    if saved:
        terminalreporter.write_line(f"engram: {saved[1]} failing case(s) written to {saved[0]}; replay: "
                                    f"engram conform --vectors {saved[0]} --exec '<your adapter>'")
