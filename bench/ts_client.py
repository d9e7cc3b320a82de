"""Round-trip latency of ``search`` through the TypeScript client against the Python client,
in one run, against one server.

    .venv/bin/python bench/ts_client.py [--memories 300] [--questions 200] [--rounds 4]

Starts ``memvault serve`` on a private data dir (embedded PostgreSQL, the default local model,
auth and rate limits off, the embedding cache off so no query embedding is reused), stores
``--memories`` synthetic memories for one user through the batch API, then asks distinct
questions through ``MemoryClient`` (sync, httpx) and through ``@memvault/client`` (Node's
``fetch``) in alternating rounds, so both meet the same server in the same state. Needs Node
and a built client (``npm ci`` and ``tsc -p tsconfig.test.json`` in clients/typescript; done
here when missing). Prints p50/p95/p99 per client and the TS / Python ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from _corpus import memories as corpus
from _corpus import questions as corpus_questions
from memvault.client import MemoryClient

from _stats import print_table, summary_ms

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "clients" / "typescript"
USER = "bench-user"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def built_client() -> Path:
    node = shutil.which("node")
    if node is None:
        raise SystemExit("Node.js is needed for the TypeScript client")
    if not (PACKAGE / "node_modules").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=PACKAGE, check=True)
    tsc = PACKAGE / "node_modules" / ".bin" / "tsc"
    subprocess.run([str(tsc), "-p", "tsconfig.test.json"], cwd=PACKAGE, check=True)
    return PACKAGE / "build" / "bench" / "search.js"


def serve(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {
        **os.environ,
        "MEMVAULT_DATA_DIR": str(data_dir),
        "MEMVAULT_PORT": str(port),
        "MEMVAULT_AUTH": "off",
        "MEMVAULT_RATE_LIMIT_PER_S": "0",
        "MEMVAULT_LOG_LEVEL": "WARNING",
        "MEMVAULT_EMBEDDING_CACHE_TTL_S": "0",
        "HF_HUB_OFFLINE": "1",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "memvault.cli", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/ready", timeout=2).status_code == 200:
                return process, url
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    process.terminate()
    raise SystemExit("the server did not start")


def python_round(client: MemoryClient, questions: list[str]) -> list[float]:
    seconds = []
    for query in questions:
        started = time.perf_counter()
        client.search(query, user_id=USER, limit=10)
        seconds.append(time.perf_counter() - started)
    return seconds


def typescript_round(script: Path, url: str, questions: list[str]) -> list[float]:
    job = json.dumps({"url": url, "user": USER, "questions": questions})
    done = subprocess.run(
        ["node", str(script)], input=job, capture_output=True, text=True, check=True
    )
    return [float(s) for s in json.loads(done.stdout)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    script = built_client()
    with tempfile.TemporaryDirectory() as work:
        process, url = serve(Path(work) / "data")
        try:
            with MemoryClient(url) as client:
                items = [
                    {"user_id": USER, "content": t, "infer": False} for t in corpus(args.memories)
                ]
                client.add_many(items, wait=True)
                asked = corpus_questions(args.questions * 2)
                per_round = max(1, args.questions // args.rounds)
                found: dict[str, list[float]] = {"python": [], "typescript": []}
                for r in range(args.rounds):
                    start = r * per_round * 2
                    ours, theirs = (
                        asked[start : start + per_round],
                        asked[start + per_round : start + 2 * per_round],
                    )
                    found["python"] += python_round(client, ours)
                    found["typescript"] += typescript_round(script, url, theirs)
        finally:
            process.terminate()
            process.wait(timeout=60)
    rows = {f"search, {name} client": summary_ms(s) for name, s in found.items()}
    print_table(
        f"search round trip, {args.memories} memories, {len(found['python'])} questions each", rows
    )
    ratio = rows["search, typescript client"]["p95"] / rows["search, python client"]["p95"]
    print(f"\np95 TypeScript / Python: {ratio:.2f}   (load: {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
