# ENGRAM_CLI names the `engram` CLI for the tests that compare with it (scripts/test_python.sh sets it); without
# it they are skipped, saying so. pytester (pytest inside pytest) is registered in pyproject.toml's
# [tool.pytest.ini_options]: pytest refuses a pytest_plugins variable in a conftest.py below the root.
import os
import shutil

import pytest


@pytest.fixture
def engram_cli():
    cli = os.environ.get("ENGRAM_CLI") or shutil.which("engram")
    if not cli:
        pytest.skip("ENGRAM_CLI is not set and no engram on PATH: the comparison with the CLI is skipped")
    return cli

