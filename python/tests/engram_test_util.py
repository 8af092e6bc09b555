"""Helpers of the plugin's own tests."""

def plugin_args():
    """["-p", "engram_conformance.pytest_plugin"] when the plugin is not installed (a source tree on PYTHONPATH), else []:
    the installed package registers it through its pytest11 entry point."""
    from importlib.metadata import entry_points
    eps = entry_points()
    group = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
    return [] if any(e.value == "engram_conformance.pytest_plugin" for e in group) else ["-p", "engram_conformance.pytest_plugin"]
