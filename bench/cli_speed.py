"""How long the command line takes: `import memvault`, `memvault --help`, a command that needs
no store, and commands while a server runs (`memvault serve --auth off` on an embedded store,
the default local embedding model): `search` and `list` sent to it with `--server`, and `list`
opening the store itself beside it. Each is a fresh process; medians and p95 of N, wall-clock
and the command's own CPU time (user + system of the process and its children: on a loaded
machine wall-clock mostly measures the queue for a core, CPU time what the command costs).

With ``--baseline-ref``, the same commands on another commit (checked out in a temporary
worktree, removed afterwards), alternated run by run with this tree's so both see the same
machine. Each commit runs its own server on its own store (a store migrated by one commit is
not one an older commit can open). A commit without ``--server`` runs the server rows the only
way it can: opening the store itself beside its server (and, for `search`, loading the
embedding model).

    .venv/bin/python bench/cli_speed.py [--runs 9] [--baseline-ref 081e58d]
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
CLI = "from memvault.cli import main; main()"
QUERY = ["search", "what does Carol eat?", "--user", "carol", "--json"]
LIST = ["list", "--user", "carol", "--json"]
# name: (python's arguments, whether `--server` sends it to the server where the tree has it)
COMMANDS: dict[str, tuple[list[str], bool]] = {
    "import memvault": (["-c", "import memvault"], False),
    "memvault --help": (["-c", CLI, "--help"], False),
    "memvault keys generate (no store)": (["-c", CLI, "keys", "generate"], False),
    "memvault search (server running)": (["-c", CLI, *QUERY], True),
    "memvault list (server running)": (["-c", CLI, *LIST], True),
    "memvault list (the store itself, beside the server)": (["-c", CLI, *LIST], False),
}


def _worktree(ref: str, into: Path) -> Path:
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(into), ref],
        check=True,
        capture_output=True,
    )
    return into / "src"


def _has_server_option(src: str, env: dict[str, str]) -> bool:
    shown = subprocess.run(
        [sys.executable, "-c", CLI, "--help"],
        env={**env, "PYTHONPATH": src},
        capture_output=True,
        text=True,
        check=True,
    )
    return "--server" in shown.stdout


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _once(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one fresh process."""
    cpu, start = _cpu(), time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, check=True, capture_output=True)
    return time.perf_counter() - start, _cpu() - cpu


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    """A tree's server (``env`` names its source and store), answering once its model is
    loaded, with one memory in it."""
    server = subprocess.Popen(
        [sys.executable, "-c", CLI, "serve", "--auth", "off", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while True:
        try:
            if httpx.get(f"{base}/ready", timeout=5).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the server did not become ready")
        time.sleep(0.5)
    body = {"content": "Carol is vegetarian", "user_id": "carol"}
    httpx.post(f"{base}/v1/memories?wait=true", json=body, timeout=120).raise_for_status()
    return server


Timings = dict[tuple[str, str], list[tuple[float, float]]]


def _row(name: str, trees: list[str], timings: Timings) -> str:
    cells, wall, cpu = [], [], []
    for tree in trees:
        walls = sorted(w for w, _ in timings[(name, tree)])
        p95 = walls[min(len(walls) - 1, round(0.95 * (len(walls) - 1)))]
        wall.append(statistics.median(walls))
        cpu.append(statistics.median(c for _, c in timings[(name, tree)]))
        cells.append(f"{wall[-1]:.2f} / {p95:.2f} / {cpu[-1]:.2f}")
    ratio = f" | {wall[0] / wall[1]:.2f} / {cpu[0] / cpu[1]:.2f}" if len(trees) == 2 else ""
    return f"| {name} | " + " | ".join(cells) + ratio + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--baseline-ref", default=None)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        }
        env.pop("MEMVAULT_DATABASE_URL", None)
        trees = {"this tree": str(ROOT / "src")}
        base = Path(tmp) / "base"
        if options.baseline_ref:
            trees[options.baseline_ref] = str(_worktree(options.baseline_ref, base))
        # Each tree runs its own server on its own store: a store migrated by one commit is
        # not one another commit's code can open.
        envs = {
            tree: {**env, "PYTHONPATH": src, "MEMVAULT_DATA_DIR": str(Path(tmp) / f"data{n}")}
            for n, (tree, src) in enumerate(trees.items())
        }
        ports = {tree: _free_port() for tree in trees}
        servers: list[subprocess.Popen[bytes]] = []
        try:
            for tree in trees:
                servers.append(_serve(envs[tree], ports[tree]))
            speaks_http = {tree: _has_server_option(src, env) for tree, src in trees.items()}
            timings: Timings = {}
            for _ in range(options.runs):
                for name, (args, to_server) in COMMANDS.items():
                    for tree in trees:
                        command = args
                        if to_server and speaks_http[tree]:
                            url = f"http://127.0.0.1:{ports[tree]}"
                            command = [*args[:2], "--server", url, *args[2:]]
                        measured = _once(command, envs[tree])
                        timings.setdefault((name, tree), []).append(measured)
        finally:
            for server in servers:
                server.terminate()
                server.wait(timeout=60)
            if options.baseline_ref:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)],
                    check=False,
                )
    names = list(trees)
    print(f"\nCLI, {options.runs} fresh processes each: wall median / p95, CPU median (s)")
    for tree in names:
        how = "--server" if speaks_http[tree] else "no --server: opens the store beside it"
        print(f"  {tree}: server rows {how}")
    ratio = " | ratio wall / CPU" if len(names) == 2 else ""
    print("| command | " + " | ".join(names) + ratio + " |")
    print("|---|" + "---|" * (len(names) + (1 if ratio else 0)))
    for name in COMMANDS:
        print(_row(name, names, timings))


if __name__ == "__main__":
    main()
