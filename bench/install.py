"""What a newcomer pays: the virtualenv `make run` builds, and the wait for the first answer.

    .venv/bin/python bench/install.py [--ref HEAD] [--baseline ae7939a] [--workdir /tmp/...]

For each git ref (this tree's commit, and the baseline side by side) a fresh clone in
``--workdir`` (outside the repository), then:

1. install: ``make .venv/.installed`` timed, from pip's warm cache (run the script twice, or
   after a ``make`` of the same dependencies, for the cache to be warm); the virtualenv's size
   on disk (after the install, and after the first run: bytecode is written for what is
   imported), the largest packages in it, and which of torch, transformers,
   sentence-transformers, scipy, scikit-learn and sympy it holds;
2. first answer: ``make run`` started on a fresh data directory (embedded PostgreSQL, a free
   port), and the time until ``POST /v1/memories`` first answers 201 (database init, migrations,
   the encoder's graph built or exported, the first embedding); then the server process's RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "sentence-transformers", "scipy", "scikit-learn", "sympy")


@dataclass
class Result:
    ref: str
    install_s: float
    venv_mb: float
    largest: list[tuple[str, float]]
    heavy: list[str]
    first_add_s: float
    server_rss_mb: float
    venv_after_run_mb: float


def sh(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True).stdout


def clone(ref: str, dest: Path) -> str:
    if dest.exists():
        shutil.rmtree(dest)
    sh("git", "clone", "--quiet", "--no-checkout", str(ROOT), str(dest))
    sh("git", "checkout", "--quiet", sh("git", "rev-parse", ref, cwd=ROOT).strip(), cwd=dest)
    return sh("git", "log", "-1", "--format=%h %s", cwd=dest).strip()[:70]


def size_mb(path: Path) -> float:
    total = sum(p.lstat().st_size for p in path.rglob("*") if not p.is_symlink())
    return total / 1e6


def packages(venv: Path) -> tuple[list[tuple[str, float]], list[str]]:
    listed = json.loads(sh(str(venv / "bin" / "pip"), "list", "--format=json"))
    names = {p["name"].lower().replace("_", "-") for p in listed}
    site = next((venv / "lib").glob("python*/site-packages"))
    sizes = [(p.name, size_mb(p)) for p in site.iterdir() if p.is_dir()]
    largest = sorted(sizes, key=lambda item: -item[1])[:6]
    return largest, [name for name in HEAVY if name in names]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def first_add(checkout: Path, data_dir: Path, timeout_s: float) -> tuple[float, float]:
    """Seconds from `make run` to the first 201 of POST /v1/memories, and the server's RSS."""
    port = free_port()
    # As on a user's machine: bytecode is written on first import (some sandboxes turn it off).
    kept = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
    kept.pop("PYTHONDONTWRITEBYTECODE", None)
    env = {
        **kept,
        "MEMVAULT_DATA_DIR": str(data_dir),
        "MEMVAULT_PORT": str(port),
        "MEMVAULT_AUTH": "off",
    }
    body = json.dumps({"content": "I prefer window seats on long flights", "user_id": "bench"})
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/memories",
        data=body.encode(),
        headers={"content-type": "application/json"},
    )
    log = (data_dir.parent / f"{data_dir.name}.log").open("w")
    began = time.perf_counter()
    make = subprocess.Popen(
        ["make", "run"], cwd=checkout, env=env, stdout=log, stderr=log, start_new_session=True
    )
    try:
        while time.perf_counter() - began < timeout_s:
            try:
                with urllib.request.urlopen(request, timeout=120) as answer:
                    if answer.status == 201:
                        elapsed = time.perf_counter() - began
                        return elapsed, server_rss_mb(make.pid)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        raise TimeoutError(f"no answer in {timeout_s:.0f} s; see {log.name}")
    finally:
        os.killpg(make.pid, signal.SIGINT)
        try:
            make.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(make.pid, signal.SIGKILL)
        log.close()


def server_rss_mb(make_pid: int) -> float:
    """The `memvault serve` process (PostgreSQL's processes are not counted)."""
    for child in psutil.Process(make_pid).children(recursive=True):
        if "serve" in child.cmdline() and "python" in (child.name() + child.exe()):
            return float(child.memory_info().rss) / 1e6
    raise LookupError("no memvault serve process under make run")


def measure(ref: str, workdir: Path, timeout_s: float) -> Result:
    checkout = workdir / ref.replace("/", "_")
    label = clone(ref, checkout)
    print(f"## {ref}: {label}", flush=True)
    began = time.perf_counter()
    sh("make", ".venv/.installed", cwd=checkout)
    install_s = time.perf_counter() - began
    largest, heavy = packages(checkout / ".venv")
    venv_mb = size_mb(checkout / ".venv")
    print(f"installed in {install_s:.0f} s, venv {venv_mb:.0f} MB", flush=True)
    data_dir = workdir / f"data-{checkout.name}"
    shutil.rmtree(data_dir, ignore_errors=True)  # a fresh store: no database, no cached graph
    first_s, rss = first_add(checkout, data_dir, timeout_s)
    print(f"first answered add {first_s:.1f} s, server RSS {rss:.0f} MB", flush=True)
    after_mb = size_mb(checkout / ".venv")  # with the bytecode the first run wrote
    return Result(ref, install_s, venv_mb, largest, heavy, first_s, rss, after_mb)


def report(results: list[Result]) -> None:
    print("\n| | " + " | ".join(r.ref for r in results) + " |")
    print("|---|" + "---|" * len(results))
    rows = [
        ("virtualenv after install (MB)", [f"{r.venv_mb:.0f}" for r in results]),
        ("virtualenv after the first run (MB)", [f"{r.venv_after_run_mb:.0f}" for r in results]),
        ("install, warm cache (s)", [f"{r.install_s:.0f}" for r in results]),
        ("`make run` to first answered add (s)", [f"{r.first_add_s:.1f}" for r in results]),
        ("server RSS after it (MB)", [f"{r.server_rss_mb:.0f}" for r in results]),
        ("heavy packages", [", ".join(r.heavy) or "none" for r in results]),
    ]
    for name, cells in rows:
        print(f"| {name} | " + " | ".join(cells) + " |")
    for r in results:
        largest = ", ".join(f"{name} {mb:.0f}" for name, mb in r.largest)
        print(f"\nlargest in {r.ref} (MB): {largest}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ref", default="HEAD", help="this tree's commit")
    parser.add_argument("--baseline", default="ae7939a", help="main to compare against")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.gettempdir()) / "memvault-install-bench"
    workdir.mkdir(parents=True, exist_ok=True)
    refs = [args.ref] + ([args.baseline] if args.baseline else [])
    report([measure(ref, workdir, args.timeout) for ref in refs])


if __name__ == "__main__":
    main()
