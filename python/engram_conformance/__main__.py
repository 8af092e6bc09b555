"""``python -m engram_conformance``: the ``engram`` command line (conform, hash, vectors verify, ...) from the package.

The commands are the CLI's own (conformance/cli, linked into engram_conformance._core and run in this process): a Python user
runs them without a C++ build. ``conform`` uses the vectors the package ships unless ``--vectors`` names others
(or ``ENGRAM_VECTORS`` is set); ``conform --lib`` starts its plug-in host as ``python -m engram_conformance plugin-host``.
"""
from __future__ import annotations

import signal
import sys
from typing import List, Optional

from . import _core
from .vectors import directory


def main(argv: Optional[List[str]] = None) -> int:
    """Runs ``engram ARGS...`` and returns its exit status (once per process: the commands keep state)."""
    words = sys.argv[1:] if argv is None else list(argv)
    # As the executable: Ctrl-C ends the command (conform stops its children first), a closed pipe ends the output.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    vectors = directory()
    return _core.cli_main(["engram", *words], [sys.executable, "-m", "engram_conformance"], str(vectors / "schema"), str(vectors))


if __name__ == "__main__":
    sys.exit(main())
