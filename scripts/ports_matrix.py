#!/usr/bin/env python3
"""Runs every port adapter of conformance/ports/*/port.json whose checkout is present under CHECKOUTS_DIR
through `engram conform` (fixed vectors, then random cases) and writes docs/ports.md: one row per port and
suite, the commit measured, and every failure with its explanation (the port's file:line) from port.json.
A failure port.json does not explain is printed as UNEXPLAINED and makes the script exit 1.

Called by scripts/ports.sh (which says how to run it); see docs/ports.md for what is measured.
"""
import argparse
import concurrent.futures
import datetime
import glob
import hashlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def commit_of(checkout):
    """The commit measured: `git rev-parse HEAD` of a git checkout, else the checkout's COMMIT file."""
    if os.path.exists(os.path.join(checkout, ".git")):
        r = subprocess.run(["git", "-C", checkout, "rev-parse", "HEAD"], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.strip()
    path = os.path.join(checkout, "COMMIT")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return " ".join(f.read().split())
    return "unknown (no .git, no COMMIT file)"


def run_conform(engram, vectors, impl, suite, report, extra, timeout):
    cmd = [engram, "conform", "--vectors", vectors, "--suite", suite, "--report-json", report,
           "--timeout", str(timeout)] + extra + impl
    t0 = time.time()
    for attempt in range(3):  # a handshake can miss its 30 s on a loaded machine (torch + sympy imports): retry
        r = subprocess.run(cmd, capture_output=True, text=True)
        if not (r.returncode == 2 and "handshake failed: no answer to hello" in r.stderr):
            break
        print(f"ports: no answer to hello (attempt {attempt + 1}), retrying", file=sys.stderr)
        time.sleep(5)
    if r.returncode not in (0, 1) or not os.path.exists(report):
        raise RuntimeError(f"{' '.join(map(shlex.quote, cmd))}: exit {r.returncode}\n{r.stderr[-2000:]}")
    with open(report, encoding="utf-8") as f:
        return json.load(f), time.time() - t0


def explain(port, key, detail):
    text = port.get("failures", {}).get(key)
    if text is None:
        for pattern, why in port.get("failurePatterns", {}).items():
            if pattern in detail:
                return why
    return text


def build_impl(port, checkout, args, tmp):
    """The `engram conform` arguments that drive the port: its JSON-lines adapter, or its C-ABI plug-in built
    against the checkout's own source."""
    if port["kind"] == "python":
        return ["--exec", f"{shlex.quote(args.python)} {shlex.quote(os.path.join(ROOT, port['adapter']))} "
                          f"--checkout {shlex.quote(checkout)}"]
    lib = os.path.join(tmp, f"{port['id']}.so")
    r = subprocess.run([os.path.join(ROOT, port["build"]), checkout, lib], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{port['build']} {checkout}: exit {r.returncode}\n{r.stderr[-2000:]}")
    return ["--lib", lib]


def measure_suite(port, impl, suite, args, tmp):
    """One row: the suite's fixed vectors, then its random cases. Returns (row, problems)."""
    problems = []
    report = os.path.join(tmp, f"{port['id']}-{suite}-fixed.json")
    fixed, secs_fixed = run_conform(args.engram, args.vectors, impl, suite, report, [], args.timeout)
    counts = fixed["suites"][suite]
    failures = []
    for r in fixed["results"]:
        if r["suite"] == suite and r["status"] == "fail":
            key = f"{suite}:{r['tcId']}"
            why = explain(port, key, r.get("detail", ""))
            if why is None:
                problems.append(f"{port['id']} {key}: UNEXPLAINED {r['reason']}: {r.get('detail', '')[:300]}")
            failures.append((r["tcId"], r["reason"], why or "UNEXPLAINED", r.get("detail", "")[:500]))
    row = {"suite": suite, "passed": counts["passed"], "failed": counts["failed"], "skipped": counts["skipped"],
           "failures": failures, "seconds": secs_fixed,
           "random": {"run": 0, "failed": 0, "shrunk": [], "seconds": 0.0}}
    if args.random <= 0:
        return row, problems
    report = os.path.join(tmp, f"{port['id']}-{suite}-random.json")
    try:
        rnd, secs = run_conform(args.engram, args.vectors, impl, suite, report,
                                ["--random-only", "--random", str(args.random), "--seed", str(args.seed),
                                 "--max-random-failures", str(args.max_random_failures),
                                 "--max-shrunk", str(args.max_shrunk),
                                 "--random-seconds", str(args.random_seconds),
                                 "--shrink-calls", str(args.shrink_calls)], args.timeout)
    except RuntimeError as e:  # the run could not start or stopped: say so in the row, go on
        if "the suite has no random generator" in str(e):  # fp8_decode: its 768 fixed vectors are all inputs
            row["random"] = {"run": "no generator", "failed": "", "skipped": "", "shrunk": [], "seconds": 0.0}
            return row, problems
        problems.append(f"{port['id']} {suite} random: the run did not complete: {str(e)[-300:]}")
        row["random"] = {"run": "error", "failed": "error", "shrunk": [], "seconds": 0.0, "error": str(e)[-300:]}
        return row, problems
    s = (rnd.get("random") or {}).get("suites", {}).get(suite, {})
    c = rnd.get("suites", {}).get("random:" + suite, {})
    # run: the cases the port answered (passed or failed); skipped: answered `unsupported`; the cases of
    # a profile the port does not claim are not asked at all
    row["random"] = {"run": c.get("passed", 0) + c.get("failed", 0), "failed": c.get("failed", 0),
                     "skipped": c.get("skipped", 0), "drawn": s.get("drawn", 0),
                     "shrunk": s.get("shrunk", []), "seconds": secs}
    for case in row["random"]["shrunk"]:
        why = port.get("randomFailures", {}).get(suite, {}).get(case["reason"])
        if why is None:
            problems.append(f"{port['id']} {suite} random case {case['case']}: UNEXPLAINED {case['reason']} "
                            f"(shrunk to {case['after']})")
        case["why"] = why or "UNEXPLAINED"
    # every failing case, the ones not shrunk (--max-shrunk) too, has a reason port.json explains
    reasons = {}
    for r in rnd.get("results", []):
        if r.get("suite") == "random:" + suite and r.get("status") == "fail":
            reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    for reason, n in sorted(reasons.items()):
        if port.get("randomFailures", {}).get(suite, {}).get(reason) is None:
            problems.append(f"{port['id']} {suite}: {n} random case(s) UNEXPLAINED {reason}")
    row["random"]["reasons"] = reasons
    return row, problems


SETTINGS = ("random", "randomSeconds", "seed", "maxRandomFailures", "maxShrunk", "shrinkCalls")


def settings_of(args):
    return normalized({"random": args.random, "randomSeconds": args.random_seconds, "seed": args.seed,
                       "maxRandomFailures": args.max_random_failures, "maxShrunk": args.max_shrunk,
                       "shrinkCalls": args.shrink_calls})


def normalized(st):
    """One spelling of a measurement's settings (600 and 600.0 s are the same budget), for comparing them."""
    return dict(st, randomSeconds=float(st["randomSeconds"])) if st else st


def manifest_digest(vectors):
    """The sha256 of vectors/MANIFEST.sha256: the vector set a measurement ran against (§VEC.13)."""
    with open(os.path.join(vectors, "MANIFEST.sha256"), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load_results(path):
    """docs/ports.json's entries by port id; a file of another shape is refused, naming what is wrong."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or doc.get("format") != 2 or not isinstance(doc.get("ports"), dict):
        raise ValueError("not a format-2 measurements file: {\"format\": 2, \"ports\": {id: entry}}")
    for pid, e in doc["ports"].items():
        missing = [k for k in ("date", "settings", "commit", "whyNot", "rows") if k not in e]
        if missing or not isinstance(e["rows"], list):
            raise ValueError(f"ports.{pid}: missing {', '.join(missing) or 'a rows list'}")
        e["settings"] = normalized(e["settings"])
    return doc["ports"]


def describe(st):
    """The random-case settings of a measurement, as the page states them."""
    text = (f"`--random {st['random']} --random-seconds {st['randomSeconds']:g} --seed {st['seed']}` per suite "
            f"(generator random-v2: {st['random']} cases or {st['randomSeconds']:g} s, whichever comes first), ")
    if st["maxRandomFailures"] == 0:
        return text + (f"every case run (`--max-random-failures 0`), the first {st['maxShrunk']} failing cases of "
                       f"each suite shrunk (`--max-shrunk {st['maxShrunk']}`) and the others counted as they failed")
    shrunk = st.get("maxShrunk", -1)
    return text + (f"at most {st['maxRandomFailures']} failing cases kept per suite, " +
                   (f"the first {shrunk} of them shrunk" if 0 <= shrunk < st["maxRandomFailures"] else "each shrunk"))


def reexplain(port, entry):
    """The explanations as port.json gives them now (a saved measurement keeps only what the port did)."""
    problems = []
    for r in entry["rows"]:
        r["failures"] = [(tc, reason, explain(port, f"{r['suite']}:{tc}", detail) or "UNEXPLAINED", detail)
                         for tc, reason, _, detail in r["failures"]]
        problems += [f"{port['id']} {r['suite']}:{f[0]}: UNEXPLAINED" for f in r["failures"] if f[2] == "UNEXPLAINED"]
        for c in r["random"]["shrunk"]:
            c["why"] = port.get("randomFailures", {}).get(r["suite"], {}).get(c["reason"]) or "UNEXPLAINED"
            if c["why"] == "UNEXPLAINED":
                problems.append(f"{port['id']} {r['suite']} random case {c['case']}: UNEXPLAINED {c['reason']}")
        for reason, n in sorted(r["random"].get("reasons", {}).items()):
            if port.get("randomFailures", {}).get(r["suite"], {}).get(reason) is None:
                problems.append(f"{port['id']} {r['suite']}: {n} random case(s) UNEXPLAINED {reason}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("checkouts", nargs="?", help="one directory per port (not needed with --render)")
    ap.add_argument("--engram", default=os.path.join(ROOT, "build/release/conformance/engram"))
    ap.add_argument("--vectors", default=os.path.join(ROOT, "vectors"))
    ap.add_argument("--python", default=os.environ.get("ENGRAM_PORTS_PYTHON", sys.executable))
    ap.add_argument("--random", type=int, default=10000, help="random cases per suite (issue 29: 10,000)")
    ap.add_argument("--random-seconds", type=float, default=600,
                    help="per suite, stop drawing after this many seconds (issue 29: 10,000 cases or 10 minutes)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-random-failures", type=int, default=0,
                    help="stop a suite's random cases after this many failing ones (default 0: never, every case runs)")
    ap.add_argument("--max-shrunk", type=int, default=5,
                    help="shrink at most this many failing cases per suite; the others are counted as they failed")
    ap.add_argument("--shrink-calls", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="rows (port, suite) measured side by side (default: the number of CPUs)")
    ap.add_argument("--only", nargs="*", help="port ids to measure; the others keep their saved measurement")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs/ports.md"))
    ap.add_argument("--results", default=os.path.join(ROOT, "docs/ports.json"),
                    help="the raw measurements, one entry per port with its date and settings: read for the ports "
                         "not measured in this run (--only, --render), then written (default: docs/ports.json)")
    ap.add_argument("--render", action="store_true",
                    help="measure nothing: write the page from --results (explanations taken from port.json again)")
    ap.add_argument("--check", action="store_true",
                    help="with --render: exit 1 if the page differs from what --results and port.json give")
    args = ap.parse_args()
    if not args.render and not args.checkouts:
        ap.error("CHECKOUTS_DIR is needed to measure (or --render)")

    ports = []
    for path in sorted(glob.glob(os.path.join(ROOT, "conformance/ports/*/port.json"))):
        with open(path, encoding="utf-8") as f:
            port = json.load(f)
        port["id"] = os.path.basename(os.path.dirname(path))
        ports.append(port)

    saved = {}
    if os.path.exists(args.results):
        try:
            saved = load_results(args.results)
        except (ValueError, OSError) as e:  # json.JSONDecodeError is a ValueError
            print(f"ports: {args.results}: {e}", file=sys.stderr)
            return 2
    all_problems = [f"{pid}: a saved measurement in {args.results} with no conformance/ports/{pid}/port.json "
                    f"(a port removed or renamed: drop its entry)" for pid in saved if pid not in {p["id"] for p in ports}]
    if args.render:
        keep = set(saved)
        to_measure = []
    elif args.only:
        unknown = set(args.only) - {p["id"] for p in ports}
        if unknown:
            ap.error(f"--only: no port {', '.join(sorted(unknown))} (conformance/ports/*/port.json)")
        keep = set(saved) - set(args.only)
        to_measure = [p for p in ports if p["id"] in args.only]
    else:  # a full run: every port measured anew (or said not measured)
        keep = set()
        to_measure = ports

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    vectors = manifest_digest(args.vectors)
    entries = {}
    for port in ports:
        if port["id"] in keep:
            entry = saved[port["id"]]
            all_problems += reexplain(port, entry)
            entries[port["id"]] = entry
    with tempfile.TemporaryDirectory() as tmp:
        # Every (port, suite) row is an independent `engram conform` run (its own adapter process): --jobs of
        # them run side by side, and the rows are written in the order of port.json whatever order they end in.
        jobs = []  # (port id, suite future list)
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for port in to_measure:
                entry = {"date": date, "settings": settings_of(args), "vectors": vectors, "commit": None,
                         "whyNot": None, "rows": []}
                if port["kind"] == "none":  # a listed port without an adapter yet: say so, measure nothing
                    entry["whyNot"] = port["why"]
                    entries[port["id"]] = entry
                    continue
                checkout = os.path.abspath(os.path.join(args.checkouts, port["checkout"]))
                if not all(os.path.exists(os.path.join(checkout, f)) for f in port["files"]):
                    # no checkout: the saved measurement stays (a run never loses one it could not redo)
                    if port["id"] in saved and saved[port["id"]]["commit"]:
                        entries[port["id"]] = saved[port["id"]]
                        all_problems += reexplain(port, saved[port["id"]])
                        print(f"ports: {port['id']}: no checkout at {checkout}: its measurement of "
                              f"{saved[port['id']]['date']} is kept", file=sys.stderr)
                    else:
                        entry["whyNot"] = f"no checkout with {', '.join(port['files'])} under {checkout}"
                        entries[port["id"]] = entry
                        print(f"ports: {port['id']}: not measured (no checkout at {checkout})", file=sys.stderr)
                    continue
                entries[port["id"]] = entry
                print(f"ports: {port['id']}: measuring {checkout}", file=sys.stderr)
                impl = build_impl(port, checkout, args, tmp)
                futures = [pool.submit(measure_suite, port, impl, suite, args, tmp) for suite in port["suites"]]
                jobs.append((port["id"], futures))
                entry["commit"] = commit_of(checkout)
            for pid, futures in jobs:
                for future in futures:
                    row, problems = future.result()
                    entries[pid]["rows"].append(row)
                    all_problems += problems
    for port in ports:  # a port.json added since the saved measurement, never measured: say so
        if port["id"] not in entries:
            entries[port["id"]] = {"date": None, "settings": None, "commit": None, "rows": [],
                                   "whyNot": port["why"] if port["kind"] == "none" else "not measured yet"}
    measured = [(port, entries[port["id"]]) for port in ports]
    text = render(measured, args, vectors)
    for p in all_problems:
        print(p, file=sys.stderr)
    if args.check:
        with open(args.out, encoding="utf-8") as f:
            if f.read() != text:
                print(f"ports: {args.out} is not what {args.results} and port.json give; run "
                      f"scripts/ports_matrix.py --render", file=sys.stderr)
                return 1
        print(f"ports: {args.out} is current", file=sys.stderr)
        return 1 if all_problems else 0
    if not args.render:
        with open(args.results, "w", encoding="utf-8") as f:
            json.dump({"format": 2, "ports": {p["id"]: e for p, e in measured if e["date"]}}, f, indent=1,
                      ensure_ascii=False)
            f.write("\n")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"ports: wrote {args.out} ({sum(1 for _, e in measured if e['commit'])} port(s) measured, "
          f"{len(to_measure)} in this run)", file=sys.stderr)
    return 1 if all_problems else 0


def render(measured, args, vectors):
    with open(os.path.join(args.vectors, "v1/hash_v41.json"), encoding="utf-8") as f:
        spec = json.load(f)["specVersion"]
    done = [e for _, e in measured if e["commit"]]
    settings = {json.dumps(e["settings"], sort_keys=True) for e in done}
    dates = sorted({e["date"] for e in done}) or ["(nothing measured)"]
    sets = {e.get("vectors") for e in done}
    out = []
    out.append("# The public ports, measured")
    out.append("")
    out.append("<!-- generated by scripts/ports.sh (scripts/ports_matrix.py) from docs/ports.json (the raw "
               "measurements) and conformance/ports/*/port.json; do not edit by hand -->")
    out.append("")
    when = (f"Measured {dates[0]}" if len(dates) == 1 else
            f"Measured {dates[0]} to {dates[-1]} (each port's section gives its date)")
    common = (f"random cases: {describe(done[0]['settings'])}. " if len(settings) == 1 else
              "random cases: as each port's section says. ") if done else ""
    one = next(iter(sets)) if len(sets) == 1 else None
    against = (f"against the committed vectors (spec {spec}, `MANIFEST.sha256` {vectors[:12]}…); "
               if one == vectors else
               f"against an earlier vector set (`MANIFEST.sha256` {one[:12]}…; the committed set, spec {spec}, is "
               f"{vectors[:12]}…: tests added or flagged since have not run on these ports); " if one else
               f"against the vectors of the day each port's section names (by the sha256 of their "
               f"`MANIFEST.sha256`; the committed set, spec {spec}, is {vectors[:12]}…, and `vectors/CHANGELOG.md` "
               f"says what moved: a measurement of an earlier set has not run the tests added since); ")
    out.append(f"{when} with `scripts/ports.sh CHECKOUTS_DIR` " + against + common + "Each port runs through its "
               "adapter in `conformance/ports/<port>/` (its README says what it claims, what it answers "
               "`unsupported` and why, and what it stubs); nothing of the port is changed. "
               "`scripts/ports.sh CHECKOUTS_DIR --only PORT` measures one port anew and keeps the others' saved "
               "measurements (`docs/ports.json`).")
    out.append("")
    out.append("Commit: `git rev-parse HEAD` of a git checkout, else the checkout's `COMMIT` file. The checkouts of "
               "the committed matrix were not git trees: each holds the named files as a public code index stores "
               "them at the commit its `COMMIT` line gives, some only through the definitions the adapter runs "
               "(line numbers are the files' own).")
    if done and min(e["settings"]["random"] for e in done) < 10000:
        out.append("")
        out.append("**Fewer random cases than issue 29 asks (10,000 or 10 minutes per suite)** for the ports whose "
                   "section says so: `scripts/ports.sh CHECKOUTS_DIR` runs 10,000 by default.")
    out.append("")
    every = all(e["settings"]["maxRandomFailures"] == 0 for e in done)
    out.append("Columns: fixed vectors passed / failed / skipped (skipped: not claimed by the port's adapter for "
               "that profile or test type, or `unsupported`); random cases run (answered: passed or failed) / "
               "failed / skipped (answered `unsupported`); cases of a profile the port does not claim are not "
               "asked. " + ("A suite's random cases stop only at its time budget (`--random-seconds`), so `run` "
                            "plus `skipped` is below the count asked for only where the budget ran out."
                            if every else
                            "A suite's random cases may stop at its first failures (`--max-random-failures`), so "
                            "`run` can be below the count asked for."))
    out.append("")
    out.append("| port | commit | suite | fixed passed | failed | skipped | random run | random failed | random skipped |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    for port, e in measured:
        if e["whyNot"]:
            out.append(f"| {port['name']} | — | — | not measured: {e['whyNot']} | | | | | |")
            continue
        for r in e["rows"]:
            commit = e["commit"]
            short = commit if len(commit) <= 60 else commit[:57] + "..."
            out.append(f"| {port['name']} | {short} | {r['suite']} | {r['passed']} | {r['failed']} | "
                       f"{r['skipped']} | {r['random']['run']} | {r['random']['failed']} | "
                       f"{r['random'].get('skipped', '')} |")
    out.append("")
    for port, e in measured:
        out.append(f"## {port['name']}")
        out.append("")
        out.append(f"Repository `{port['repo']}`, files {', '.join('`' + f + '`' for f in port['files'])}; " +
                   (f"adapter `conformance/ports/{port['id']}/` ({'C-ABI plug-in' if port['kind'] == 'plugin' else 'JSON-lines'})."
                    if port["kind"] != "none" else "no adapter yet."))
        out.append("")
        if e["whyNot"]:
            out.append(f"Not measured: {e['whyNot']}.")
            out.append("")
            continue
        v = e.get("vectors")
        out.append(f"Commit measured: {e['commit'].rstrip('.')}. Measured {e['date']}" +
                   ("" if one else " against the committed vectors" if v == vectors else
                    f" against the vector set {v[:12]}… (an earlier one than the committed set)" if v else
                    " (the vector set was not recorded)") +
                   (f"; random cases: {describe(e['settings'])}." if len(settings) > 1 else "."))
        out.append("")
        rows = e["rows"]
        any_failure = False
        for r in rows:
            for tc, reason, why, _ in r["failures"]:
                if not any_failure:
                    out.append("Failures, fixed vectors:")
                    out.append("")
                    any_failure = True
                out.append(f"- `{r['suite']}` tcId {tc} ({reason}): {why}")
        if any_failure:
            out.append("")
        rnd = [(r["suite"], c) for r in rows for c in r["random"]["shrunk"]]
        if rnd:
            out.append("Failures, random cases (shrunk):")
            out.append("")
            for suite, c in rnd:
                out.append(f"- `{suite}` case {c['case']} ({c['type']}, {c['reason']}; shrunk to {c['after']}): {c['why']}")
            out.append("")
        counted = [(r["suite"], reason, n) for r in rows for reason, n in sorted(r["random"].get("reasons", {}).items())]
        if counted:
            out.append("Every failing random case (shrunk or not), by reason:")
            out.append("")
            for suite, reason, n in counted:
                why = port.get("randomFailures", {}).get(suite, {}).get(reason, "UNEXPLAINED")
                out.append(f"- `{suite}`: {n:,} {reason}: {why}")
            out.append("")
        if not any_failure and not rnd:
            out.append("No failure.")
            out.append("")
        out.append("Not measured, and why:")
        out.append("")
        for item in port["notMeasured"]:
            out.append(f"- {item}")
        out.append("")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
