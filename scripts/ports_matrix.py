#!/usr/bin/env python3
"""Runs every port adapter of conformance/ports/*/port.json whose checkout is present under CHECKOUTS_DIR
through `engram conform` (fixed vectors, then a fixed count of random cases) and writes a page like
docs/ports.md: one row per port and suite, the commit measured, the vector set and the conformance level, and
every failure with its explanation (the port's file:line) from port.json. A failure port.json does not explain
is printed as UNEXPLAINED and makes the script exit 1.

A measurement goes to a fresh page and measurements file (build/ports/) unless --update names the committed ones
(docs/ports.md, docs/ports.json). Before a port runs, its checkout's files are compared with the SHA-256 pins of
its port.json, and its adapter's Python requirements (port.json `requires`, e.g. torch>=2) with what the
interpreter has: a port whose requirements are not met is not measured, and its row says why.

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


REQUIRE_PROBE = r"""
import importlib.metadata, importlib.util, json, platform, sys
out = {"python": platform.python_version()}
for name in sys.argv[1:]:
    try:
        out[name] = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        spec = importlib.util.find_spec(name)
        out[name] = getattr(__import__(name), "__version__", "?") if spec else None
print(json.dumps(out))
"""


def version_tuple(text):
    """The leading numeric release of a version ("2.4.1+cpu" -> (2, 4, 1), "1.13.0a0" -> (1, 13, 0))."""
    parts = []
    for piece in text.split("+")[0].split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if digits != piece:
            break
    return tuple(parts)


def parse_requirement(req):
    """"torch>=2" -> ("torch", ">=", (2,)); "numpy" -> ("numpy", None, None)."""
    for op in (">=", "=="):
        if op in req:
            name, _, ver = req.partition(op)
            return name.strip(), op, version_tuple(ver.strip())
    return req.strip(), None, None


def check_requirements(port, python):
    """(environment {package: version}, [unmet requirement, said]) for a Python port under that interpreter."""
    reqs = port.get("requires", [])
    names = [parse_requirement(r)[0] for r in reqs]
    r = subprocess.run([python, "-c", REQUIRE_PROBE] + names, capture_output=True, text=True)
    if r.returncode != 0:
        return {}, [f"the interpreter {python} did not run ({r.stderr.strip()[-200:]})"]
    env = json.loads(r.stdout)
    unmet = []
    for req in reqs:
        name, op, want = parse_requirement(req)
        have = env.get(name)
        if have is None:
            unmet.append(f"{req} (not installed)")
        elif op == ">=" and version_tuple(have) < want or op == "==" and version_tuple(have) != want:
            unmet.append(f"{req} (has {have})")
    return env, unmet


def pin_mismatches(port, checkout):
    """The files of the checkout whose SHA-256 is not the one port.json pins (a file not pinned is listed too)."""
    bad = []
    for f in port["files"]:
        want = port.get("sha256", {}).get(f)
        with open(os.path.join(checkout, f), "rb") as fh:
            got = hashlib.sha256(fh.read()).hexdigest()
        if got != want:
            bad.append(f"{f} (sha256 {got[:12]}…, pinned {want[:12] + '…' if want else 'nothing'})")
    return bad


# spec/conformance.md §CONF.8: the levels, as (suite, profile or None for the whole suite)
LEVELS = {
    "v4.1-hash": [("multipliers", None), ("layout", None), ("hash_v41", "v4.1"), ("hash_state", "v4.1")],
    "demo-hash": [("multipliers", None), ("layout", None), ("hash_demo", "demo-v1"), ("hash_state", "demo-v1")],
}
LEVELS["v4.1-full"] = LEVELS["v4.1-hash"] + [("accumulated", "v4.1"), ("token_map", None), ("fp8_decode", None),
                                             ("table_lookup", None), ("tp_shard", None), ("gate_v41", "v4.1"),
                                             ("engram_forward", "v4.1")]
LEVELS["demo-full"] = LEVELS["demo-hash"] + [("accumulated", "demo-v1"), ("token_map", None), ("gate_demo", "demo-v1"),
                                             ("short_conv_demo", "demo-v1"), ("engram_forward", "demo-v1")]


def released_sets(vectors):
    """The MANIFEST digests vectors/RELEASED lists (§VEC.13)."""
    path = os.path.join(vectors, "RELEASED")
    if not os.path.exists(path):
        return set()
    with open(path, encoding="utf-8") as f:
        return {line.split()[0] for line in f if line.strip() and not line.startswith("#")}


def levels_of(entry, released):
    """Per §CONF.8 level: None when reached, else its reasons (from the rows: the suites measured one by one)."""
    rows = {r["suite"]: r for r in entry["rows"]}
    out = {}
    for level, parts in LEVELS.items():
        reasons = []
        for suite, profile in parts:
            r = rows.get(suite)
            if r is None:
                reasons.append(f"{suite} not claimed")
                continue
            counts = ((r.get("profiles") or {}).get(profile) or {"passed": 0, "failed": 0, "skipped": 0}) if profile else r
            if counts["failed"]:
                reasons.append(f"{suite} {counts['failed']} failed")
            if counts["skipped"]:
                reasons.append(f"{suite} {counts['skipped']} skipped")
            if not counts["passed"] and not counts["failed"]:
                reasons.append(f"{suite} nothing tested")
            rnd = r["random"]
            if isinstance(rnd.get("failed"), int) and rnd["failed"]:
                reasons.append(f"{suite} {rnd['failed']} random case(s) failed")
            if rnd.get("run") == "error":
                reasons.append(f"{suite} random cases did not complete")
        if entry.get("vectors") not in released:
            reasons.append("the vector set is not a released one (§VEC.13)")
        out[level] = reasons or None
    return out


def level_summary(entry, released):
    """"v4.1-hash" (the levels reached) or "none", and the nearest level's reasons."""
    lv = levels_of(entry, released)
    reached = [k for k, v in lv.items() if v is None]
    if reached:
        return ", ".join(reached), ""
    near = min(lv.items(), key=lambda kv: (len([x for x in kv[1] if "not claimed" in x]), len(kv[1])))
    return "none", f"nearest {near[0]}: " + "; ".join(near[1])


def group_profiles(vectors, suite):
    """{tcId: the profile of its test group} of a suite's vector file (groups without one are left out)."""
    with open(os.path.join(vectors, "v1", f"{suite}.json"), encoding="utf-8") as f:
        doc = json.load(f)
    return {t["tcId"]: g["profile"] for g in doc.get("testGroups", []) if g.get("profile") for t in g.get("tests", [])}


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


def build_impl(port, checkout, args, tmp, python=None):
    """The `engram conform` arguments that drive the port: its JSON-lines adapter, or its C-ABI plug-in built
    against the checkout's own source."""
    if port["kind"] == "python":
        # the adapters import the in-tree protocol and kit (engram_adapter) from conformance/python
        return ["--exec", f"env PYTHONPATH={shlex.quote(os.path.join(ROOT, 'conformance', 'python'))} "
                          f"{shlex.quote(python or args.python)} {shlex.quote(os.path.join(ROOT, port['adapter']))} "
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
    profiles = {}  # per group profile: a level restricted to one profile (§CONF.8) counts only its groups
    profile_of = group_profiles(args.vectors, suite)
    for r in fixed["results"]:
        if r["suite"] == suite and profile_of.get(r["tcId"]):
            c = profiles.setdefault(profile_of[r["tcId"]], {"passed": 0, "failed": 0, "skipped": 0})
            key = {"pass": "passed", "fail": "failed", "skip": "skipped"}.get(r["status"])
            if key:
                c[key] += 1
    failures = []
    for r in fixed["results"]:
        if r["suite"] == suite and r["status"] == "fail":
            key = f"{suite}:{r['tcId']}"
            # the test's flags kept with the detail: port.json's failurePatterns may name a flag, and the saved
            # detail is cut
            detail = r.get("detail", "")[:500] + (f"\nflags: {', '.join(r['flags'])}" if r.get("flags") else "")
            why = explain(port, key, detail)
            if why is None:
                problems.append(f"{port['id']} {key}: UNEXPLAINED {r['reason']}: {r.get('detail', '')[:300]}")
            failures.append((r["tcId"], r["reason"], why or "UNEXPLAINED", detail))
    row = {"suite": suite, "passed": counts["passed"], "failed": counts["failed"], "skipped": counts["skipped"],
           "profiles": profiles, "failures": failures, "seconds": secs_fixed,
           "random": {"run": 0, "failed": 0, "shrunk": [], "seconds": 0.0}}
    if args.random <= 0:
        return row, problems
    report = os.path.join(tmp, f"{port['id']}-{suite}-random.json")
    try:
        rnd, secs = run_conform(args.engram, args.vectors, impl, suite, report,
                                ["--random-only", "--random", str(args.random), "--seed", str(args.seed),
                                 "--max-random-failures", str(args.max_random_failures),
                                 "--max-shrunk", str(args.max_shrunk), "--shrink-calls", str(args.shrink_calls)] +
                                (["--random-seconds", str(args.random_seconds)] if args.random_seconds > 0 else []),
                                args.timeout)
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
    if s.get("drawn", 0) < args.random:  # a budget stopped the suite: the row says so, never silently
        row["random"]["cut"] = (f"--random-seconds {args.random_seconds:g}" if args.random_seconds > 0 else
                                f"--max-random-failures {args.max_random_failures}" if args.max_random_failures > 0
                                else "--max-timeouts")
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
    budget = st["randomSeconds"]
    text = (f"`--random {st['random']}" + (f" --random-seconds {budget:g}" if budget else "") +
            f" --seed {st['seed']}` per suite (generator random-v2: " +
            (f"{st['random']} cases or {budget:g} s, whichever comes first" if budget else
             f"{st['random']} cases, no time budget") + "), ")
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


def parse_args():
    """The command line: (parser, args, {port id: its interpreter}), the defaults of --out and --results resolved."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("checkouts", nargs="?", help="one directory per port (not needed with --render)")
    ap.add_argument("--engram", default=os.path.join(ROOT, "build/release/conformance/engram"))
    ap.add_argument("--vectors", default=os.path.join(ROOT, "vectors"))
    ap.add_argument("--python", default=os.environ.get("ENGRAM_PORTS_PYTHON", sys.executable))
    ap.add_argument("--random", type=int, default=10000, help="random cases per suite (default 10,000)")
    ap.add_argument("--random-seconds", type=float, default=0,
                    help="per suite, stop drawing after this many seconds (default 0: no budget, the count decides; a "
                         "row the budget cut says so)")
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
    ap.add_argument("--python-for", action="append", default=[], metavar="PORT=PYTHON",
                    help="the interpreter of one port's adapter (also ENGRAM_PORTS_PYTHON_<PORT>, the id upper-cased, "
                         "- as _); the others use --python")
    ap.add_argument("--update", action="store_true",
                    help="write the committed page and measurements (docs/ports.md, docs/ports.json) instead of a "
                         "fresh build/ports/ports.md and build/ports/ports.json")
    ap.add_argument("--out", help="the page written (default: docs/ports.md with --update or --render, else "
                                  "build/ports/ports.md)")
    ap.add_argument("--saved", default=os.path.join(ROOT, "docs/ports.json"),
                    help="the saved measurements read for the ports not measured in this run (--only, --render; "
                         "default docs/ports.json)")
    ap.add_argument("--results",
                    help="the raw measurements written, one entry per port with its date and settings (default: "
                         "docs/ports.json with --update, else build/ports/ports.json; with --render, the file read)")
    ap.add_argument("--render", action="store_true",
                    help="measure nothing: write the page from --results (explanations taken from port.json again)")
    ap.add_argument("--ports-dir", default=os.path.join(ROOT, "conformance/ports"), help=argparse.SUPPRESS)
    ap.add_argument("--check", action="store_true",
                    help="with --render: exit 1 if the page differs from what --results and port.json give")
    args = ap.parse_args()
    if not args.render and not args.checkouts:
        ap.error("CHECKOUTS_DIR is needed to measure (or --render)")
    committed = args.update or args.render
    fresh = os.path.join(ROOT, "build/ports")
    args.out = args.out or (os.path.join(ROOT, "docs/ports.md") if committed else os.path.join(fresh, "ports.md"))
    if args.render:
        args.results = args.results or args.saved
        args.saved = args.results
    args.results = args.results or (os.path.join(ROOT, "docs/ports.json") if committed else
                                    os.path.join(fresh, "ports.json"))
    pythons = {}
    for item in args.python_for:
        pid, sep, py = item.partition("=")
        if not sep:
            ap.error(f"--python-for {item}: expected PORT=PYTHON")
        pythons[pid] = py
    return ap, args, pythons


def main():
    ap, args, pythons = parse_args()

    ports = []
    for path in sorted(glob.glob(os.path.join(args.ports_dir, "*", "port.json"))):
        with open(path, encoding="utf-8") as f:
            port = json.load(f)
        port["id"] = os.path.basename(os.path.dirname(path))
        ports.append(port)

    saved = {}
    if os.path.exists(args.saved):
        try:
            saved = load_results(args.saved)
        except (ValueError, OSError) as e:  # json.JSONDecodeError is a ValueError
            print(f"ports: {args.saved}: {e}", file=sys.stderr)
            return 2
    all_problems = [f"{pid}: a saved measurement in {args.saved} with no conformance/ports/{pid}/port.json "
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
                entry["pins"] = pin_mismatches(port, checkout) or "checked"
                if entry["pins"] != "checked":
                    print(f"ports: {port['id']}: the checkout's files are not the pinned ones: "
                          f"{'; '.join(entry['pins'])}", file=sys.stderr)
                python = None
                if port["kind"] == "python":
                    python = pythons.get(port["id"]) or os.environ.get(
                        "ENGRAM_PORTS_PYTHON_" + port["id"].upper().replace("-", "_")) or args.python
                    entry["environment"], unmet = check_requirements(port, python)
                    if unmet:
                        entry["whyNot"] = (f"the adapter's requirements are not met by {python}: {', '.join(unmet)} "
                                           f"(port.json requires {', '.join(port.get('requires', []))}; name another "
                                           f"interpreter with --python-for {port['id']}=PYTHON)")
                        entries[port["id"]] = entry
                        print(f"ports: {port['id']}: not measured: {entry['whyNot']}", file=sys.stderr)
                        continue
                entries[port["id"]] = entry
                print(f"ports: {port['id']}: measuring {checkout}", file=sys.stderr)
                impl = build_impl(port, checkout, args, tmp, python)
                futures = [pool.submit(measure_suite, port, impl, suite, args, tmp) for suite in port["suites"]]
                jobs.append((port["id"], futures))
                entry["commit"] = commit_of(checkout)
            by_id = {port["id"]: port for port in to_measure}
            for pid, futures in jobs:
                try:
                    results = [future.result() for future in futures]
                except RuntimeError as e:
                    # a suite that could not run at all (a handshake that kept missing its timeout on a loaded
                    # machine): the port's saved measurement stays, the others' are written, and the run exits 1
                    all_problems.append(f"{pid}: not measured in this run: {e}")
                    if pid in saved and saved[pid]["commit"]:
                        entries[pid] = saved[pid]
                        all_problems += reexplain(by_id[pid], saved[pid])
                    else:
                        entries[pid] = dict(entries[pid], rows=[], whyNot=f"the run failed: {str(e)[-300:]}")
                    continue
                for row, problems in results:
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
        os.makedirs(os.path.dirname(os.path.abspath(args.results)), exist_ok=True)
        with open(args.results, "w", encoding="utf-8") as f:
            json.dump({"format": 2, "ports": {p["id"]: e for p, e in measured if e["date"]}}, f, indent=1,
                      ensure_ascii=False)
            f.write("\n")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"ports: wrote {args.out} ({sum(1 for _, e in measured if e['commit'])} port(s) measured, "
          f"{len(to_measure)} in this run)", file=sys.stderr)
    return 1 if all_problems else 0


def random_cell(r):
    """The random-cases column: the count run, and where a budget cut the suite, how far it got."""
    rnd = r["random"]
    if rnd.get("cut"):
        return f"{rnd['run']} (cut by {rnd['cut']} after {rnd.get('drawn', '?')} drawn)"
    return f"{rnd['run']}"


def render(measured, args, vectors):
    with open(os.path.join(args.vectors, "v1/hash_v41.json"), encoding="utf-8") as f:
        spec = json.load(f)["specVersion"]
    released = released_sets(args.vectors)
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
               "`scripts/ports.sh --clones CLONES --update` re-measures the whole matrix in one command: it restores "
               "every port from a directory of git clones at the commit and file digests its port.json pins "
               "(`scripts/ports_restore.py`), checks each adapter's Python requirements, and writes this page; "
               "`scripts/ports.sh CHECKOUTS_DIR --only PORT --update` measures one port anew and keeps the others' "
               "saved measurements (`docs/ports.json`); without `--update` a run writes `build/ports/ports.md`.")
    out.append("")
    out.append("Commit: `git rev-parse HEAD` of a git checkout, else the checkout's `COMMIT` file. The checkouts of "
               "the committed matrix were not git trees: each holds the named files as a public code index stores "
               "them at the commit its `COMMIT` line gives, some only through the definitions the adapter runs "
               "(line numbers are the files' own).")
    if done and min(e["settings"]["random"] for e in done) < 10000:
        out.append("")
        out.append("**Fewer random cases than the default (10,000 or 10 minutes per suite)** for the ports whose "
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
    out.append("Whose answer: an exception raised in the port's code is the port's refusal (its file:line is shown); "
               "one raised in the adapter's own code is an adapter error, which fails the test and is never counted "
               "as the port refusing an input; a rollback past the start or a rollback or fork of a sequence never "
               "started, where the port keeps no history or no sequence names (the adapter replays them), is the "
               "engine's to refuse and answered `unsupported`.")
    out.append("")
    out.append("Level: the conformance level (spec/conformance.md §CONF.8) the port's runs reach together, `none` "
               "when none is (its section gives the nearest level's reasons); vectors: the first 12 hex digits of "
               "the sha256 of the `MANIFEST.sha256` the row ran against.")
    out.append("")
    out.append("| port | commit | suite | fixed passed | failed | skipped | random run | random failed | random skipped "
               "| level | vectors |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for port, e in measured:
        if e["whyNot"]:
            out.append(f"| {port['name']} | — | — | not measured: {e['whyNot']} | | | | | | | |")
            continue
        level = level_summary(e, released)[0]
        for r in e["rows"]:
            commit = e["commit"]
            short = commit if len(commit) <= 60 else commit[:57] + "..."
            out.append(f"| {port['name']} | {short} | {r['suite']} | {r['passed']} | {r['failed']} | "
                       f"{r['skipped']} | {random_cell(r)} | {r['random']['failed']} | "
                       f"{r['random'].get('skipped', '')} | {level} | {(e.get('vectors') or 'not recorded')[:12]} |")
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
        level, why = level_summary(e, released)
        pins = e.get("pins")
        env = e.get("environment") or {}
        out.append(f"Conformance level reached: {level}" + (f" ({why})" if why else "") + ". " +
                   ("Files: as port.json pins them (SHA-256 checked). " if pins == "checked" else
                    f"**Files not as port.json pins them**: {'; '.join(pins)}. " if pins else
                    "Files: not checked against pins (measured before port.json pinned them). ") +
                   (f"Interpreter: Python {env.get('python')}" + "".join(f", {k} {v}" for k, v in sorted(env.items())
                                                                        if k != "python") + "." if env else ""))
        out.append("")
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
