#!/usr/bin/env python3
"""Checks docs/ports.md against what it is generated from, without any port checkout (ctest ports.matrix.*):
the committed page is what docs/ports.json (the raw measurements) and conformance/ports/*/port.json render,
with every failure explained; and the check fails when it should (a page edited by hand, a failure reason
port.json does not explain, a saved measurement of a port that has no port.json, a malformed measurements
file), and `--only` without the port's checkout keeps its saved measurement."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MATRIX = os.path.join(ROOT, "scripts/ports_matrix.py")


def check(out, results):
    r = subprocess.run([sys.executable, MATRIX, "--render", "--check", "--out", out, "--results", results],
                       capture_output=True, text=True)
    return r.returncode, r.stderr


def measurements(path):
    """What a port did, without the explanations (port.json's, copied in when the entry was written)."""
    doc = json.load(open(path, encoding="utf-8"))
    for entry in doc["ports"].values():
        for row in entry["rows"]:
            row["failures"] = [f[:2] + f[3:] for f in row["failures"]]
            for case in row["random"]["shrunk"]:
                case.pop("why", None)
    return doc


def synthetic_port(tmp):
    """A port whose interpreter lacks a requirement is not measured and its row says why; a checkout whose file
    is not the pinned one is named; a measurement writes the page and measurements it is told to (never
    docs/ports.md unless --update)."""
    failures = []
    ports, checkouts = os.path.join(tmp, "synth-ports"), os.path.join(tmp, "synth-checkouts")
    os.makedirs(os.path.join(ports, "synth"))
    os.makedirs(os.path.join(checkouts, "synth-co"))
    with open(os.path.join(checkouts, "synth-co", "engram.py"), "w") as f:
        f.write("X = 1\n")
    with open(os.path.join(ports, "synth", "port.json"), "w", encoding="utf-8") as f:
        json.dump({"name": "synthetic", "repo": "acme/engram", "commit": "0" * 40, "checkout": "synth-co",
                   "files": ["engram.py"], "sha256": {"engram.py": "0" * 64}, "kind": "python",
                   "adapter": "none.py", "requires": ["numpy", "engram-no-such-package>=2"],
                   "suites": ["hash_v41"], "notMeasured": []}, f)
    out, res, saved = (os.path.join(tmp, n) for n in ("synth.md", "synth.json", "none.json"))
    docs_before = open(os.path.join(ROOT, "docs/ports.md"), encoding="utf-8").read()
    r = subprocess.run([sys.executable, MATRIX, checkouts, "--ports-dir", ports, "--saved", saved, "--out", out,
                        "--results", res, "--random", "0"], capture_output=True, text=True)
    entry = json.load(open(res, encoding="utf-8"))["ports"].get("synth", {}) if os.path.exists(res) else {}
    why = entry.get("whyNot") or ""
    if "engram-no-such-package>=2 (not installed)" not in why or entry.get("rows"):
        failures.append(f"an unmet requirement was not said in the row: exit {r.returncode}: {why or r.stderr[-300:]}")
    if not (isinstance(entry.get("pins"), list) and "engram.py (sha256" in entry["pins"][0]):
        failures.append(f"a file that is not the pinned one was not named: {entry.get('pins')}")
    if "not measured: the adapter's requirements are not met" not in open(out, encoding="utf-8").read():
        failures.append("the page does not say why the port was not measured")
    if open(os.path.join(ROOT, "docs/ports.md"), encoding="utf-8").read() != docs_before:
        failures.append("a measurement without --update changed docs/ports.md")
    return failures


def levels_and_cells():
    """§CONF.8 levels from a port's rows (each suite measured on its own) and the random column of a cut row."""
    import ports_matrix as pm  # scripts/, the test's own directory
    failures = []

    def row(suite, failed=0, skipped=0, profiles=None, rnd_failed=0):
        return {"suite": suite, "passed": 5, "failed": failed, "skipped": skipped,
                "profiles": profiles or {"v4.1": {"passed": 5, "failed": failed, "skipped": skipped}},
                "random": {"run": 10, "failed": rnd_failed, "shrunk": []}}

    clean = {"vectors": "r" * 64, "rows": [row("multipliers"), row("layout"), row("hash_v41"),
                                           row("hash_state", skipped=3, profiles={"v4.1": {"passed": 4, "failed": 0,
                                                                                           "skipped": 0}})]}
    level, why = pm.level_summary(clean, {"r" * 64})
    if level != "v4.1-hash":
        failures.append(f"a clean v4.1 hash port (demo-v1 hash_state groups skipped) reaches {level}: {why}")
    level, why = pm.level_summary(clean, set())
    if level != "none" or "not a released one" not in why:
        failures.append(f"an unreleased vector set still reaches {level}")
    clean["rows"][2] = row("hash_v41", rnd_failed=2)
    level, why = pm.level_summary(clean, {"r" * 64})
    if level != "none" or "hash_v41 2 random case(s) failed" not in why:
        failures.append(f"a failing random case still reaches {level}: {why}")
    cut = {"random": {"run": 700, "drawn": 712, "cut": "--random-seconds 60"}}
    if pm.random_cell(cut) != "700 (cut by --random-seconds 60 after 712 drawn)":
        failures.append(f"a cut row reads {pm.random_cell(cut)!r}")
    return failures


def main():
    failures = []
    page, results = os.path.join(ROOT, "docs/ports.md"), os.path.join(ROOT, "docs/ports.json")
    rc, err = check(page, results)
    if rc != 0:
        failures.append(f"the committed page: exit {rc}: {err.strip()}")
    with tempfile.TemporaryDirectory() as tmp:
        # a page edited by hand (one count changed) is not what the measurements render
        edited = os.path.join(tmp, "ports.md")
        with open(page, encoding="utf-8") as f:
            text = f.read()
        with open(edited, "w", encoding="utf-8") as f:
            f.write(text.replace("| hash_v41 | ", "| hash_v41 | 1", 1))
        rc, err = check(edited, results)
        if rc != 1 or "is not what" not in err:
            failures.append(f"an edited page was not caught: exit {rc}: {err.strip()}")
        # a random failure reason that port.json does not explain is UNEXPLAINED, and the check fails on it
        saved = json.load(open(results, encoding="utf-8"))
        planted = False
        for entry in saved["ports"].values():
            for row in entry["rows"]:
                if row["random"].get("reasons"):
                    reason = next(iter(row["random"]["reasons"]))
                    row["random"]["reasons"]["planted reason"] = row["random"]["reasons"].pop(reason)
                    planted = True
                    break
            if planted:
                break
        unexplained = os.path.join(tmp, "ports.json")
        with open(unexplained, "w", encoding="utf-8") as f:
            json.dump(saved, f)
        shutil.copy(page, edited)
        rc, err = check(edited, unexplained)
        if not planted or rc != 1 or "UNEXPLAINED planted reason" not in err:
            failures.append(f"an unexplained reason was not caught: exit {rc}: {err.strip()[-300:]}")
        # a saved measurement of a port that has no port.json any more is reported, not dropped silently
        stray = json.load(open(results, encoding="utf-8"))
        stray["ports"]["gone"] = next(iter(stray["ports"].values()))
        with open(unexplained, "w", encoding="utf-8") as f:
            json.dump(stray, f)
        rc, err = check(page, unexplained)
        if rc != 1 or "no conformance/ports/gone/port.json" not in err:
            failures.append(f"a stray saved measurement was not reported: exit {rc}: {err.strip()[-300:]}")
        # a port measured with --only whose checkout is absent keeps its saved measurement: nothing is lost
        kept_results, kept_page = os.path.join(tmp, "kept.json"), os.path.join(tmp, "kept.md")
        shutil.copy(results, kept_results)
        empty = os.path.join(tmp, "no-checkouts")
        os.mkdir(empty)
        r = subprocess.run([sys.executable, MATRIX, empty, "--only", "ds4", "--saved", results, "--results", kept_results,
                            "--out", kept_page],
                           capture_output=True, text=True)
        same = (r.returncode == 0 and measurements(kept_results) == measurements(results)
                and open(kept_page, encoding="utf-8").read() == text)
        if not same or "is kept" not in r.stderr:
            failures.append(f"--only with no checkout lost or changed the saved measurement: exit {r.returncode}: "
                            f"{r.stderr.strip()[-300:]}")
        # a measurements file of another shape is refused, naming the file
        with open(unexplained, "w", encoding="utf-8") as f:
            f.write('{"ports": []}')
        rc, err = check(page, unexplained)
        if rc != 2 or "not a format-2 measurements file" not in err:
            failures.append(f"a malformed measurements file was not refused: exit {rc}: {err.strip()[-300:]}")
        failures += synthetic_port(tmp)
        failures += levels_and_cells()
    for f in failures:
        print("FAIL:", f)
    print(f"{10 - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
