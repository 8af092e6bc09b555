#!/usr/bin/env python3
"""JSON-lines adapter for onnxruntime's packed (varlen) contrib ops on the CPU: com.microsoft VarlenNGramHashMapping
and VarlenCausalConvWithState, as the released wheel ships them. The graphs are those of
conformance/ports/onnxruntime/adapter.py (its OrtVarlen class), which this file runs; see README.md beside this file.

Run: engram conform --vectors vectors \\
       --exec "env PYTHONPATH=conformance/python python3 conformance/ports/onnxruntime-varlen/adapter.py --checkout DIR"
"""
import importlib.util
import os
import sys

from engram_adapter.portlib import main

# the fixed-shape port's module, loaded by its path (both directories hold an adapter.py)
_spec = importlib.util.spec_from_file_location(
    "onnxruntime_port_adapter", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "onnxruntime",
                                             "adapter.py"))
_ort = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ort)

if __name__ == "__main__":
    sys.exit(main(_ort.OrtVarlen, __doc__))
