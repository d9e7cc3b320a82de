"""The suite's own rules, checked over every file under tests/: it waits for events, not for
time (``tests/waiting.py`` polls with a deadline that fails); it asserts no wall-clock time
(benchmarks in ``bench/`` measure time); it reaches a store's internals only through
``backend_of`` / the ``backend`` fixture in conftest, so they can move in one place; and a test
that starts a process is marked ``slow``, so ``make check`` can leave it out."""

from __future__ import annotations

import ast
import functools
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

# (file, function): why a sleep there is the behaviour under test, not a wait for an event.
SLEEPS_ALLOWED = {
    ("waiting.py", "wait_until"): "the poll interval",
    ("waiting.py", "wait_for"): "the poll interval",
    ("fakes.py", "do_POST"): "a fake embedding service that hangs as the test scripts it",
    ("llm_fakes.py", "do_POST"): "a fake LLM server that answers late as scripted",
    ("processes.py", "_run"): "the load generator's back-off after a refusal",
    ("test_client.py", "_stub"): "a stub server that answers slowly",
    ("test_auth.py", "slow"): "a search slower than the request deadline",
    ("test_outage.py", "test_pooled_connections_that_died_are_replaced_or_fail_once"): (
        "idle time past the ping threshold"
    ),
    ("test_graph.py", "test_valid_time_and_system_time_answer_different_questions"): (
        "a tick of the clock between two recorded times"
    ),
}
CLOCKS = {"monotonic", "perf_counter", "time", "now"}


@functools.cache
def _modules() -> tuple[tuple[str, ast.Module], ...]:
    """Every test file parsed once for all the rules below (the trees are only read)."""
    return tuple(
        (str(path.relative_to(TESTS)), ast.parse(path.read_text(), str(path)))
        for path in sorted(TESTS.rglob("*.py"))
        if "vendor" not in path.parts[-2]
    )


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _innermost(tree: ast.Module) -> dict[int, str]:
    """Each node (by id) to the name of the innermost function holding it."""
    owner: dict[int, str] = {}
    for function in _functions(tree):  # outer first: inner functions overwrite
        for node in ast.walk(function):
            owner[id(node)] = function.name
    return owner


def _is_sleep(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    zero = bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0
    return name == "sleep" and not zero  # sleep(0) yields to the loop; it waits for nothing


def test_no_fixed_sleep_waits_for_an_event() -> None:
    found: dict[tuple[str, str], int] = {}
    for name, tree in _modules():
        owner = _innermost(tree)
        for node in ast.walk(tree):
            if _is_sleep(node):
                key = (name, owner.get(id(node), "<module>"))
                found[key] = node.lineno
    unexplained = {
        f"{file}:{line} in {function}"
        for (file, function), line in found.items()
        if (file, function) not in SLEEPS_ALLOWED
    }
    assert unexplained == set(), "wait for the event with tests/waiting.py instead"
    assert set(SLEEPS_ALLOWED) <= set(found), "an allowance no sleep needs any more: remove it"


def _clock_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in CLOCKS
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in {"time", "datetime"}
    )


def test_no_test_asserts_on_elapsed_wall_clock_time() -> None:
    timed: list[str] = []
    for name, tree in _modules():
        for function in _functions(tree):
            clocks = {
                target.id
                for node in ast.walk(function)
                if isinstance(node, ast.Assign) and _clock_call(node.value)
                for target in node.targets
                if isinstance(target, ast.Name)
            }
            for node in ast.walk(function):
                if not isinstance(node, ast.Assert):
                    continue
                for part in ast.walk(node.test):
                    subtracts = isinstance(part, ast.BinOp) and isinstance(part.op, ast.Sub)
                    if subtracts and any(
                        _clock_call(side) or (isinstance(side, ast.Name) and side.id in clocks)
                        for side in (part.left, part.right)
                    ):
                        timed.append(f"{name}:{node.lineno}")
    assert timed == [], "measure time in bench/, assert on behaviour here"


def test_store_internals_are_reached_through_conftest_only() -> None:
    reads = [
        f"{name}:{node.lineno}"
        for name, tree in _modules()
        if name != "conftest.py"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "_backend"
    ]
    assert reads == [], "use the backend fixture or backend_of() from tests/conftest.py"


def test_each_test_process_has_its_own_redis_database() -> None:
    from tests.conftest import REDIS_URL, _redis_database

    assert {_redis_database(f"gw{n}") for n in range(8)} == set(range(1, 9))
    assert REDIS_URL.rsplit("/", 1)[1] != "0"  # 0 is left to whatever else uses the server
    shared = [
        f"{name}:{node.lineno}"
        for name, tree in _modules()
        if name not in {"conftest.py", "test_suite_rules.py"}
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith("redis://127.0.0.1:6379")
    ]
    assert shared == [], "use REDIS_URL (or the redis_url fixture) from tests/conftest.py"


def test_a_test_not_marked_slow_cannot_start_a_process() -> None:
    with pytest.raises(pytest.fail.Exception, match="starts a process: mark it"):
        subprocess.run(["true"], check=False)
