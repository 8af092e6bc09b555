#!/usr/bin/env python3
"""Peak resident memory of `engram conform` and the token-map reader under the inputs that used to
grow without bound (spec/bad_inputs.md §ERR.3), with the bound the spec states for each.

  scripts/bench_memory.py [--engram build/release/conformance/engram] [--plugin PATH] [--random N]

Each case runs the CLI once in a scratch directory and reads the peak RSS of the process tree from
wait4 (the CLI and the children it reaped: a plug-in host, a peer). Nothing here is asserted: the
catalogue rows LIM-04 ... LIM-07 hold the bounds in ctest; this prints the figures.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

BIG_ANSWER = r'''import json, sys
for line in sys.stdin:
    op = json.loads(line).get("op")
    if op == "hello":
        print('{"protocol": 1, "name": "big", "version": "0", "suites": ["layout"], "profiles": ["*"], "features": []}', flush=True)
    elif op == "bye":
        break
    elif op == "contract":
        print('{"contract": null}', flush=True)
    else:
        out = sys.stdout
        out.write('{"outputs": {"layers": [')
        chunk = "0," * (1 << 20)
        for _ in range(%(chunks)d):
            out.write(chunk)
        out.write('0]}}\n')
        out.flush()
'''


def run(args, cwd):
    t0 = time.monotonic()
    p = subprocess.Popen(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, usage.ru_maxrss / 1024.0, time.monotonic() - t0, out.decode(errors="replace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engram", default=os.path.join(ROOT, "build/release/conformance/engram"))
    ap.add_argument("--plugin", default=os.path.join(ROOT, "build/release/conformance/libengram_reference_plugin.so"))
    ap.add_argument("--random", type=int, default=100000, help="cases of the long random run")
    a = ap.parse_args()
    vectors = os.path.join(ROOT, "vectors")
    rows = []
    with tempfile.TemporaryDirectory() as d:
        # A 100 MB answer line (50 chunks of 2 MiB), to every layout test.
        with open(os.path.join(d, "big.py"), "w") as f:
            f.write(BIG_ANSWER % {"chunks": 50})
        rc, rss, sec, _ = run([a.engram, "conform", "--vectors", vectors, "--exec", sys.executable + " big.py",
                               "--suite", "layout", "--max-timeouts", "0"], d)
        rows.append(("one 100 MB answer line per layout test", rc, rss, sec, "§ERR.3: 64 MiB (LIM-04)"))
        # 2 MB failing answers to every hash_v41 test.
        with open(os.path.join(d, "two.py"), "w") as f:
            f.write(BIG_ANSWER.replace('"layout"', '"hash_v41"').replace('"layers"', '"rows"') % {"chunks": 1})
        rc, rss, sec, out = run([a.engram, "conform", "--vectors", vectors, "--exec", sys.executable + " two.py",
                                 "--suite", "hash_v41"], d)
        failed = out.rsplit("conformance: ", 1)[-1].split(" failed", 1)[0].rsplit(" ", 1)[-1]
        rows.append((f"{failed} failing answers of 2 MB (hash_v41)", rc, rss, sec, "§ERR.3: 256 MiB (LIM-05)"))
        # Long random runs: the same memory for 10x the cases.
        for n in (a.random // 10, a.random):
            rc, rss, sec, _ = run([a.engram, "conform", "--vectors", vectors, "--lib", a.plugin, "--random", str(n),
                                   "--seed", "1", "--suite", "multipliers", "--random-only"], d)
            rows.append((f"--random {n} (multipliers, reference plug-in)", rc, rss, sec, "§ERR.3: 64 MiB, any N (LIM-06)"))
        # A token map at the §ERR.4 limit (16 MiB of JSON), as dense as JSON allows, read by engram hash.
        n = (16 * 1024 * 1024 - 2) // 2
        with open(os.path.join(d, "map.json"), "w") as f:
            f.write("[" + "0," * (n - 1) + "0]")
        rc, rss, sec, _ = run([a.engram, "hash", "--config", os.path.join(ROOT, "conformance/configs/demo-v1.json"),
                               "--token-map", "map.json", "--ids=0,0,0"], d)
        rows.append((f"a 16 MiB token map ({n} ids), engram hash", rc, rss, sec, "§ERR.3: 512 MiB (LIM-07)"))
    print("| case | exit | peak RSS (MiB) | seconds | bound |")
    print("|---|---|---|---|---|")
    for case, rc, rss, sec, bound in rows:
        print(f"| {case} | {rc} | {rss:.0f} | {sec:.1f} | {bound} |")


if __name__ == "__main__":
    main()
