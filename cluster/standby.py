"""A hot standby of a local PostgreSQL, on one machine: ``pg_basebackup -R`` of a server the
``pgserver`` wheel runs (listening on a Unix socket only), started from the wheel's binaries on
a socket of its own. For the tests and benchmarks of reads from replicas; the cluster drill
builds its replicas with Patroni instead."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pgserver
import psycopg

PG_BIN = Path(pgserver.__file__).parent / "pginstall" / "bin"
# PostgreSQL will not run as root; the wheel runs its servers as this user.
PG_USER = "pgserver" if os.geteuid() == 0 else None
PORT = 5499  # names the standby's socket file only: it listens on no TCP port


class Standby:
    """The standby of the server whose socket is in ``primary_socket_dir``, kept in ``root``
    (a folder the server's user can reach)."""

    def __init__(self, primary_socket_dir: str, root: Path) -> None:
        self.primary_socket_dir = primary_socket_dir
        self.data_dir = root / "standby"
        self.socket_dir = root / "standby-socket"

    def copy(self) -> None:
        for folder, mode in ((self.data_dir, 0o700), (self.socket_dir, 0o777)):
            folder.mkdir()
            folder.chmod(mode)
            if PG_USER:
                shutil.chown(folder, PG_USER, PG_USER)
        self._run(
            "pg_basebackup",
            *("-h", self.primary_socket_dir, "-U", "postgres", "-D", str(self.data_dir)),
            # A throwaway copy: no fsync of every file (seconds on a busy disk).
            *("-R", "-X", "stream", "-c", "fast", "--no-sync"),
        )

    def start(self) -> None:
        options = f'-h "" -k {self.socket_dir} -p {PORT} -c fsync=off'
        log = str(self.data_dir / "standby.log")
        self._run("pg_ctl", "-D", str(self.data_dir), "-w", "-l", log, "-o", options, "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data_dir), "-w", "-m", mode, "stop")

    def url(self, database: str) -> str:
        return f"postgresql://postgres@/{database}?host={self.socket_dir}&port={PORT}"

    def one(self, database: str, sql: str) -> Any:
        """The first column of ``sql``'s first row, run on the standby as the superuser."""
        with psycopg.connect(self.url(database), autocommit=True) as conn:
            row = conn.execute(sql).fetchone()
        return None if row is None else row[0]

    def _run(self, binary: str, *args: str) -> None:
        subprocess.run([str(PG_BIN / binary), *args], check=True, capture_output=True, user=PG_USER)
