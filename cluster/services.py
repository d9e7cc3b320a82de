"""The cluster's services: etcd, three Patroni-managed PostgreSQL 16 + pgvector servers (the
``pgserver`` wheel's binaries), HAProxy routing to the primary by Patroni's health endpoint,
PgBouncer in transaction mode, memvault API and worker processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pgserver

from cluster.hosts import Host

PG_BIN = Path(pgserver.__file__).parent / "pginstall" / "bin"
PG_USER = "pgserver"  # PostgreSQL will not run as root; the wheel's own user runs it
PACKAGES = {
    "patroni": "patroni",
    "etcd": "etcd-server",
    "haproxy": "haproxy",
    "pgbouncer": "pgbouncer",
    "iptables": "iptables",
}


def install_missing() -> None:
    missing = [pkg for binary, pkg in PACKAGES.items() if _which(binary) is None]
    if missing:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-q"], check=True, env=env, capture_output=True)
        subprocess.run(
            ["apt-get", "install", "-y", "--no-install-recommends", *missing],
            check=True,
            env=env,
            capture_output=True,
        )
    _ensure_user(PG_USER)


def _which(binary: str) -> str | None:
    return shutil.which(binary) or shutil.which(f"/usr/sbin/{binary}")


def _ensure_user(name: str) -> None:
    if subprocess.run(["id", name], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--system", "--no-create-home", name], check=True)


@dataclass
class Topology:
    root: Path
    ctl: Host
    pgs: list[Host]
    apis: list[Host]
    workers: list[Host]
    key: str
    synchronous: bool = True
    read_replicas: bool = False  # API hosts read from a replica (MEMVAULT_DATABASE_READ_URL)

    @property
    def pooled_url(self) -> str:
        return f"postgresql://postgres@{self.ctl.ip}:6432/memvault"

    @property
    def direct_url(self) -> str:
        return f"postgresql://postgres@{self.ctl.ip}:5000/memvault"

    @property
    def front_url(self) -> str:
        """The API as clients reach it: HAProxy in front of the API hosts."""
        return f"http://{self.ctl.ip}:8765"

    @property
    def replica_url(self) -> str:
        return f"postgresql://postgres@{self.ctl.ip}:5001/memvault"

    def replicas(self) -> list[Host]:
        leader = self.leader()
        return [h for h in self.pgs if h.name != leader]

    # --- etcd --------------------------------------------------------------------------------

    def start_etcd(self) -> None:
        data = self.root / "etcd"
        data.mkdir(exist_ok=True)
        peer = "http://127.0.0.1:2380"
        self.ctl.start(
            "etcd",
            [
                "etcd", "--name", "e1", "--data-dir", str(data),
                "--listen-client-urls", f"http://{self.ctl.ip}:2379,http://127.0.0.1:2379",
                "--advertise-client-urls", f"http://{self.ctl.ip}:2379",
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"e1={peer}",
            ],
        )  # fmt: skip

    # --- Patroni -----------------------------------------------------------------------------

    def start_patroni(self, host: Host) -> None:
        home = self.root / host.name
        home.mkdir(exist_ok=True)
        shutil.chown(home, PG_USER)
        config = home / "patroni.yml"
        config.write_text(
            json.dumps(_patroni_config(host, home, self.ctl.ip, self.synchronous), indent=1)
        )
        host.start("patroni", ["patroni", str(config)], user=PG_USER)

    def _cluster(self) -> dict[str, Any]:
        """Patroni's view of the cluster, from whichever member answers ({} when none does)."""
        for host in self.pgs:
            try:
                with urllib.request.urlopen(f"http://{host.ip}:8008/cluster", timeout=1) as r:
                    return dict(json.load(r))
            except OSError:
                continue
        return {}

    def members(self) -> list[dict[str, Any]]:
        return list(self._cluster().get("members", []))

    def maintenance(self, on: bool) -> None:
        """Patroni's pause (maintenance mode): it leaves PostgreSQL as it is — a replica's
        replay paused by hand stays paused (Patroni resumes it otherwise)."""
        body = json.dumps({"pause": on}).encode()
        for host in self.pgs:
            request = urllib.request.Request(
                f"http://{host.ip}:8008/config", data=body, method="PATCH"
            )
            try:
                with urllib.request.urlopen(request, timeout=2):
                    break
            except OSError:
                continue
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if bool(self._cluster().get("pause", False)) == on:
                return
            time.sleep(0.5)
        raise TimeoutError(f"Patroni did not {'pause' if on else 'resume'}")

    def leader(self) -> str | None:
        running = [
            m["name"] for m in self.members() if m["role"] == "leader" and m["state"] == "running"
        ]
        return running[0] if running else None

    def answering_primary(self) -> list[str]:
        """The members whose own /primary health check answers 200 (no DCS needed)."""
        found = []
        for host in self.pgs:
            try:
                with urllib.request.urlopen(f"http://{host.ip}:8008/primary", timeout=2):
                    found.append(host.name)
            except OSError:
                continue
        return found

    def wait_for_cluster(self, deadline_s: float, replicas: int = 2) -> float:
        """Seconds until a leader runs and ``replicas`` replicas stream (or raise)."""
        start = time.monotonic()
        while time.monotonic() - start < deadline_s:
            members = self.members()
            streaming = [
                m
                for m in members
                if m["role"] != "leader" and m["state"] in ("streaming", "running")
            ]
            if self.leader() and len(streaming) >= replicas:
                return time.monotonic() - start
            time.sleep(0.5)
        raise TimeoutError(f"cluster not up after {deadline_s} s: {self.members()}")

    # --- HAProxy and PgBouncer ---------------------------------------------------------------

    def start_haproxy(self) -> None:
        servers = "\n".join(f"    server {h.name} {h.ip}:5432 check port 8008" for h in self.pgs)
        apis = "\n".join(f"    server {h.name} {h.ip}:8765 check" for h in self.apis)
        config = self.root / "haproxy.cfg"
        config.write_text(
            f"""global
    maxconn 1000
defaults
    mode tcp
    timeout connect 2s
    timeout client 30m
    timeout server 30m
    timeout check 1s
listen primary
    bind {self.ctl.ip}:5000
    bind 127.0.0.1:5000
    option httpchk GET /primary
    http-check expect status 200
    default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions
{servers}
listen replicas
    bind {self.ctl.ip}:5001
    bind 127.0.0.1:5001
    # One replica at a time: memvault's read router measures one replica's replay position.
    balance first
    option httpchk GET /replica
    http-check expect status 200
    default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions
{servers}
listen api
    # The clients' one address: the API hosts that answer /ready, in turn. A request whose
    # connection to a host fails goes to the other (redispatch); one cut off mid-answer comes
    # back 502 and the client sends it again (a write with its Idempotency-Key).
    mode http
    bind {self.ctl.ip}:8765
    bind 127.0.0.1:8765
    balance roundrobin
    timeout client {int(REQUEST_TIMEOUT_S) + 30}s
    timeout server {int(REQUEST_TIMEOUT_S) + 20}s
    option httpchk GET /ready
    http-check expect status 200
    # A loaded host may take a while over /ready: a dead one is still out within 1.5 s.
    timeout check 2s
    retries 3
    option redispatch 1
    default-server inter 500ms fall 3 rise 2
{apis}
"""
        )
        self.ctl.start("haproxy", ["haproxy", "-db", "-f", str(config)])

    def start_pgbouncer(self) -> None:
        home = self.root / "pgbouncer"
        home.mkdir(exist_ok=True)
        (home / "users.txt").write_text('"postgres" ""\n')
        config = home / "pgbouncer.ini"
        config.write_text(
            f"""[databases]
memvault = host=127.0.0.1 port=5000 dbname=memvault

[pgbouncer]
listen_addr = {self.ctl.ip}
listen_port = 6432
unix_socket_dir =
auth_type = trust
auth_file = {home / "users.txt"}
pool_mode = transaction
default_pool_size = 20
max_client_conn = 500
server_reset_query =
server_connect_timeout = 3
server_login_retry = 1
query_wait_timeout = 8
logfile = {home / "pgbouncer.log"}
pidfile = {home / "pgbouncer.pid"}
"""
        )
        shutil.chown(home, PG_USER)
        for f in home.iterdir():
            shutil.chown(f, PG_USER)
        self.ctl.start("pgbouncer", [str(_which("pgbouncer")), "-u", PG_USER, str(config)])

    def restart_pgbouncer(self) -> None:
        subprocess.run(["pkill", "-9", "-F", str(self.root / "pgbouncer" / "pgbouncer.pid")])
        (self.root / "pgbouncer" / "pgbouncer.pid").unlink(missing_ok=True)
        self.start_pgbouncer()

    # --- memvault ----------------------------------------------------------------------------

    def memvault_env(self, host: Host) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
        env.update(
            MEMVAULT_DATABASE_URL=self.pooled_url,
            MEMVAULT_DATABASE_POOLER="transaction",
            MEMVAULT_DATABASE_DIRECT_URL=self.direct_url,
            MEMVAULT_ENCRYPTION_KEY=self.key,
            MEMVAULT_DATA_DIR=str(self.root / host.name),
            MEMVAULT_EMBEDDING_PROVIDER="hash",
            MEMVAULT_RATE_LIMIT_PER_S="0",
            MEMVAULT_REQUEST_TIMEOUT_S=str(REQUEST_TIMEOUT_S),
            MEMVAULT_WORKER_LEASE_S="10",
            MEMVAULT_POOL_SIZE="5",
            MEMVAULT_LOG_LEVEL="WARNING",
            HF_HUB_OFFLINE="1",
        )
        if self.read_replicas:
            env["MEMVAULT_DATABASE_READ_URL"] = self.replica_url
        return env

    def memvault(self, host: Host, *args: str) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "memvault.cli", *args]
        return host.start("memvault", command, env=self.memvault_env(host))

    def start_api(self, host: Host) -> None:
        self.memvault(host, "serve", "--host", host.ip, "--port", "8765")

    def start_worker(self, host: Host) -> None:
        self.memvault(host, "worker")

    def cli(self, *args: str) -> str:
        """A memvault command from the harness's own host, past the pooler."""
        env = self.memvault_env(self.ctl)
        done = subprocess.run(
            [sys.executable, "-m", "memvault.cli", *args],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout


REQUEST_TIMEOUT_S = 10.0


def _patroni_config(host: Host, home: Path, etcd_ip: str, synchronous: bool) -> dict[str, Any]:
    return {
        "scope": "memvault",
        "name": host.name,
        "restapi": {"listen": f"{host.ip}:8008", "connect_address": f"{host.ip}:8008"},
        "etcd3": {"hosts": f"{etcd_ip}:2379"},
        "bootstrap": {
            "dcs": {
                "ttl": 10,
                "loop_wait": 2,
                "retry_timeout": 4,
                "maximum_lag_on_failover": 1048576,
                "synchronous_mode": synchronous,
                # Without etcd, a primary that still reaches every member keeps writing.
                "failsafe_mode": True,
                "postgresql": {
                    "use_pg_rewind": True,
                    "parameters": {
                        "wal_level": "replica",
                        "hot_standby": "on",
                        "wal_log_hints": "on",
                        "max_wal_senders": 10,
                        "max_replication_slots": 10,
                        "max_connections": 100,
                    },
                },
            },
            "initdb": [{"encoding": "UTF8"}, {"locale": "C"}],
        },
        "postgresql": {
            "listen": f"{host.ip},127.0.0.1:5432",
            "connect_address": f"{host.ip}:5432",
            "data_dir": str(home / "data"),
            "bin_dir": str(PG_BIN),
            "pgpass": str(home / "pgpass"),
            "authentication": {
                "superuser": {"username": "postgres", "password": "postgres"},
                "replication": {"username": "replicator", "password": "replicator"},
            },
            "pg_hba": [
                "local all all trust",
                "host all all 0.0.0.0/0 trust",
                "host replication all 0.0.0.0/0 trust",
            ],
            "parameters": {
                "unix_socket_directories": str(home),
                "shared_buffers": "64MB",
                "jit": "off",
            },
        },
    }
