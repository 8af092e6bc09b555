"""The in-tree adapters' shared code: the JSON-lines protocol (protocol) and the third-party ports' kit (portlib,
official_api). Pure Python: conformance/python goes on PYTHONPATH."""
