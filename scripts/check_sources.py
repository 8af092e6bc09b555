#!/usr/bin/env python3
"""Checks the citations of public primary sources (spec/sources.md).

1. No file of the repository cites the team facts sheet kept outside the repository (its name is
   FORBIDDEN below; a reader cannot check it): the only mention allowed is spec/sources.md's own history note.
2. Every source id cited anywhere (`[SRC-...]`, `SRC-...` in a link) is an entry of
   spec/sources.md (a `### SRC-...` heading), and every entry is cited at least once outside it.

Files: those git tracks (plus untracked, not ignored ones), or, outside a git checkout, every file
under ROOT except build/ and .git/.

Exit 1 and name file:line for every violation.

Usage: scripts/check_sources.py [ROOT]   (default: the repository root)
"""
import os
import re
import subprocess
import sys

FORBIDDEN = "ENGRAM" + ".md"  # split so that this file does not cite it
SOURCES = "spec/sources.md"
SRC_ID = re.compile(r"\bSRC-[A-Z0-9]+(?:-[A-Z0-9]+)*\b")
ENTRY = re.compile(r"^###\s+(SRC-[A-Z0-9-]+)\s*$", re.M)


def files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             check=True, capture_output=True).stdout
        return sorted({p for p in out.decode("utf-8", "replace").split("\0") if p})
    except (OSError, subprocess.CalledProcessError):
        found = []
        for d, dirs, names in os.walk(root):
            rel = os.path.relpath(d, root)
            dirs[:] = [x for x in dirs if not (rel == "." and x in ("build", ".git", ".venv"))]
            found += [os.path.normpath(os.path.join(rel, n)) for n in names]
        return sorted(found)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    errors, cited = [], {}
    with open(os.path.join(root, SOURCES), encoding="utf-8") as f:
        sources_text = f.read()
    entries = ENTRY.findall(sources_text)
    # The one allowed mention: the history note of spec/sources.md (a paragraph starting "*History:*").
    history = re.search(r"^\*History:\*.*?(?:\n\n|\Z)", sources_text, re.M | re.S)
    allowed = sources_text.count(FORBIDDEN, *history.span()) if history else 0
    if sources_text.count(FORBIDDEN) != allowed:
        errors.append(f"{SOURCES}: cites {FORBIDDEN} outside its *History:* note")
    for rel in files(root):
        path = os.path.join(root, rel)
        if rel == SOURCES or not os.path.isfile(path) or os.path.islink(path):
            continue
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue  # binary
        text = data.decode("utf-8", "replace")
        for i, line in enumerate(text.splitlines(), 1):
            if FORBIDDEN in line:
                errors.append(
                    f"{rel}:{i}: cites {FORBIDDEN}; cite an entry of {SOURCES} instead")
            for m in SRC_ID.finditer(line):
                cited.setdefault(m.group(0), f"{rel}:{i}")
    for sid, where in sorted(cited.items()):
        if sid not in entries:
            errors.append(f"{where}: cites {sid}, which is not an entry (### {sid}) of {SOURCES}")
    for sid in entries:
        if sid not in cited and not re.search(r"\(#" + sid.lower() + r"\)", sources_text):
            errors.append(f"{SOURCES}: entry {sid} is cited nowhere")
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    print(f"sources: {len(entries)} entries, {len(cited)} cited ids, no {FORBIDDEN} citation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
