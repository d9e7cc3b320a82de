"""How long the command line takes to start: `import memvault`, `memvault --help`, a command
that needs no store, and a command against a running PostgreSQL (the store already migrated),
each a fresh process, median of N; with ``--baseline-ref``, the same commands on another commit
(checked out in a temporary worktree) alternated run by run with this tree's, so both see the
same machine.

    .venv/bin/python bench/cli_speed.py [--runs 15] [--baseline-ref ae7939a]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memvault.crypto import generate_key
from memvault.db.embedded import EmbeddedPostgres

ROOT = Path(__file__).resolve().parent.parent
CLI = "from memvault.cli import main; main()"
COMMANDS = {
    "import memvault": ["-c", "import memvault"],
    "memvault --help": ["-c", CLI, "--help"],
    "memvault keys generate (no store)": ["-c", CLI, "keys", "generate"],
    "memvault list --user u (store running)": ["-c", CLI, "list", "--user", "u", "--json"],
}


def _worktree(ref: str, into: Path) -> Path:
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(into), ref],
        check=True,
        capture_output=True,
    )
    return into / "src"


def _once(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--baseline-ref", default=None)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = EmbeddedPostgres(Path(tmp) / "pg")
        url = server.start()
        env = {
            **os.environ,
            "MEMVAULT_DATABASE_URL": url,
            "MEMVAULT_ENCRYPTION_KEY": generate_key(),
            "MEMVAULT_DATA_DIR": str(Path(tmp) / "data"),
            "MEMVAULT_RUN_WORKER": "false",
            "HF_HUB_OFFLINE": "1",
        }
        trees = {"this tree": str(ROOT / "src")}
        if options.baseline_ref:
            trees[options.baseline_ref] = str(_worktree(options.baseline_ref, Path(tmp) / "base"))
        for src in trees.values():  # migrate once per tree, outside the timing
            _once(COMMANDS["memvault list --user u (store running)"], {**env, "PYTHONPATH": src})
        timings: dict[tuple[str, str], list[float]] = {}
        for _ in range(options.runs):
            for name, args in COMMANDS.items():
                for tree, src in trees.items():
                    seconds = _once(args, {**env, "PYTHONPATH": src})
                    timings.setdefault((name, tree), []).append(seconds)
        server.stop()
        if options.baseline_ref:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(Path(tmp) / "base")],
                check=False,
            )
    print(f"\nCLI start-up, median of {options.runs} fresh processes (seconds)")
    print("| command | " + " | ".join(trees) + " |")
    print("|---|" + "---|" * len(trees))
    for name in COMMANDS:
        cells = [f"{statistics.median(timings[(name, tree)]):.3f}" for tree in trees]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
