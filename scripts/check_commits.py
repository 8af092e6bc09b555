#!/usr/bin/env python3
"""The commit convention of CONTRIBUTING.md, checked over the commits a change adds.

  check_commits.py                 the commits since the convention's first commit (the one that added
                                   CONTRIBUTING.md's "Commit messages"), that commit included
  check_commits.py --since REV     the commits in REV..HEAD
  check_commits.py --message FILE  one message (a commit-msg hook: ln -s ../../scripts/check_commits.py
                                   .git/hooks/commit-msg works, it takes the file as its argument)

Each message: a subject of at most 72 characters starting with an area prefix ("runner: ...",
"spec, vectors: ..."), no trailing period; a blank line; a body. Merge commits are not checked. Exit 1
names every commit that breaks it; history before the convention is left as it is.
"""
import re
import subprocess
import sys

AREAS = {"spec", "reference", "vectors", "runner", "cli", "host", "plugins", "ports", "python", "cuda",
         "docs", "scripts", "ci", "build", "base", "fuzz", "badinput", "crosscheck", "examples", "packaging"}
SUBJECT = re.compile(r"^([a-z]+(?:, [a-z]+)*): \S")


def problems(message):
    lines = message.rstrip("\n").split("\n")
    subject = lines[0]
    out = []
    if len(subject) > 72:
        out.append(f"subject of {len(subject)} characters (at most 72)")
    m = SUBJECT.match(subject)
    if not m:
        out.append("subject does not start with an area prefix ('area: ...')")
    else:
        unknown = [a for a in m.group(1).split(", ") if a not in AREAS]
        if unknown:
            out.append(f"unknown area {', '.join(unknown)} (CONTRIBUTING.md lists them)")
    if subject.endswith("."):
        out.append("subject ends with a period")
    if len(lines) < 3 or lines[1].strip() != "" or not any(l.strip() for l in lines[2:]):
        out.append("no blank line and body after the subject")
    return out


def git(*args):
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def main(argv):
    if len(argv) == 2 and argv[0] == "--message" or len(argv) == 1 and not argv[0].startswith("-"):
        path = argv[-1]
        with open(path, encoding="utf-8") as f:
            text = "\n".join(l for l in f.read().split("\n") if not l.startswith("#"))
        bad = problems(text)
        for p in bad:
            print(f"check_commits: {path}: {p}", file=sys.stderr)
        return 1 if bad else 0
    if len(argv) == 2 and argv[0] == "--since":
        revs = git("rev-list", "--no-merges", f"{argv[1]}..HEAD").split()
    elif not argv:
        first = git("log", "--format=%H", "-S## Commit messages", "--", "CONTRIBUTING.md").split()
        if not first:
            print("check_commits: CONTRIBUTING.md's convention is not in this clone's history (shallow?): "
                  "nothing checked", file=sys.stderr)
            return 0
        start = first[-1]
        revs = git("rev-list", "--no-merges", f"{start}^..HEAD").split()
    else:
        print(__doc__, file=sys.stderr)
        return 2
    bad = 0
    for rev in revs:
        found = problems(git("log", "-1", "--format=%B", rev))
        if found:
            bad += 1
            subject = git("log", "-1", "--format=%s", rev).strip()
            print(f"check_commits: {rev[:10]} {subject[:60]!r}: {'; '.join(found)}", file=sys.stderr)
    if bad:
        print(f"check_commits: {bad} of {len(revs)} commit(s) break CONTRIBUTING.md's convention", file=sys.stderr)
        return 1
    print(f"check_commits: {len(revs)} commit(s) since the convention, each with a short subject and a body")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
