#!/usr/bin/env python3
"""ctest ports.restore.selftest: scripts/ports_restore.py on synthetic ports (a tiny git repository made here, a
tiny wheel) with no port checkout: the pinned files come out byte for byte with their COMMIT line, a file pinned at
another commit comes from that commit, and each wrong pin is refused, naming what differs, with nothing written
for that port: a digest that differs, a commit the clone lacks, a file the commit lacks, a wheel whose digest
differs."""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESTORE = os.path.join(ROOT, "scripts/ports_restore.py")


def git(repo, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", GIT_AUTHOR_DATE="2026-01-01T00:00:00Z",
               GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")
    return subprocess.run(["git", "-C", repo] + list(args), check=True, capture_output=True, text=True, env=env).stdout


def sha(data):
    return hashlib.sha256(data).hexdigest()


def port_json(ports, pid, **fields):
    os.makedirs(os.path.join(ports, pid), exist_ok=True)
    doc = {"name": pid, "kind": "python", "checkout": pid + "-co"}
    doc.update(fields)
    with open(os.path.join(ports, pid, "port.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f)


def run(clones, out, ports, *extra):
    r = subprocess.run([sys.executable, RESTORE, clones, out, "--ports-dir", ports] + list(extra),
                       capture_output=True, text=True)
    return r.returncode, r.stderr


def main():
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        clones, ports, out = (os.path.join(tmp, d) for d in ("clones", "ports", "out"))
        repo = os.path.join(clones, "acme+engram")
        os.makedirs(os.path.join(repo, "src"))
        git(repo, "init", "-q")
        v1 = b"def h(x):\n    return x * 3\n"
        with open(os.path.join(repo, "src/hash.py"), "wb") as f:
            f.write(v1)
        with open(os.path.join(repo, "test.py"), "wb") as f:
            f.write(b"ORACLE = 1\n")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", "one")
        first = git(repo, "rev-parse", "HEAD").strip()
        v2 = b"def h(x):\n    return x * 5  # changed\n"
        with open(os.path.join(repo, "src/hash.py"), "wb") as f:
            f.write(v2)
        git(repo, "commit", "-q", "-am", "two")
        second = git(repo, "rev-parse", "HEAD").strip()

        files = ["src/hash.py", "test.py"]
        port_json(ports, "good", repo="acme/engram", commit=second, files=files,
                  sha256={"src/hash.py": sha(v2), "test.py": sha(b"ORACLE = 1\n")})
        rc, err = run(clones, out, ports, "--only", "good")
        expect(rc == 0, f"a good pin: exit {rc}: {err}")
        got = open(os.path.join(out, "good-co/src/hash.py"), "rb").read() if rc == 0 else b""
        expect(got == v2, "the pinned file is not the commit's bytes")
        commit_line = open(os.path.join(out, "good-co/COMMIT"), encoding="utf-8").read() if rc == 0 else ""
        expect(commit_line == f"acme/engram {second}\n", f"COMMIT line: {commit_line!r}")

        # a file pinned at another commit (the only version a code index stores) comes from that commit
        port_json(ports, "older", repo="acme/engram", commit=second, files=["src/hash.py"],
                  fileCommits={"src/hash.py": first}, sha256={"src/hash.py": sha(v1)})
        rc, err = run(clones, out, ports, "--only", "older")
        expect(rc == 0 and open(os.path.join(out, "older-co/src/hash.py"), "rb").read() == v1,
               f"fileCommits: exit {rc}: {err}")

        # the digest of another version: refused, naming the file and both digests; nothing written
        port_json(ports, "stale", repo="acme/engram", commit=second, files=["src/hash.py"],
                  sha256={"src/hash.py": sha(v1)})
        rc, err = run(clones, out, ports, "--only", "stale")
        expect(rc == 1 and f"sha256 {sha(v2)}, port.json pins {sha(v1)}" in err and "src/hash.py" in err,
               f"a stale digest: exit {rc}: {err}")
        expect(not os.path.exists(os.path.join(out, "stale-co")), "a refused port left a checkout")

        # a refused re-restore keeps nothing half-written, and a good one replaces the older checkout whole
        with open(os.path.join(out, "good-co", "extra.txt"), "w") as f:
            f.write("left over\n")
        rc, err = run(clones, out, ports, "--only", "good")
        expect(rc == 0 and not os.path.exists(os.path.join(out, "good-co", "extra.txt")),
               f"a re-restore did not replace the checkout: exit {rc}: {err}")

        # a commit the clone lacks: refused, naming the commit and how to fetch it
        port_json(ports, "nocommit", repo="acme/engram", commit="ab" * 20, files=["test.py"],
                  sha256={"test.py": sha(b"ORACLE = 1\n")})
        rc, err = run(clones, out, ports, "--only", "nocommit")
        expect(rc == 1 and f"commit {'ab' * 20} is not in the clone" in err and "fetch origin" in err,
               f"a missing commit: exit {rc}: {err}")

        # a file the commit lacks, and a file with no digest pinned
        port_json(ports, "nofile", repo="acme/engram", commit=second, files=["src/gone.py"],
                  sha256={"src/gone.py": "0" * 64})
        rc, err = run(clones, out, ports, "--only", "nofile")
        expect(rc == 1 and "src/gone.py: not in commit" in err, f"a missing file: exit {rc}: {err}")
        port_json(ports, "unpinned", repo="acme/engram", commit=second, files=["test.py"], sha256={})
        rc, err = run(clones, out, ports, "--only", "unpinned")
        expect(rc == 1 and "sha256 has no entry for test.py" in err, f"an unpinned file: exit {rc}: {err}")

        # the clone itself given with one --only port (any name)
        single = os.path.join(tmp, "elsewhere")
        os.rename(repo, single)
        rc, err = run(single, out, ports, "--only", "good")
        expect(rc == 0, f"a single clone: exit {rc}: {err}")
        os.rename(single, repo)

        # a wheel: its digest, then the files' digests
        so = b"\x7fELF pretend\n"
        wheel = os.path.join(clones, "pkg-1.0-py3-none-any.whl")
        with zipfile.ZipFile(wheel, "w") as z:
            z.writestr("pkg/_ops.so", so)
        wsha = sha(open(wheel, "rb").read())
        source = {"pypi": "pkg==1.0", "wheel": "pkg-1.0-py3-none-any.whl", "sha256": wsha,
                  "pythonVersion": "3.11", "platform": "any"}
        port_json(ports, "wheel", repo="acme/pkg", commit="v1.0", files=["pkg/_ops.so"], source=source,
                  sha256={"pkg/_ops.so": sha(so)})
        rc, err = run(clones, out, ports, "--only", "wheel")
        expect(rc == 0 and open(os.path.join(out, "wheel-co/pkg/_ops.so"), "rb").read() == so,
               f"a wheel: exit {rc}: {err}")
        port_json(ports, "badwheel", repo="acme/pkg", commit="v1.0", files=["pkg/_ops.so"],
                  source=dict(source, sha256="1" * 64), sha256={"pkg/_ops.so": sha(so)})
        rc, err = run(clones, out, ports, "--only", "badwheel")
        expect(rc == 1 and f"sha256 {wsha}, port.json pins {'1' * 64}" in err, f"a wrong wheel: exit {rc}: {err}")

        # every port at once: the refused ones are named, the good ones restored, exit 1
        rc, err = run(clones, out, ports)
        expect(rc == 1 and "stale:" in err and "good:" in err and "refused" in err, f"all ports: exit {rc}: {err}")

    for f in failures:
        print("FAIL", f)
    print(f"ports_restore selftest: {'FAILED' if failures else 'ok'} ({len(failures)} failure(s))")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
