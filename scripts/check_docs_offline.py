#!/usr/bin/env python3
"""Checks that the Doxygen HTML fetches nothing from the network.

  check_docs_offline.py HTML_DIR     exit 0 when clean, 1 with one "file:line: what" per finding
  check_docs_offline.py --self-test  verdicts on small made-up trees (ctest)

An external URL is http://, https:// or protocol-relative //host. In .html, .svg, .css and .js
files outside HTML_DIR/mathjax/ it is a finding in: a src=, data=, poster= or srcset= attribute;
the href of <link> (stylesheets, preloads, icons) or of SVG <image>/<use>; CSS url() or @import
(.css files, <style>, style=); a JS string literal (.js files, inline <script>). JS comments are
skipped by a regex scan, not a lexer: a quote or // in a regex literal can hide the rest of its
line (Doxygen's JS is plain). <a href="https://..."> navigation links are not fetches: allowed,
counted. Page text is scanned too, but Doxygen writes quotes and < in it as &quot; and &lt;, so
code listings do not match. Not looked at: DOCTYPE and xmlns names, JS comments, .map files.

MathJax (Doxygen 1.9.4, MATHJAX_VERSION = MathJax_2). Each page with a formula (\\( or \\[) must
load MathJax.js by a relative <script src> inside HTML_DIR that exists, with jax/element/mml/jax.js
beside it and each name in the extensions: and jax: lists of the page's MathJax.Hub.Config:
extensions/NAME.js, or jax/NAME/config.js and jax.js. At least one page must have formulas.
MathJax 2 loads its parts relative to MathJax.js unless a config sets another root (a URL there is
caught above). So HTML_DIR/mathjax/ is grepped, not lexed: any http(s):// or quoted //host in it is
a finding, except ALLOWED (licence headers, XML namespaces, the menu's www.mathjax.org link).
Not checked: that each file MathJax may load later (an autoloaded TeX extension, font data) was
copied. A missing one fails locally and is never fetched. The fixed list in
docs/copy_mathjax.cmake is relied on for that.
"""
import os
import re
import sys
import tempfile

URL = r'((?i:https?:)?//[^"\'\s>)]+)'
ATTR = re.compile(r'(?<![\w-])(src|data|poster|srcset)\s*=\s*("[^"]*"|\'[^\']*\'|[^\s>]+)', re.I)
LINK = re.compile(r'<(link|image|use)\b[^>]*?\bhref\s*=\s*["\']?' + URL, re.I)
NAV = re.compile(r'<a\b[^>]*?\bhref\s*=\s*["\']?' + URL, re.I)
CSS = re.compile(r'(url\(|@import)\s*(?:url\(\s*)?["\']?' + URL, re.I)
STYLE = re.compile(r'<style\b[^>]*>.*?</style>|\bstyle\s*=\s*("[^"]*"|\'[^\']*\')', re.I | re.S)
SCRIPT = re.compile(r'<script\b[^>]*>(.*?)</script>', re.I | re.S)
JS_TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|`(?:\\.|[^`\\])*`', re.S)
MATHJAX = re.compile(r'<script\b[^>]*\bsrc\s*=\s*["\']([^"\']*mathjax[^"\']*)', re.I)
VENDORED = re.compile(r'https?://[^\s"\'<>()\\]+|(?<=["\'])//[A-Za-z0-9-]+\.[A-Za-z0-9.-]+')
ALLOWED = {"http://www.apache.org/licenses/LICENSE-2.0", "http://www.mathjax.org/", "http://www.w3.org/2000/svg",
           "http://www.w3.org/1999/xlink", "http://www.w3.org/1998/Math/MathML"}


def css_urls(text, start, end):
    return [(m.start(), "CSS %s fetches %s" % (m.group(1).strip("("), m.group(2)))
            for m in CSS.finditer(text, start, end)]


def js_urls(text, start, end):
    return [(t.start(), "JS string holds an external URL: %s" % t.group(0)) for t in JS_TOKEN.finditer(text, start, end)
            if t.group(0)[0] in "\"'`" and re.search(r"https?://|^.//[A-Za-z0-9-]+\.", t.group(0))]


def check(root):
    """Returns (findings, counts) for the tree at root."""
    root, findings, counts = os.path.abspath(root), [], {"files": 0, "links": 0, "formula pages": 0}
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(f for f in files if f.endswith((".html", ".svg", ".css", ".js"))):
            rel = os.path.relpath(os.path.join(d, name), root)
            with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
                text = f.read()
            counts["files"] += 1
            if rel.startswith("mathjax" + os.sep):
                hits = [(m.start(), "URL in the vendored MathJax: %s" % m.group(0)) for m in VENDORED.finditer(text)
                        if m.group(0) not in ALLOWED]
            elif name.endswith(".js"):
                hits = js_urls(text, 0, len(text))
            elif name.endswith(".css"):
                hits = css_urls(text, 0, len(text))
            else:
                hits = [(m.start(), "%s= fetches %s" % (m.group(1), u.group(1))) for m in ATTR.finditer(text)
                        for u in [re.search(r'(?:^|,)\s*' + URL, m.group(2).strip("\"'"))] if u]
                hits += [(m.start(), "<%s href> fetches %s" % m.groups()) for m in LINK.finditer(text)]
                for m in STYLE.finditer(text):
                    hits += css_urls(text, *m.span())
                for m in SCRIPT.finditer(text):
                    hits += js_urls(text, *m.span(1))
                counts["links"] += len(NAV.findall(text))
                counts["formula pages"] += name.endswith(".html") and check_mathjax(root, rel, text, hits)
            findings += ["%s:%d: %s" % (rel, text.count("\n", 0, pos) + 1, what) for pos, what in sorted(hits)]
    if not counts["formula pages"]:
        findings.append("%s:0: no page with formulas loads a local MathJax" % root)
    return findings, counts


def check_mathjax(root, rel, text, hits):
    """True when the page has formulas and loads a local MathJax with the parts its config names."""
    formula, srcs = re.search(r"\\[(\[]", SCRIPT.sub("", text)), list(MATHJAX.finditer(text))
    if not (formula or srcs):
        return False
    if not srcs:
        hits.append((0, "has formulas but loads no MathJax.js"))
    config = "".join(re.findall(r'<script type="text/x-mathjax-config">(.*?)</script>', text, re.S))
    needed = ["jax/element/mml/jax.js"]
    lists = "".join(re.findall(r"\b(?:extensions|jax)\s*:\s*\[([^\]]*)\]", config))
    for n in re.findall(r'"([^"]+)"', lists):  # extensions: ["tex2jax.js"], jax: ["input/TeX","output/SVG"]
        needed += ["extensions/" + n] if n.endswith(".js") else ["jax/%s/config.js" % n, "jax/%s/jax.js" % n]
    for m in srcs:
        src, mj = m.group(1), os.path.normpath(os.path.join(root, os.path.dirname(rel), m.group(1)))
        if not mj.startswith(root + os.sep) or os.path.basename(mj) != "MathJax.js" or not os.path.isfile(mj):
            hits.append((m.start(), "MathJax is not loaded from a local MathJax.js: %s" % src))
            return False
        missing = [n for n in needed if not os.path.isfile(os.path.join(os.path.dirname(mj), n))]
        hits += [(m.start(), "MathJax file %s is missing" % n) for n in missing]
        if missing:
            return False
    return bool(srcs and formula)


def self_test():
    """Each case adds files to a clean tree (one page with a formula, local MathJax) and must give
    exactly the findings listed (one per substring)."""
    mj = {"mathjax/" + p: "" for p in ["jax/element/mml/jax.js", "jax/input/TeX/config.js", "jax/input/TeX/jax.js",
                                        "jax/output/SVG/config.js", "jax/output/SVG/jax.js", "extensions/tex2jax.js"]}
    mj["mathjax/MathJax.js"] = "/* http://www.apache.org/licenses/LICENSE-2.0 */ n='http://www.w3.org/1999/xlink';"
    mj["mathjax/extensions/MathMenu.js"] = 'x=["a",{href:"http://www.mathjax.org/"},["www.mathjax.org"]];'
    page = ('<html><head>\n<script type="text/x-mathjax-config">\nMathJax.Hub.Config({\n'
            '  extensions: ["tex2jax.js"],\n  jax: ["input/TeX","output/SVG"],\n});\n</script>\n'
            '<script type="text/javascript" async="async" src="%s"></script>\n</head><body>\n'
            '<a href="https://www.doxygen.org/index.html">doxygen</a>\n<p>\\( x^2 \\)</p>\n</body></html>')
    mj3 = ('<html><head>\n<script src="https://polyfill.io/v3/polyfill.min.js?features=es6"></script>\n'
           '<script type="text/javascript">\nwindow.MathJax = {\n  options: {}\n};\n</script>\n'
           '<script type="text/javascript" id="MathJax-script" async="async" '
           'src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml.js"></script>\n</head><body>\n'
           '<a href="https://www.doxygen.org/">d</a><p>\\( x^2 \\)</p>\n</body></html>')  # Doxygen 1.9.4, MathJax_3
    not_local = "index.html:8: MathJax is not loaded from a local MathJax.js: "
    cases = [  # (files added to or removed (None) from the clean tree, the findings expected)
        ({"search/all_0.html": page % "../mathjax/MathJax.js", "doxygen.css": "/* https://unicode.org/e */ .a {}",
          "jquery.js": "/* 'http://jqueryui.com' */ var a = '//', b = 2 / 3; // 'https://github.com/flesler'\n"}, []),
        ({"index.html": mj3}, ["index.html:2: src= fetches https://polyfill.io/v3/", "index.html:8: src= fetches "
                               "https://cdn.jsdelivr.net", not_local + "https://cdn", "no page with formulas"]),
        ({"index.html": page % "https://cdn.jsdelivr.net/npm/mathjax@2/MathJax.js"},
         ["index.html:8: src= fetches https://cdn", not_local + "https://cdn", "no page with formulas"]),
        ({"a.html": '<link rel="stylesheet" href="https://f.io/a.css">'}, ["a.html:1: <link href> fetches https://f"]),
        ({"a.html": '<link rel="icon" href="//f.io/i.png">'}, ["a.html:1: <link href> fetches //f.io/i.png"]),
        ({"a.html": '<img src="https://f.io/b.png">'}, ["a.html:1: src= fetches https://f.io/b.png"]),
        ({"a.html": '<img srcset="b.png 1x, //f.io/c.png 2x">'}, ["a.html:1: srcset= fetches //f.io/c.png"]),
        ({"a.html": '<video poster="https://f.io/d.jpg">'}, ["a.html:1: poster= fetches https://f.io/d.jpg"]),
        ({"a.html": '<object data="https://f.io/e.svg">'}, ["a.html:1: data= fetches https://f.io/e.svg"]),
        ({"a.html": '<div style="background: url(//f.io/f.png)">'}, ["a.html:1: CSS url fetches //f.io/f.png"]),
        ({"a.html": '<style>\n@import "https://f.io/g.css";</style>'}, ["a.html:2: CSS @import fetches https://f"]),
        ({"a.html": '<script>\nvar s = "https://f.io/h.js";</script>'}, ['a.html:2: JS string holds an external']),
        ({"a.svg": '<svg xmlns="http://www.w3.org/2000/svg"><image href="https://f.io/i.png"/>'}, ["a.svg:1: <image"]),
        ({"t.css": "/* x */\n.t { background: url('https://f.io/j.png') }"}, ["t.css:2: CSS url fetches https://f"]),
        ({"t.css": "@import url(//f.io/k.css);"}, ["t.css:1: CSS @import fetches //f.io/k.css"]),
        ({"m.js": "var u = 'https://f.io/l.js';"}, ["m.js:1: JS string holds an external URL: 'https://f.io/"]),
        ({"m.js": "// comment\nload(\"//f.io/m.js\");"}, ['m.js:2: JS string holds an external URL: "//f.io/m']),
        ({"mathjax/jax/output/SVG/config.js": 'webfontURL:"https://cdn.io/f"'}, ["URL in the vendored MathJax"]),
        ({"mathjax/MathJax.js": None}, [not_local + "mathjax/MathJax.js", "no page with formulas"]),
        ({"index.html": page % "../mj/MathJax.js", "../mj/MathJax.js": ""}, [not_local + "../mj/", "no page with"]),
        ({"mathjax/extensions/tex2jax.js": None, "mathjax/jax/element/mml/jax.js": None},
         ["index.html:8: MathJax file jax/element/mml/jax.js is missing",
          "index.html:8: MathJax file extensions/tex2jax.js is missing", "no page with formulas"]),
        ({"a.html": "<html><body>\n\\[ y \\]</body></html>"}, ["a.html:1: has formulas but loads no MathJax.js"]),
    ]
    failed = 0
    for extra, expected in cases:
        files = {**mj, "index.html": page % "mathjax/MathJax.js", **extra}
        with tempfile.TemporaryDirectory(prefix="engram_docs_offline_") as d:
            for rel, text in ((r, t) for r, t in files.items() if t is not None):
                os.makedirs(os.path.dirname(os.path.join(d, "html", rel)), exist_ok=True)
                with open(os.path.join(d, "html", rel), "w", encoding="utf-8") as f:
                    f.write(text)
            left, counts = check(os.path.join(d, "html"))
        missing = []
        for e in expected:  # each expected substring takes one finding
            hits = [f for f in left if e in f]
            if hits:
                left.remove(hits[0])
            else:
                missing.append(e)
        if missing or left or counts["links"] != 1 + ("search/all_0.html" in extra):
            failed += 1
            print("self-test FAILED: %s\n  missing: %s\n  unexpected: %s\n  %s" % (list(extra), missing, left, counts))
    print("self-test: %d of %d cases as expected" % (len(cases) - failed, len(cases)))
    return 1 if failed else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        sys.exit("usage: check_docs_offline.py HTML_DIR | --self-test")
    findings, counts = check(argv[1])
    print("".join(f + "\n" for f in findings), end="")
    print("docs offline: %d files, %d finding(s); %d external <a href> link(s) (allowed); %d page(s) with formulas "
          "load a local MathJax" % (counts["files"], len(findings), counts["links"], counts["formula pages"]))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
