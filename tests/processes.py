"""Real memvault processes for fault tests: `memvault serve` / `memvault worker` in their own
process groups (so a test can SIGKILL one whole), and the embedded PostgreSQL they share, which
a test can stop, start, freeze and thaw under them."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
import psutil

from tests.waiting import NeverHappened, wait_until

# Readiness polls share one plain-HTTP client: `httpx.get` builds a client per call, and with it
# a TLS context that loads the CA bundle (about 29 ms of CPU), so a poll every 20 ms kept a core
# busy beside the server it was waiting for. The servers polled are plain HTTP on 127.0.0.1;
# no connection is kept, so a killed server leaves nothing stale in the pool.
_POLLING = httpx.Client(
    verify=False, trust_env=False, limits=httpx.Limits(max_keepalive_connections=0)
)


def probe(url: str, timeout: float = 2) -> httpx.Response:
    """A GET for a wait loop (raises ``httpx.TransportError`` while nothing listens)."""
    return _POLLING.get(url, timeout=timeout)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def environment(data_dir: Path, **settings: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
    env.update(
        MEMVAULT_DATA_DIR=str(data_dir),
        MEMVAULT_AUTH="off",
        MEMVAULT_RATE_LIMIT_PER_S="0",
        # The faults under test are the store's: hash vectors keep every start fast.
        MEMVAULT_EMBEDDING_PROVIDER="hash",
        MEMVAULT_LOG_LEVEL="WARNING",
        HF_HUB_OFFLINE="1",
    )
    env.update({f"MEMVAULT_{k.upper()}": str(v) for k, v in settings.items()})
    return env


class Process:
    """One `memvault …` command in its own process group, its output kept in a file."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self._out: IO[bytes] = log.open("ab")
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "memvault.cli", *args],
            env=env,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self) -> None:
        """SIGKILL the whole group: no clean-up of any kind runs."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait(timeout=30)
        self._out.close()

    def stop(self, timeout: float = 60) -> int:
        """A clean stop (SIGTERM), as a service manager would do it."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        code = self.popen.wait(timeout=timeout)
        self._out.close()
        return code


class Server(Process):
    def __init__(self, data_dir: Path, log: Path, **settings: Any) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = environment(data_dir, port=self.port, **settings)
        super().__init__(["serve"], env, log)

    def wait_ready(self, timeout: float = 90) -> None:
        def ready() -> bool:
            assert self.popen.poll() is None, self.log.read_text()[-3000:]
            return probe(f"{self.base}/ready").status_code == 200

        try:
            wait_until(ready, timeout, "not ready", ignore=(httpx.TransportError,))
        except NeverHappened as exc:
            raise AssertionError(f"{exc}:\n{self.log.read_text()[-3000:]}") from None


def eventually(check: Callable[[], bool], timeout: float, what: str) -> None:
    wait_until(check, timeout, f"{what}: not", interval=0.2)


class Postmaster:
    """The embedded server of a data directory, handled behind memvault's back."""

    def __init__(self, data_dir: Path) -> None:
        self.pgdata = (data_dir / "pg").resolve()
        self.user = "pgserver" if os.geteuid() == 0 else None

    def pid(self) -> int | None:
        pid_file = self.pgdata / "postmaster.pid"
        if not pid_file.exists():
            return None
        pid = int(pid_file.read_text().split()[0])
        return pid if _alive(pid) else None

    def _socket_dir(self) -> str:
        return (self.pgdata / "postmaster.pid").read_text().splitlines()[4]

    def stop(self) -> None:
        from pgserver._commands import pg_ctl

        self._socket = self._socket_dir()
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self.user, timeout=60)

    def start(self) -> None:
        from pgserver._commands import pg_ctl

        args = ["-w", "-o", '-h ""', "-o", f"-k {self._socket}", "-l", str(self.pgdata / "log")]
        pg_ctl([*args, "start"], pgdata=self.pgdata, user=self.user, timeout=60)

    def processes(self) -> list[psutil.Process]:
        pid = self.pid()
        assert pid is not None
        main = psutil.Process(pid)
        return [main, *main.children(recursive=True)]

    def freeze(self) -> list[psutil.Process]:
        frozen = self.processes()
        for proc in frozen:
            proc.send_signal(signal.SIGSTOP)
        return frozen


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


@dataclass
class Load:
    """Clients adding memories in a loop until stopped, keeping what was acknowledged."""

    base: str
    label: str
    background: bool = False
    batch: int = 1
    acked: dict[str, str] = field(default_factory=dict)  # content -> memory id
    statuses: list[int] = field(default_factory=list)
    bodies: list[str] = field(default_factory=list)  # of 5xx answers
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Load:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def _run(self) -> None:
        n = 0
        with httpx.Client(base_url=self.base, timeout=30) as http:
            while not self._stop.is_set():
                texts = [
                    f"{self.label} note {n + i} token{self.label}x{n + i}"
                    for i in range(self.batch)
                ]
                n += self.batch
                try:
                    answer = self._send(http, texts)
                except httpx.TransportError:
                    time.sleep(0.05)  # load's back-off: the server is gone, not acknowledged
                    continue
                self.statuses.append(answer.status_code)
                if answer.status_code >= 500:
                    self.bodies.append(answer.text)
                    time.sleep(0.05)  # load's back-off after a refusal
                elif answer.status_code == 201:
                    results = answer.json().get("results", [answer.json()])
                    self.acked.update(zip(texts, (r["id"] for r in results), strict=True))

    def _send(self, http: httpx.Client, texts: list[str]) -> httpx.Response:
        params = {"async": "true"} if self.background else {}
        items = [{"content": t, "user_id": "load", "infer": False} for t in texts]
        if self.batch == 1:
            return http.post("/v1/memories", json=items[0], params=params)
        return http.post("/v1/memories/batch", json={"memories": items}, params=params)
