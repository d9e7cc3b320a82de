"""What starting memvault loads: ``import memvault`` and a command's own ``--help`` import
neither the store, the HTTP client nor the model runtime, and the HTTP client (what a command
sent to a server runs on) none of the store, its drivers or the model runtime; the extractor's
sentence shapes are compiled when first read, once. (How long a start takes is measured by
bench/cli_speed.py.)"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from memvault.graph import patterns

# Not pydantic: typer loads it itself to render a command's options.
HEAVY = (
    "sqlalchemy",
    "psycopg",
    "onnxruntime",
    "numpy",
    "httpx",
    "rich",
    "memvault.service",
    "memvault.client",
    "memvault.config",
)
PROBE = (
    "import sys\n"
    "{code}\n"
    "print(sorted(m for m in sys.modules if m.startswith({heavy!r})), file=sys.stderr)"
)
RUN_CLI = "from memvault.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("code", "args"),
    [("import memvault", []), (RUN_CLI, ["add", "--help"]), (RUN_CLI, ["facts", "--help"])],
    ids=["import memvault", "memvault add --help", "memvault facts --help"],
)
def test_starting_loads_no_store_client_or_model_runtime(code: str, args: list[str]) -> None:
    probe = PROBE.format(code=code, heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=60
    )
    assert done.stderr.strip() == "[]", done.stderr


# What the client must not load: a command sent to a server needs no store, driver or model.
STORE = (
    "sqlalchemy",
    "psycopg",
    "numpy",
    "onnxruntime",
    "memvault.backend",
    "memvault.service",
    "memvault.db",
)


@pytest.mark.slow
def test_the_http_client_loads_no_store_driver_or_model_runtime() -> None:
    probe = PROBE.format(code="import memvault.client", heavy=STORE)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "[]", done.stderr


def test_shapes_compile_on_first_read_once() -> None:
    fresh = patterns.Shape("diet", r"(?P<subj>\bI\b) am (?P<val>vegan)", None, "vegan")
    assert "regex" not in vars(fresh) and "cue" not in vars(fresh)
    assert fresh.cue.search("I AM VEGAN") and fresh.regex.search("I am vegan")
    assert fresh.regex is fresh.regex and fresh.cue is fresh.cue
    for shape in patterns.SHAPES:  # every shape the extractor reads is a valid pattern
        assert shape.regex.pattern == shape.pattern
        assert shape.cue.flags & re.IGNORECASE
