"""Many cases in one call: the ``engram_batch`` fixture of the pytest plugin (docs/python.md).

A GPU kernel pays a launch per call, so one call per tiny case measures the launch, not the kernel.
``@engram.batches("hash_v41", type="HashTest", size=64)`` on a test taking ``engram_batch`` makes one test per
batch: the cases of one group (the same layout or parameters), in file order, ``size`` at a time (the whole
group when ``size`` is None). The port gets each group's cases of the batch in one call (:class:`Batch`) and
answers every case; each case is then judged alone by the runner's rules (engram.vectors.Case.judge, §CONF.4),
exactly as ``engram_case`` judges it. Random cases (``--engram-random``) are drawn when their test runs, ``size``
consecutive ones per test; where their groups differ, the port is called once per group.

The port's answer may take three shapes:

- a list of B per-case answers, each a dict of outputs or an exception instance (that case is refused:
  correct exactly for ``result: invalid`` cases);
- a dict whose every value holds all B cases: an array or tensor whose first dimension is B (split along it),
  or a list of B values;
- a torch tensor anywhere in either (CPU, or CUDA: moved to the CPU before judging; ``.detach().cpu()``),
  numpy arrays, or plain JSON values.

Raising ``engram.vectors.Unsupported`` skips the batch; raising anything else refuses every case of the call.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from . import vectors as _vectors

__all__ = ["Batch", "batches_of", "to_host"]


def _is_tensor(x: Any) -> bool:
    """A torch tensor (or anything shaped like one: ``detach`` and ``cpu``), without importing torch."""
    return hasattr(x, "detach") and hasattr(x, "cpu") and hasattr(x, "shape")


def to_host(x: Any) -> Any:
    """``x`` with every tensor brought to the CPU (``.detach().cpu()``, CUDA included) and made a numpy array
    where numpy has its dtype, recursively through dicts, lists and tuples."""
    if _is_tensor(x):
        t = x.detach().cpu()
        try:
            return t.numpy()
        except (TypeError, RuntimeError):  # a dtype numpy lacks (bfloat16): its values as plain numbers
            return t.tolist()
    if isinstance(x, Mapping):
        return {k: to_host(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_host(v) for v in x]
    return x


def _stackable(values: Sequence[Any]) -> Optional[np.ndarray]:
    """The values stacked along a new first axis when every one is a numeric array of one shape, else None."""
    try:
        arrays = [np.asarray(v) for v in values]
    except (ValueError, TypeError):
        return None
    if not arrays or any(a.dtype.kind not in "biuf" for a in arrays):
        return None
    if any(a.shape != arrays[0].shape for a in arrays):
        return None
    return np.stack(arrays)


def _group_key(case: _vectors.Case) -> str:
    return json.dumps(case.group, sort_keys=True)


class Batch:
    """B cases of one suite, handed to a port at once (one call per group: :meth:`runs`).

    ``cases`` (engram.vectors.Case), ``group`` (the first case's group: every case's for the batches the plugin
    makes of the fixed vectors), ``inputs`` (input name -> the B values stacked into one array where every case's
    value is a numeric array of one shape, else a list of B values), :meth:`stack` and :meth:`padded` for one
    input, :meth:`check` and :meth:`judge`."""

    def __init__(self, cases: Sequence[_vectors.Case]) -> None:
        if not cases:
            raise ValueError("a batch holds at least one case")
        self.cases: List[_vectors.Case] = list(cases)
        self.group: Dict[str, Any] = self.cases[0].group
        self.failed: List[_vectors.Case] = []
        self.verdicts: List[_vectors.Verdict] = []
        self.unsupported = False  # answered `unsupported` (§CONF.4: a claim not made)
        self._inputs: Optional[Dict[str, Any]] = None

    def __len__(self) -> int:
        return len(self.cases)

    @property
    def id(self) -> str:
        first, last = self.cases[0], self.cases[-1]
        return first.id if len(self.cases) == 1 else f"{first.id}..tc{last.tc_id}"

    @property
    def inputs(self) -> Dict[str, Any]:
        if self._inputs is None:
            keys: List[str] = []
            for c in self.cases:
                keys += [k for k in c.inputs if k not in keys]
            self._inputs = {}
            for k in keys:
                values = [c.inputs.get(k) for c in self.cases]
                stacked = _stackable(values) if all(v is not None for v in values) else None
                self._inputs[k] = stacked if stacked is not None else values
        return self._inputs

    def stack(self, key: str) -> np.ndarray:
        """The B values of input ``key`` as one array [B, ...]; ValueError when their shapes differ (see padded)."""
        values = [c.inputs[key] for c in self.cases]
        stacked = _stackable(values)
        if stacked is None:
            shapes = sorted({np.asarray(v).shape for v in values})
            raise ValueError(f"input {key!r}: the {len(values)} cases' values do not stack (shapes {shapes}); "
                             f"use padded({key!r})")
        return stacked

    def padded(self, key: str, fill: Any = 0) -> Tuple[np.ndarray, np.ndarray]:
        """The B values of a 1-D input ``key`` (ids, rowIds, ...) right-padded with ``fill`` to the longest:
        (array [B, max length], lengths [B]), the ragged batch a kernel takes in one launch."""
        values = [np.asarray(c.inputs[key]) for c in self.cases]
        if any(v.ndim != 1 for v in values):
            raise ValueError(f"input {key!r}: padded() takes 1-D values")
        lengths = np.asarray([len(v) for v in values], dtype=np.int64)
        width = int(lengths.max()) if len(lengths) else 0
        dtype = np.result_type(*[v.dtype for v in values], np.asarray(fill).dtype)
        out = np.full((len(values), width), fill, dtype=dtype)
        for i, v in enumerate(values):
            out[i, :len(v)] = v
        return out, lengths

    def runs(self) -> List["Batch"]:
        """The batch cut where the group changes: one call of the port each (a kernel's constants are fixed within
        a call). A batch of one group is its only run."""
        out: List[Batch] = []
        start = 0
        for i in range(1, len(self.cases) + 1):
            if i == len(self.cases) or _group_key(self.cases[i]) != _group_key(self.cases[start]):
                out.append(self if start == 0 and i == len(self.cases) else Batch(self.cases[start:i]))
                start = i
        return out

    def _per_case(self, answer: Any) -> List[Any]:
        """The port's answer split into B per-case answers (dicts, or exceptions for refusals)."""
        n = len(self.cases)
        if isinstance(answer, (list, tuple)):
            if len(answer) != n:
                raise ValueError(f"the port answered {len(answer)} cases, the batch holds {n}")
            return [a if isinstance(a, BaseException) else to_host(a) for a in answer]
        if isinstance(answer, Mapping):
            per: List[Dict[str, Any]] = [{} for _ in range(n)]
            for k, v in answer.items():
                v = to_host(v)
                if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == n:
                    parts = list(v)
                elif isinstance(v, (list, tuple)) and len(v) == n:
                    parts = list(v)
                else:
                    raise ValueError(f"output {k!r}: expected one value per case ({n}: an array or tensor whose "
                                     f"first dimension is {n}, or a list of {n}), got {type(v).__name__}"
                                     + (f" of shape {v.shape}" if isinstance(v, np.ndarray) else ""))
                for i, part in enumerate(parts):
                    per[i][k] = part
            return per
        raise ValueError(f"the port answered a {type(answer).__name__}: a list of {n} per-case answers or a dict "
                         f"of outputs holding all {n} cases is expected")

    def judge(self, answer: Any) -> List[_vectors.Verdict]:
        """§CONF.4 Every case's verdict on the port's answer for this batch (see the module's docstring for its
        shapes)."""
        self.verdicts = []
        for case, a in zip(self.cases, self._per_case(answer)):
            if isinstance(a, BaseException):
                self.verdicts.append(case.judge(refused=f"{type(a).__name__}: {a}"))
            else:
                self.verdicts.append(case.judge(a))
        self.failed = [v.case for v in self.verdicts if not v.ok]
        return self.verdicts

    def check(self, port: Callable[["Batch"], Any]) -> List[_vectors.Verdict]:
        """Calls ``port(run)`` once per run of one group (:meth:`runs`: once for a batch of one group) and asserts
        every case's verdict; the failure names each failing case with the runner's diagnosis.
        ``engram.vectors.Unsupported`` skips the batch; any other exception refuses every case of the call (a
        pass for the invalid ones only)."""
        verdicts: List[_vectors.Verdict] = []
        for run in self.runs():
            try:
                answer = port(run)
            except _vectors.Unsupported as e:
                import pytest
                self.unsupported = True
                pytest.skip(f"unsupported: {e}")
            except Exception as e:  # noqa: BLE001 - the port refused the whole call (§CONF.2 refused)
                answer = [e] * len(run.cases)
            verdicts += run.judge(answer)
        self.verdicts = verdicts
        self.failed = [v.case for v in verdicts if not v.ok]
        bad = [v for v in verdicts if not v.ok]
        if bad:
            raise AssertionError(f"{len(bad)} of {len(verdicts)} cases failed:\n" + "\n\n".join(str(v) for v in bad))
        return verdicts

    def __repr__(self) -> str:
        return f"<engram.Batch {self.id} {len(self.cases)} cases of {self.cases[0].type}>"


def _split(items: Sequence[Any], size: Optional[int], key: Callable[[Any], Any]) -> List[List[Any]]:
    """Consecutive items of one key, at most ``size`` each (no limit when None)."""
    if size is not None and size < 1:
        raise ValueError(f"batch size {size}: at least 1")
    out: List[List[Any]] = []
    for item in items:
        if out and key(out[-1][-1]) == key(item) and (size is None or len(out[-1]) < size):
            out[-1].append(item)
        else:
            out.append([item])
    return out


def batches_of(cases: Sequence[_vectors.Case], size: Optional[int] = None) -> List[Batch]:
    """The cases in batches: consecutive cases of one suite and group (a kernel's parameters stay fixed within a
    call), at most ``size`` each (no limit when None)."""
    return [Batch(run) for run in _split(cases, size, lambda c: (c.label, _group_key(c)))]


class BatchParam:
    """One batch as collected: fixed vectors' cases, or random cases not drawn yet (objects with ``id`` and
    ``draw()``: engram_conformance.pytest_plugin's), drawn when the test runs (:meth:`draw`)."""

    def __init__(self, items: Sequence[Any]) -> None:
        self.items = list(items)

    @property
    def id(self) -> str:
        first, last = self.items[0].id, self.items[-1].id
        return first if len(self.items) == 1 else f"{first}..tc{last.rsplit('-tc', 1)[1]}"

    @property
    def flags(self) -> List[str]:
        return sorted({f for c in self.items if isinstance(c, _vectors.Case) for f in c.flags})

    def draw(self) -> Batch:
        return Batch([c if isinstance(c, _vectors.Case) else c.draw() for c in self.items])


def batch_params(items: Sequence[Any], size: Optional[int]) -> List[BatchParam]:
    """The plugin's side: ``items`` (a test's cases, already cut to its shard: fixed vectors' Case objects, then
    random ones not drawn yet) in batches: the fixed ones by suite and group, the random ones by suite, ``size``
    at a time."""
    def key(item: Any) -> Any:
        if isinstance(item, _vectors.Case):
            return ("case", item.label, _group_key(item))
        return ("random", item.id.rsplit("-tc", 1)[0])
    return [BatchParam(run) for run in _split(items, size, key)]
