# The plugin's own tests run pytest inside pytest (pytester). ENGRAM_CLI names the `engram` CLI for the tests
# that compare with it (scripts/test_python.sh sets it); without it they are skipped, saying so.
import os
import shutil

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture
def engram_cli():
    cli = os.environ.get("ENGRAM_CLI") or shutil.which("engram")
    if not cli:
        pytest.skip("ENGRAM_CLI is not set and no engram on PATH: the comparison with the CLI is skipped")
    return cli

