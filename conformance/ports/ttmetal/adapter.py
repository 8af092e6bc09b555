#!/usr/bin/env python3
"""JSON-lines adapter for the official DeepSeek-V4.1 inference/engram.py as vendored by tenstorrent/tt-metal
(models/demos/deepseek_v3_d_p/reference/deepseek_v41/engram.py). See README.md beside this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/ttmetal/adapter.py --checkout DIR"
"""
import sys

from engram_adapter.official_api import OfficialApiAdapter
from engram_adapter.portlib import main


class TtMetal(OfficialApiAdapter):
    name = "tt-metal deepseek_v41/engram.py (official V4.1 code)"
    version = "checkout"
    path = "models/demos/deepseek_v3_d_p/reference/deepseek_v41/engram.py"


if __name__ == "__main__":
    sys.exit(main(TtMetal, __doc__))
