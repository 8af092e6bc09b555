#!/usr/bin/env python3
"""Makes every link of the Doxygen HTML resolve, and checks that it does.

The pages are written for GitHub: a link to a section is `../spec/hash.md#hash2-window-and-blocking`,
GitHub's slug of the heading. Doxygen 1.9.4 turns a link to a whole page into that page, but leaves one
with an anchor raw (the .md file is not in the HTML), and it writes its own heading anchors
(`autotoc_md124`). It also escapes a code span in a heading, so the heading shows `<tt>name</tt>` as text.

  html_links.py --fix HTML_DIR [--root ROOT]   after Doxygen (the `docs` target): a link to a page of
      ROOT's Markdown becomes a link to its HTML page, at the anchor Doxygen gave the heading whose GitHub
      slug the link names; a link to a file the HTML does not hold (a source file, a page Doxygen does
      not render) becomes its text, with the path as a tooltip; a code span in a heading is a code span.
  html_links.py --check HTML_DIR               every relative href/src names a file in HTML_DIR and, with
      #anchor, an id or name in that file; no escaped <tt> in any page. Exit 1 naming page:line, link
      and reason for each finding.
  html_links.py --self-test                    both on a made-up page (ctest).
"""
import glob
import html
import os
import re
import sys
import tempfile
from html.parser import HTMLParser

HEADING_MD = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LABEL = re.compile(r"\s*\{#([A-Za-z0-9_.-]+)\}\s*$")
HREF = re.compile(r'<a (?:class="[^"]*" )?href="([^"#:]+)(#[^"]*)?"([^>]*)>(.*?)</a>', re.S)
ANCHORED_HEADING = re.compile(r'<h([1-6])[^>]*>\s*<a class="anchor" id="([^"]+)"></a>(.*?)</h\1>', re.S)
LEAK = re.compile(r"&lt;(/?)(tt|code)&gt;")


def slug(text):
    """GitHub's anchor for a heading: lower-case, punctuation dropped, spaces -> '-'."""
    text = LABEL.sub("", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def md_text(heading):
    """The text GitHub slugs: code spans and links reduced to their text."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return heading.replace("`", "")


def html_text(fragment):
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def page_of(md_path, root):
    """The HTML page Doxygen writes for a Markdown file, by its rules: the label of the first heading,
    index.html for the main page, else md_ + the path with / as _."""
    with open(md_path, encoding="utf-8") as f:
        for line in f:
            m = HEADING_MD.match(line)
            if m:
                label = LABEL.search(m.group(2))
                if label:
                    return "index.html" if label.group(1) == "mainpage" else label.group(1) + ".html"
                break
    rel = os.path.relpath(md_path, root)
    return "md_" + os.path.splitext(rel)[0].replace("/", "_") + ".html"


def fix_leaks(text):
    """A code span in a heading: Doxygen escapes the <tt> it wrote itself."""
    def heading(m):
        return LEAK.sub(r"<\1\2>", m.group(0))
    text = re.sub(r"<h[1-6][^>]*>.*?</h[1-6]>", heading, text, flags=re.S)
    # the page's table of contents repeats the heading text
    return re.sub(r'<li class="level\d">.*?</li>', heading, text, flags=re.S)


def anchors(page_text):
    """GitHub slug of each heading -> the id Doxygen gave it."""
    out = {}
    for m in ANCHORED_HEADING.finditer(page_text):
        out.setdefault(slug(html_text(m.group(3))), m.group(2))
    return out


def fix(html_dir, root):
    # Which Markdown files became which pages: the Doxyfile's inputs, found where their pages are.
    pages = {}
    for md in glob.glob(os.path.join(root, "**", "*.md"), recursive=True):
        if "/build/" in md or "/.venv/" in md or "/node_modules/" in md:
            continue
        page = page_of(md, root)
        if os.path.exists(os.path.join(html_dir, page)):
            pages[os.path.realpath(md)] = page
    cache = {}

    def anchors_of(page):
        if page not in cache:
            with open(os.path.join(html_dir, page), encoding="utf-8") as f:
                cache[page] = anchors(fix_leaks(f.read()))
        return cache[page]

    fixed = unlinked = 0
    for path in sorted(glob.glob(os.path.join(html_dir, "*.html"))):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        this = os.path.basename(path)
        source = next((md for md, page in pages.items() if page == this), None)
        new = fix_leaks(text)

        def relink(m):
            nonlocal fixed, unlinked
            target, anchor, rest, label = m.group(1), (m.group(2) or "")[1:], m.group(3), m.group(4)
            if target.startswith("//") or os.path.exists(os.path.join(html_dir, html.unescape(target))):
                return m.group(0)  # Doxygen's own link, or a file the HTML holds
            md = os.path.realpath(os.path.join(os.path.dirname(source), html.unescape(target))) if source else None
            page = pages.get(md) if md and target.endswith(".md") else None
            if page is None:
                unlinked += 1
                return '<span class="el" title="%s">%s</span>' % (html.escape(target, quote=True), label)
            fixed += 1
            if not anchor:
                return '<a class="el" href="%s"%s>%s</a>' % (page, rest, label)
            ids = anchors_of(page)
            if anchor in ids:
                return '<a class="el" href="%s#%s"%s>%s</a>' % (page, ids[anchor], rest, label)
            return '<a class="el" href="%s#%s"%s>%s</a>' % (page, anchor, rest, label)  # a {#label}: --check says

        new = HREF.sub(relink, new)
        if new != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
    print("html links: %d Markdown links pointed at their pages, %d to files outside the HTML made text"
          % (fixed, unlinked))


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k in ("id", "name"):
            if a.get(k):
                self.ids.add(a[k])
        for k in ("href", "src"):
            if a.get(k):
                self.links.append((a[k], self.getpos()[0]))


def check(html_dir):
    parsed = {}
    for path in glob.glob(os.path.join(html_dir, "*.html")):
        p = Links()
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        p.feed(text)
        parsed[path] = (p, text)
    findings = []
    for path, (p, text) in sorted(parsed.items()):
        name = os.path.basename(path)
        for i, line in enumerate(text.split("\n"), 1):
            if LEAK.search(line):
                findings.append("%s:%d: an escaped <tt>/<code> shows as text" % (name, i))
        for link, line in p.links:
            if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", link) or link.startswith("//"):
                continue  # a URL or javascript:, not a file of the HTML (check_docs_offline.py looks at those)
            target, _, anchor = link.partition("#")
            file = os.path.normpath(os.path.join(html_dir, html.unescape(target))) if target else path
            if not os.path.exists(file):
                findings.append("%s:%d: %s: no such file in the HTML" % (name, line, link))
            elif anchor and file.endswith(".html"):
                if file not in parsed:
                    continue  # a page outside HTML_DIR's top level (mathjax/): not Doxygen's
                if anchor not in parsed[file][0].ids:
                    findings.append("%s:%d: %s: no id %r in %s" % (name, line, link, anchor, os.path.basename(file)))
    for f in findings:
        print(f)
    print("html links: %d page(s), %d finding(s)" % (len(parsed), len(findings)))
    return 1 if findings else 0


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        root, out = os.path.join(tmp, "repo"), os.path.join(tmp, "html")
        os.makedirs(os.path.join(root, "spec"))
        os.makedirs(out)
        with open(os.path.join(root, "spec", "a.md"), "w") as f:
            f.write("# Spec A\n\n### §A.1 The `first` rule\n\nText.\n")
        with open(os.path.join(root, "guide.md"), "w") as f:
            f.write("# Guide {#page_guide}\n\nSee [the rule](spec/a.md#a1-the-first-rule), [A](spec/a.md), "
                    "[code](src/x.cc) and [gone](spec/a.md#nowhere).\n")
        with open(os.path.join(out, "md_spec_a.html"), "w") as f:
            f.write('<div class="title">Spec A</div>\n'
                    '<h2><a class="anchor" id="autotoc_md1"></a>\n§A.1 The &lt;tt&gt;first&lt;/tt&gt; rule</h2>\n')
        with open(os.path.join(out, "page_guide.html"), "w") as f:
            f.write('<p>See <a href="spec/a.md#a1-the-first-rule">the rule</a>, <a class="el" href="md_spec_a.html">'
                    'A</a>, <a href="src/x.cc">code</a> and <a href="spec/a.md#nowhere">gone</a>.</p>\n')
        assert check(out) == 1, "the raw pages must fail"
        fix(out, root)
        with open(os.path.join(out, "page_guide.html")) as f:
            guide = f.read()
        assert 'href="md_spec_a.html#autotoc_md1"' in guide, guide
        assert '<span class="el" title="src/x.cc">code</span>' in guide, guide
        with open(os.path.join(out, "md_spec_a.html")) as f:
            assert "<tt>first</tt>" in f.read()
        # the unknown anchor is kept and named by --check: the one finding left
        assert check(out) == 1
        with open(os.path.join(out, "page_guide.html"), "w") as f:
            f.write(guide.replace("#nowhere", ""))
        assert check(out) == 0
    print("html_links.py self-test: OK")
    return 0


def main(argv):
    if argv[:1] == ["--self-test"]:
        return self_test()
    if len(argv) >= 2 and argv[0] == "--fix":
        root = argv[argv.index("--root") + 1] if "--root" in argv else os.path.join(os.path.dirname(__file__), "..")
        fix(argv[1], os.path.abspath(root))
        return 0
    if len(argv) == 2 and argv[0] == "--check":
        return check(argv[1])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
