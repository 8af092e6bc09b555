#!/usr/bin/env python3
"""Checks docs/ports.md against what it is generated from, without any port checkout (ctest ports.matrix.*):
the committed page is what docs/ports.json (the raw measurements) and conformance/ports/*/port.json render,
with every failure explained; and the check fails when it should (a page edited by hand, a failure reason
port.json does not explain, a saved measurement of a port that no longer has a port.json entry kept aside)."""
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
    for f in failures:
        print("FAIL:", f)
    print(f"{3 - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
