"""python -m engram_conformance: the CLI's commands from the package, byte for byte what the executable prints."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import engram_conformance as engram
CONFIG = Path(__file__).resolve().parents[2] / "conformance" / "configs" / "v41-flash.json"


def run(*args, **kw):
    return subprocess.run([sys.executable, "-m", "engram_conformance", *args], capture_output=True, text=True, **kw)


def test_version_is_the_packages():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.strip() == engram.__version__


@pytest.mark.parametrize("args", [
    ["hash", "--config", str(CONFIG), "--ids", "5,0,98000,-1,17", "--trace"],
    ["hash", "--config", str(CONFIG), "--ids", "1,-2"],  # refused: the same message and exit status
    ["layout", "--config", str(CONFIG), "--compressed-vocab-size", "0"],
    ["bogus"],
], ids=["hash", "hash-refused", "layout-bad-option", "unknown-command"])
def test_commands_print_what_the_executable_prints(engram_cli, args):
    ours, cli = run(*args), subprocess.run([engram_cli, *args], capture_output=True, text=True)
    assert (ours.returncode, ours.stdout) == (cli.returncode, cli.stdout)
    assert ours.stderr.replace(sys.executable + " -m engram_conformance", "engram") == cli.stderr.replace(engram_cli, "engram")


def test_conform_uses_the_packaged_vectors_and_runs_an_adapter():
    r = run("conform", "--suite", "layout", "--exec", f"{sys.executable} -m engram_conformance.adapter")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "conformance: OK" in r.stdout and engram.vectors.kind() in r.stdout


def test_conform_lib_starts_its_plugin_host_through_python(engram_cli):
    plugin = Path(engram_cli).parent / "libengram_reference_plugin.so"
    if not plugin.is_file():
        pytest.skip(f"{plugin}: not built")
    r = run("conform", "--suite", "layout", "--lib", str(plugin))
    assert r.returncode == 0 and "conformance: OK" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]


def test_vectors_verify_finds_the_schemas_in_the_package():
    r = run("vectors", "verify", str(engram.vectors.directory()), "--suite", "layout")
    assert r.returncode == 0 and "vectors verified: OK" in r.stdout, r.stdout + r.stderr


def test_tampered_vectors_fail_as_with_the_executable(tmp_path):
    import shutil
    shutil.copytree(engram.vectors.directory(), tmp_path / "v")
    f = tmp_path / "v" / "v1" / "layout.json"
    f.write_bytes(f.read_bytes().replace(b'"tcId": 1,', b'"tcId": 1, ', 1))
    r = run("vectors", "verify", str(tmp_path / "v"), "--suite", "tp_shard")  # the manifest is checked whole
    assert r.returncode != 0 and "layout.json" in r.stderr, r.stdout + r.stderr
    env = dict(os.environ, ENGRAM_VECTORS=str(tmp_path / "v"))
    r = run("conform", "--suite", "layout", "--exec", f"{sys.executable} -m engram_conformance.adapter", env=env)
    assert r.returncode != 0 and "does not match MANIFEST.sha256" in r.stderr, r.stdout + r.stderr
