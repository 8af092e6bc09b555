#!/usr/bin/env python3
"""ctest `ports.standin.<port>`: runs a port's adapter (conformance/ports/<port>/) through `engram conform` on a
stand-in checkout: the port's file paths holding conformance/ports/standins/ modules that have the port's API and
answer from the in-tree numpy port. The run must be OK with tests matched in every claimed suite: an adapter that
maps the API wrongly fails. This checks the adapter, not the port: the real measurement needs the port's
checkout (scripts/ports.sh CHECKOUTS_DIR, docs/ports.md).

usage: standin_test.py PORT ENGRAM_BINARY     (exit 77: skipped, the interpreter lacks what the adapter imports)
Python: ENGRAM_PORTS_PYTHON (torch, numpy, sympy) for adapters that import torch, else ENGRAM_PYTHON.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    port_id, engram = sys.argv[1], sys.argv[2]
    with open(os.path.join(HERE, port_id, "port.json"), encoding="utf-8") as f:
        port = json.load(f)
    standin = port["standin"]
    python = os.environ.get("ENGRAM_PORTS_PYTHON") or os.environ.get("ENGRAM_PYTHON") or ""
    probe = standin.get("imports", ["numpy"])
    # Found, not imported: importing torch takes a second of CPU, and every conform run below imports it again.
    # (A module that is there but broken fails the run below instead of skipping it.)
    find = "import importlib.util, sys; sys.exit(any(importlib.util.find_spec(m) is None for m in sys.argv[1:]))"
    if not python or subprocess.run([python, "-c", find] + probe, capture_output=True).returncode:
        print(f"skipped: the {port_id} adapter needs a python with {', '.join(probe)} "
              f"(ENGRAM_PORTS_PYTHON; got {python or 'none'})")
        return 77
    with tempfile.TemporaryDirectory() as checkout:
        for path, source in standin["files"].items():
            os.makedirs(os.path.dirname(os.path.join(checkout, path)) or checkout, exist_ok=True)
            shutil.copy(os.path.join(HERE, source), os.path.join(checkout, path))
        # the stand-ins import _ref (standins/), the adapters engram_adapter and the numpy port (conformance/python)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(HERE, "standins"),
                                                           os.path.join(ROOT, "conformance", "python")]))
        adapter = os.path.join(HERE, port["adapter"].split("conformance/ports/", 1)[1])
        failed = False
        # standin.expectFail: {suite: [tcId, ...], "why": ...}, the fixed vectors the stand-in cannot pass
        # because the port's API cannot carry what they test (conform --expect-fail --strict-stale: each must
        # fail, and nothing else may). standin.random: {suite: N, "why": ...}, random cases in the fixed
        # vectors' place (--random-only), for a suite whose fixed vectors the port's API cannot take.
        expect = {k: v for k, v in standin.get("expectFail", {}).items() if k != "why"}
        randoms = {k: v for k, v in standin.get("random", {}).items() if k != "why"}
        # standin.optionalProbe: Python code that exits 77 where the interpreter cannot run the optional suites (e.g. a
        # torch older than float8, read from its metadata), 0 where it can: checked once, so that they are noted
        # without a run each; any other exit (the probe broke) fails
        probe = standin.get("optionalProbe")
        probed = probe is not None and subprocess.run([python, "-c", probe], capture_output=True, text=True)
        if probed and probed.returncode not in (0, 77):  # the probe itself broke: no note can stand for the suites
            print(f"FAIL {port_id}: optionalProbe exited {probed.returncode}:\n{probed.stderr[-2000:]}")
            return 1
        unable = bool(probed) and probed.returncode == 77
        suites = standin.get("suites", port["suites"])
        optional = standin.get("optional", {})
        for suite in suites:
            if unable and suite in optional:
                print(f"note: {port_id} {suite}: not run on this interpreter ({optional[suite]})")
        suites = [s for s in suites if not (unable and s in optional)]
        # one conform run for every suite with fixed vectors only (the adapter starts, and imports torch, once);
        # a random-only or optional suite runs alone, its flags and its exit status its own
        plain = [s for s in suites if s not in randoms and s not in optional]
        runs = ([plain] if plain else []) + [[s] for s in suites if s not in plain]
        for run in runs:
            name = "-".join(run)
            report = os.path.join(checkout, f"{name}.json")
            extra = []
            listed = {s: expect[s] for s in run if s in expect}
            if listed:
                path = os.path.join(checkout, f"{name}-expected.json")
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(listed, f)
                extra += ["--expect-fail", path, "--strict-stale"]
            if run[0] in randoms:  # the fixed vectors are all outside the API: random cases only
                extra += ["--random-only", "--random", str(randoms[run[0]]), "--seed", "1"]
            r = subprocess.run([engram, "conform", "--vectors", os.path.join(ROOT, "vectors")] +
                               [a for s in run for a in ("--suite", s)] + ["--report-json", report, "--timeout", "60"] +
                               extra + ["--exec", f"{python} {adapter} --checkout {checkout}"],
                               capture_output=True, text=True, env=env)
            tail = "\n".join(r.stdout.splitlines()[-6:])
            # with a probe that found the interpreter able, an optional suite must answer like any other
            if r.returncode == 1 and run[0] in optional and probe is None and os.path.exists(report):
                # standin.optional: {suite: why}, a suite the interpreter may not run at all (e.g. float8 dtypes need
                # torch >= 2.1): every test answered unsupported is said, not failed; a failing test still fails
                with open(report, encoding="utf-8") as f:
                    c = json.load(f)["suites"].get(run[0], {})
                if c.get("failed", 1) == 0 and c.get("tested", 1) == 0:
                    print(f"note: {port_id} {run[0]}: nothing answered on this interpreter ({optional[run[0]]})")
                    continue
            if r.returncode != 0:
                print(f"FAIL {port_id} {', '.join(run)} on the stand-in (exit {r.returncode}):\n{r.stdout[-3000:]}\n"
                      f"{r.stderr[-2000:]}")
                failed = True
                continue
            with open(report, encoding="utf-8") as f:
                counts = json.load(f)["suites"]
            for suite in run:
                tested = counts.get(suite, {}).get("tested", 0)
                rnd = counts.get("random:" + suite, {})
                answered = rnd.get("passed", 0) + rnd.get("failed", 0)
                print(f"ok {port_id} {suite}: {tested} fixed tests matched" +
                      (f", {len(expect[suite])} expected failures" if suite in expect else "") +
                      (f", {answered} random cases answered" if suite in randoms else "") + " on the stand-in")
                if tested + answered == 0:
                    failed = True
            print(tail)
        print("note: this ran the adapter on a stand-in of the port's API; the port itself is measured by "
              "scripts/ports.sh on its checkout (docs/ports.md)")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
