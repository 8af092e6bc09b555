"""The golden vectors as data (spec/vectors.md), the random cases (§CONF.7) and the runner's verdict (§CONF.4).

The released vectors ship inside the package (``engram/_vectors/``). ``ENGRAM_VECTORS=DIR`` points at another
vectors directory; like ``engram conform``, a directory is named by its MANIFEST.sha256 alone: a released set, the
unreleased set this module was built with, or "modified, not a released set" (:func:`kind`, §VEC.13).
"""
from __future__ import annotations

import functools
import json
import math
import os
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional

import numpy as np

from . import _core
from ._core import Error

__all__ = ["directory", "kind", "suites", "load", "cases", "Case", "Verdict", "judge", "random_cases",
           "random_doc", "random_case", "Unsupported", "write_failures"]

_HERE = Path(os.path.abspath(__file__)).parent
# The wheel ships the vectors in engram/_vectors; an editable install (pip install -e .) runs this file from the
# source tree, python/engram_conformance/, whose vectors are the repository's vectors/ (the ones a wheel of it would ship).
_PACKAGED = _HERE / "_vectors"
if not (_PACKAGED / "MANIFEST.sha256").is_file() and (_HERE.parent.parent / "vectors" / "MANIFEST.sha256").is_file():
    _PACKAGED = _HERE.parent.parent / "vectors"


class Unsupported(Exception):
    """Raised by a port for a case it does not implement: the test is skipped (§CONF.2 ``unsupported``)."""


def directory() -> Path:
    """The vectors directory in use: ``$ENGRAM_VECTORS`` or the released set shipped in the package."""
    env = os.environ.get("ENGRAM_VECTORS")
    return Path(env) if env else _PACKAGED


@functools.lru_cache(maxsize=None)
def _manifest(dir_: str) -> Dict[str, Any]:
    """§CONF.4, §VEC.9 The directory as ``engram conform`` checks it before a run, by the same C++ (the manifest's
    digests, regular files only, the spec version, every file against its schema, no valid test without expected
    outputs, unique keys, bounded depth): a directory conform refuses is refused here, with its message. As
    ``engram conform --suite`` does, a suite is checked against its schema when it is loaded (:func:`load`)."""
    if not Path(dir_).is_dir():
        raise Error(f"{dir_}: not a directory; ENGRAM_VECTORS must name a vectors directory holding MANIFEST.sha256")
    sha, released, names, _ = _core.check_vectors(dir_, [])
    return {"suites": names, "sha256": sha, "released": released}


def kind() -> str:
    """§VEC.13 What the cases are judged against, in the words of ``engram conform``'s verdict."""
    return _core.vectors_kind(_manifest(str(directory()))["sha256"])


def suites() -> List[str]:
    """The suites of the vectors directory (v1/<suite>.json), sorted."""
    return sorted(_manifest(str(directory()))["suites"])


@functools.lru_cache(maxsize=None)
def _load(dir_: str, suite: str) -> Dict[str, Any]:
    names = _manifest(dir_)["suites"]
    if suite not in names:
        raise Error(f"suite {suite}: not in {dir_}/MANIFEST.sha256 (suites: {', '.join(sorted(names))})")
    return json.loads(_core.check_vectors(dir_, [suite])[3][suite])


def load(suite: str) -> Dict[str, Any]:
    """The vector file of ``suite`` as JSON (key order kept): ``testGroups`` of ``tests`` with tcId, flags, result."""
    return _load(str(directory()), suite)


def _plain(x: Any) -> Any:
    """numpy values as JSON values: exact ints stay ints (§CONF.1), arrays become lists; a NaN or an infinity
    becomes its float.hex() text ("nan", "inf", "-inf"), which JSON has no number for (§FUS.9)."""
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    if isinstance(x, np.generic):
        return _plain(x.item())
    if isinstance(x, float) and not math.isfinite(x):
        return x.hex()
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if hasattr(x, "tolist") and hasattr(x, "dtype"):  # torch tensors and the like
        return _plain(x.tolist())
    return x


class Verdict:
    """§CONF.4 The runner's verdict on one answer: status pass | fail | skipped, reason and the diagnosis."""

    def __init__(self, case: "Case", status: str, reason: str, detail: str, trivial: bool) -> None:
        self.case, self.status, self.reason, self.detail, self.trivial = case, status, reason, detail, trivial

    @property
    def ok(self) -> bool:
        return self.status == "pass"

    def __str__(self) -> str:
        head = f"{self.case.id}: {self.status}" + (f" ({self.reason})" if self.reason else "")
        return head + ("\n" + self.detail if self.detail else "")

    __repr__ = __str__


class Case:
    """One test of a vector file or one random case: ``group`` (without its tests), ``test``, ``inputs`` (what a
    port is given, §CONF.1) and ``expected`` (what it must produce). ``id`` reads ``hash_v41-tc17`` (random cases
    ``random:hash_v41-tc3``)."""

    def __init__(self, suite: str, group: Mapping[str, Any], test: Mapping[str, Any], notes: Mapping[str, Any],
                 label: Optional[str] = None, doc: Optional[Mapping[str, Any]] = None) -> None:
        self.suite = suite
        self.label = label or suite
        self.group = {k: v for k, v in group.items() if k != "tests"}
        self.test = dict(test)
        self.notes = notes
        self.doc = doc
        self.type: str = self.group.get("type", "")
        self.tc_id: int = self.test.get("tcId", 0)
        self.flags: List[str] = list(self.test.get("flags", []))
        self.valid: bool = self.test.get("result") == "valid"
        self.verdict: Optional[Verdict] = None
        self.unsupported = False
        self._split: Optional[tuple] = None
        self._layout = None

    @property
    def id(self) -> str:
        return f"{self.label}-tc{self.tc_id}"

    def _parts(self) -> tuple:
        if self._split is None:
            i, e = _core.split(self.type, json.dumps(self.test))
            self._split = (json.loads(i), json.loads(e))
        return self._split

    @property
    def inputs(self) -> Dict[str, Any]:
        """What a port is sent (§CONF.1): the test without its expected outputs."""
        return self._parts()[0]

    @property
    def expected(self) -> Dict[str, Any]:
        return self._parts()[1]

    @property
    def layout(self):
        """The group's layout (engram.Layout), for groups that have a configuration."""
        if self._layout is None:
            from . import Layout
            self._layout = Layout.from_group(self.group)
        return self._layout

    def __getitem__(self, key: str) -> Any:
        return self.test[key] if key in self.test else self.group[key]

    def judge(self, outputs: Any = None, *, refused: Optional[str] = None) -> Verdict:
        """§CONF.4 The runner's verdict on ``outputs`` (a dict of output name -> value), or on a refusal."""
        answer = {"refused": refused} if refused is not None else {"outputs": _plain(outputs)}
        status, reason, detail, trivial = _core.judge(self.label, json.dumps(self.group), json.dumps(self.test),
                                                      json.dumps(answer), json.dumps(self.notes))
        self.verdict = Verdict(self, status, reason, detail, trivial)
        return self.verdict

    def check(self, port: Callable[["Case"], Any]) -> Verdict:
        """Runs ``port(case)`` and asserts the runner's verdict: a valid case must return the expected outputs,
        an invalid one (``result: invalid``) must raise. ``engram.vectors.Unsupported`` skips the case."""
        try:
            outputs = port(self)
        except Unsupported as e:
            import pytest
            self.unsupported = True  # §CONF.4 answered, as `unsupported`: a claim not made
            pytest.skip(f"unsupported: {e}")
        except Exception as e:  # noqa: BLE001 - any refusal of the port counts (§CONF.2 refused)
            v = self.judge(refused=f"{type(e).__name__}: {e}")
        else:
            v = self.judge(outputs)
        if not v.ok:
            raise AssertionError(str(v))
        return v

    def __repr__(self) -> str:
        return f"<engram.Case {self.id} {self.type} {'valid' if self.valid else 'invalid'}>"


def judge(case: Case, outputs: Any = None, *, refused: Optional[str] = None) -> Verdict:
    """§CONF.4, §CONF.1, §FUS.9 The verdict of ``engram conform`` on ``outputs`` for ``case``: exact integers by
    value, faithful bf16, the float tolerances; a failure's ``detail`` names the first differing path, expected vs
    got, and the intermediates there."""
    return case.judge(outputs, refused=refused)


def cases(suite: str, type: Optional[str] = None) -> Iterator[Case]:  # noqa: A002
    """Every test of ``suite`` (of groups of ``type`` when given), in file order."""
    doc = load(suite)
    notes = doc.get("notes", {})
    for g in doc["testGroups"]:
        if type is not None and g.get("type") != type:
            continue
        for t in g["tests"]:
            yield Case(suite, g, t, notes, doc=doc)


def random_doc(suite: str, seed: int, n: int) -> str:
    """§CONF.7 Cases 1 ... n of ``suite`` under ``seed`` as a vector file: the bytes of
    ``engram vectors random --suite SUITE --count N --seed S``'s v1/SUITE.json (what ``conform --random`` asks)."""
    return _core.random_doc(suite, seed, n)


def random_cases(suite: str, seed: int, n: int, type: Optional[str] = None) -> List[Case]:  # noqa: A002
    """§CONF.7 Random cases of ``suite`` under ``seed``, tcId = the case's number in the stream
    ``engram conform --random N --seed seed`` draws from (ids ``random:hash_v41-tc3``).

    Without ``type``: cases 1 ... n, exactly the n cases ``engram conform --random n`` asks. With ``type``: the
    first n cases of that type in the same stream, drawn until n are found or 100 n cases (at least 10,000)
    were looked at, so fewer than n come back only for a type the suite draws rarely; a type that no test of the
    suite's vector file has is refused. ``engram conform --random K`` asks each case for any K at least its
    tcId."""
    if type is None:
        doc = json.loads(random_doc(suite, seed, n))
        numbers = None
    else:
        if isinstance(suite, str) and isinstance(type, str) and suite in suites():
            known = sorted({g.get("type", "") for g in load(suite)["testGroups"]})
            if type not in known:  # a misspelt type would cost 100 n fruitless draws
                raise Error(f"type {type!r}: suite {suite} has no tests of this type (its types: {', '.join(known)})")
        text, numbers = _core.random_typed(suite, seed, n, type)
        doc = json.loads(text)
    notes = doc.get("notes", {})
    out = []
    for g in doc["testGroups"]:
        for t in g["tests"]:
            if numbers is not None:
                t = dict(t, tcId=numbers[len(out)])
            out.append(Case(suite, g, t, notes, label=f"random:{suite}", doc=doc))
    return out


def random_case(suite: str, seed: int, index: int) -> Case:
    """§CONF.7 Case ``index`` (1-based, its tcId) alone: the case ``engram conform --random N --seed seed`` sends
    there for any N >= index, drawn when it is asked for."""
    doc = json.loads(_core.random_case_doc(suite, seed, index))
    g = doc["testGroups"][0]
    return Case(suite, g, g["tests"][0], doc.get("notes", {}), label=f"random:{suite}", doc=doc)


def write_failures(out_dir: str, failing: List[Case]) -> str:
    """§CONF.7 Writes ``failing`` as a vectors directory (v1/<suite>.json, MANIFEST.sha256, schema/) that
    ``engram conform --vectors DIR`` replays and ``engram vectors verify DIR`` accepts. Each suite's file is its
    source file (fixed vectors or the random cases' document) with only the failing tests, one group each,
    numbered 1, 2, ... (§VEC.2), each comment starting with the case's id (``hash_v41-tc17: ...``)."""
    by_suite: Dict[str, List[Case]] = {}
    for c in failing:
        by_suite.setdefault(c.suite, []).append(c)
    docs = []
    for suite, cs in sorted(by_suite.items()):
        base = next((c.doc for c in cs if c.label == suite), None) or cs[0].doc
        doc = {k: v for k, v in base.items() if k != "testGroups"}
        groups: List[Dict[str, Any]] = []
        used = set()
        for c in cs:
            if (c.label, c.tc_id) in used:
                continue
            used.add((c.label, c.tc_id))
            t = dict(c.test)
            # §VEC.2 tcIds run 1, 2, ... in a vector file: renumbered, the comment naming the case it was.
            t["tcId"] = len(groups) + 1
            t["comment"] = f"{c.id}: {t.get('comment', '')}".rstrip(": ")
            groups.append(dict(c.group, tests=[t]))
        doc["numberOfTests"] = sum(len(g["tests"]) for g in groups)
        doc["testGroups"] = groups
        docs.append((suite, json.dumps(doc)))
    return _core.write_vectors_dir(str(out_dir), docs, str(directory() / "schema"))
