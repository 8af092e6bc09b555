#!/usr/bin/env python3
"""Checks the relative links of the Markdown pages: docs/*.md and spec/*.md (and README.md).

For every inline link or image `[text](target)` whose target is not a URL (scheme://, mailto:)
and not a pure in-page anchor, the file the target names (relative to the page, anchor dropped)
MUST exist. A target `file.md#anchor` also MUST name a heading of that file: GitHub's slug of the
heading text, or a Doxygen `{#id}` label. Links inside code spans and fenced code blocks are
ignored. Exit 1 and name page:line, link and reason for every broken link.

Usage: scripts/check_links.py [ROOT]   (default: the repository root)
"""
import glob
import os
import re
import sys

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
LABEL = re.compile(r"\{#([A-Za-z0-9_.-]+)\}\s*$")


def strip_code(lines, spans=True):
    """Yields (line number, text) outside fenced blocks, inline code spans blanked when `spans`."""
    fenced = False
    for i, line in enumerate(lines, 1):
        if re.match(r"^\s*(```|~~~)", line):
            fenced = not fenced
            continue
        if fenced:
            continue
        yield i, re.sub(r"`[^`]*`", "", line) if spans else line


def slug(text):
    """GitHub's anchor for a heading: lower-case, punctuation dropped, spaces -> '-'."""
    text = LABEL.sub("", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    out = set()
    with open(path, encoding="utf-8") as f:
        for _, line in strip_code(f.read().split("\n"), spans=False):
            m = HEADING.match(line)
            if m:
                out.add(slug(m.group(1)))
                lab = LABEL.search(m.group(1))
                if lab:
                    out.add(lab.group(1))
    return out


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    pages = sorted(glob.glob(os.path.join(root, "docs", "*.md")) + glob.glob(os.path.join(root, "spec", "*.md")))
    if os.path.exists(os.path.join(root, "README.md")):
        pages.append(os.path.join(root, "README.md"))
    bad, checked = [], 0
    for page in pages:
        with open(page, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for n, line in strip_code(lines):
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
                    continue
                checked += 1
                path, _, anchor = target.partition("#")
                full = os.path.normpath(os.path.join(os.path.dirname(page), path))
                where = "%s:%d" % (os.path.relpath(page, root), n)
                if not os.path.exists(full):
                    bad.append("%s: %s: no such file %s" % (where, target, os.path.relpath(full, root)))
                elif anchor and full.endswith(".md") and anchor not in anchors(full):
                    bad.append("%s: %s: no heading with anchor #%s in %s" % (where, target, anchor,
                                                                              os.path.relpath(full, root)))
    for b in bad:
        print("broken link: " + b, file=sys.stderr)
    print("links: %d relative links in %d pages checked, %d broken" % (checked, len(pages), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
