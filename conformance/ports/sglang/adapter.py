#!/usr/bin/env python3
"""JSON-lines adapter for sglang's DeepSeek-V4.1 manual-test model, test/manual/deepseek_v41/dsv41_engram.py
(the official engram.py API). See README.md beside this file.

Run: engram conform --vectors vectors --exec "python3 conformance/ports/sglang/adapter.py --checkout DIR"
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from official_api import OfficialApiAdapter  # noqa: E402
from portlib import main  # noqa: E402


class _Struct:
    """Stand-in for msgspec.Struct (not installed with the CPU measurement): keyword fields, frozen."""

    def __init_subclass__(cls, **options):
        super().__init_subclass__()

    def __init__(self, **fields):
        for k, v in fields.items():
            object.__setattr__(self, k, v)


class _Msgspec:
    Struct = _Struct


class SGLang(OfficialApiAdapter):
    name = "sglang test/manual/deepseek_v41/dsv41_engram.py"
    version = "checkout"
    path = "test/manual/deepseek_v41/dsv41_engram.py"
    # the file's imports the Engram hash code does not use at run time, stubbed (README.md)
    extra = {"msgspec": _Msgspec, "DeepseekV41Args": object}


if __name__ == "__main__":
    sys.exit(main(SGLang, __doc__))
