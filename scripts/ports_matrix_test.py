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
        r = subprocess.run([sys.executable, MATRIX, empty, "--only", "ds4", "--results", kept_results, "--out", kept_page],
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
    for f in failures:
        print("FAIL:", f)
    print(f"{6 - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
