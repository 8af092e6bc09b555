#!/usr/bin/env python3
"""No issue references in code, comments or pages (CONTRIBUTING.md): they belong in commit bodies.

  check_issue_refs.py        exit 1 naming every file:line that cites one of our issues

What counts: "issue NN" / "issues NN", and "#NN" as a citation ("#32 item 7", "(#18)", "#28 (torch ...)",
"#6: ..."); a "#1" that numbers something else ("row id #1 is") is not one.
Other projects' pull requests ("PR #19654", "pull request 19654", ".../pull/3689") are sources, not ours,
and are allowed. Read: the tracked text files, but the changelogs (they record history) and the vectors'
JSON (generated from the generator's sources, which this checks).
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OURS = re.compile(r"[Ii]ssues?\s+#?\d{1,3}\b|(?<![\w/&])#\d{1,2}(?=\s+item\b|\)|:|,|;|\s+\()")
THEIRS = re.compile(r"(?:PR|[Pp]ull [Rr]equest|pull/)\s*#?\d+")
SKIP = re.compile(r"(^|/)CHANGELOG[^/]*\.md$|^vectors/v1/|\.(png|svg|safetensors|bin|gz)$")


def main(argv):
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, check=True, capture_output=True, text=True).stdout.split()
    found = []
    for rel in files:
        if SKIP.search(rel) or rel in ("scripts/check_issue_refs.py", "CONTRIBUTING.md"):
            continue
        path = os.path.join(ROOT, rel)
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        for n, line in enumerate(lines, 1):
            for m in OURS.finditer(THEIRS.sub("", line)):
                found.append(f"{rel}:{n}: {m.group(0)!r}: an issue reference (say the reason; the issue goes in the "
                             "commit body)")
    for f in found:
        print(f, file=sys.stderr)
    if found:
        print(f"check_issue_refs: {len(found)} issue reference(s)", file=sys.stderr)
        return 1
    print("check_issue_refs: none")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
