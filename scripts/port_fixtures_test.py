#!/usr/bin/env python3
"""scripts/port_fixtures.py on synthetic checkouts (ctest ports.fixtures.selftest; no port needed).

The fixture is written here in lucebox's test-file shape with the constants of pypto-serving's first-position
test, whose rows were derived by hand (conformance/cli/port_fixtures_test.cc, PortExplicitLayout.
PyptoFirstPositionRows): layers [1, 14], max n-gram 3, 2 heads, multipliers [[3, 5, 7], [11, 13, 17]], primes
[[5, 7], [11, 13]] and [[17, 19], [23, 29]], pad 2, token 0 -> rows 0, 8, 16, 27 and 9, 24, 46, 86. The script
must reproduce them (exit 0), report a changed or missing value (exit 1), and refuse a missing or malformed file,
a token outside the map and a map expression it does not read (exit 2).
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST = "server/test/test_ds4_engram.cpp"
FIXTURE = """constexpr int kLayers = 2;
constexpr int kHeads = 2;
constexpr int kMaxNgram = 3;
constexpr int32_t kPad = 2;
constexpr int kVocab = 4;
const std::vector<uint64_t> kMultipliers = { 3ull, 5ull, 7ull, 11ull, 13ull, 17ull, };
const std::vector<uint64_t> kPrimes = { 5, 7, 11, 13, 17, 19, 23, 29, };
const std::vector<int32_t> kTokens = { 0, };
const std::vector<uint32_t> kExpectedRows = { %s };
    for (int i = 0; i < kVocab; ++i) map[(size_t) i] = (i * 1 + 0) %% 4;
    return hasher.init_raw({1, 14}, kHeads, kMaxNgram, kPad, token_map(),
"""


def run(checkouts, engram):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts/port_fixtures.py"), checkouts, "--engram", engram],
                       capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    engram = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        rc, out = run(tmp, engram)
        if rc != 2 or "no fixture file" not in out:
            failures.append(f"an empty directory: exit {rc}: {out}")
        path = os.path.join(tmp, "lucebox", TEST)
        os.makedirs(os.path.dirname(path))
        for rows, want_rc, want in [("0, 8, 16, 27, 9, 24, 46, 86,", 0, "8 values in 1 fixture check(s), 1 reproduced"),
                                    ("0, 8, 16, 27, 9, 24, 46, 87,", 1, "DIFFERS"),
                                    ("0, 8, 16, 27, 9, 24, 46,", 1, "DIFFERS")]:
            with open(path, "w", encoding="utf-8") as f:
                f.write(FIXTURE % rows)
            rc, out = run(tmp, engram)
            if rc != want_rc or want not in out:
                failures.append(f"rows {rows}: exit {rc} (expected {want_rc}, {want!r}): {out}")
        refused = [("a file without kHeads", (FIXTURE % "0,").replace("constexpr int kHeads = 2;\n", ""), "kHeads"),
                   ("a token outside the map", (FIXTURE % "0,").replace("kTokens = { 0, }", "kTokens = { -1, }"),
                    "outside the token map"),
                   ("a map that is not + - * % of i", (FIXTURE % "0,").replace("(i * 1 + 0) % 4", "i**10**9"),
                    "only integers, i, + - * % and parentheses")]
        for what, text, want in refused:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            rc, out = run(tmp, engram)
            if rc != 2 or want not in out or TEST not in out:
                failures.append(f"{what}: exit {rc} (expected 2, {want!r}): {out}")
    for f in failures:
        print("FAIL:", f)
    print(f"{7 - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
