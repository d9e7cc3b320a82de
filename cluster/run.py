"""`make cluster-test`: build the cluster in network namespaces, drive a mixed workload of two
tenants, inject faults one after another under that load, then check every acknowledged write.

Topology (one bridge, 10.77.0.0/24):
  ctl  10.77.0.10  etcd, HAProxy (:5000, to the primary by Patroni's /primary; :8765, to the
                   API hosts that answer /ready), PgBouncer (:6432)
  pg1..pg3 .11-.13 Patroni + PostgreSQL 16 + pgvector, synchronous mode, failsafe mode
  api1, api2 .21-.22  memvault serve (through PgBouncer, transaction mode)
  wk1, wk2  .31-.32   memvault worker
    --asynchronous   replicas stream asynchronously (to measure what a failover loses)
    --stall-replicas S   the replicas are cut off from the primary S s before it dies
    --faults a,b     only these faults, in the drill's order (names: kill_primary, partition,
                     pgbouncer, worker, api, etcd_down, replica_lag)
    --read-replicas  the API hosts read from a replica (HAProxy :5001, Patroni's /replica);
                     replica_lag needs it
Run as root. Prints the figures and writes them to figures.json in its working directory
(under /tmp, with every process's log).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cluster import hosts as net
from cluster.services import REQUEST_TIMEOUT_S, Topology, install_missing
from cluster.workload import ANSWER_LOST, WRITES, Answer, Call, Workload, verify
from memvault.consistency import READ_AFTER_HEADER as READ_AFTER
from memvault.consistency import WRITTEN_HEADER as WRITTEN
from memvault.crypto.envelope import generate_key

CLIENTS = 8


def build(root: Path, synchronous: bool, read_replicas: bool = False) -> Topology:
    logs = root / "logs"
    logs.mkdir(parents=True)
    net.make_bridge()

    def host(name: str, last: int) -> net.Host:
        made = net.Host(name, f"{net.NET}.{last}", logs)
        made.create()
        return made

    return Topology(
        root=root,
        ctl=host("ctl", 10),
        pgs=[host(f"pg{i}", 10 + i) for i in (1, 2, 3)],
        apis=[host(f"api{i}", 20 + i) for i in (1, 2)],
        workers=[host(f"wk{i}", 30 + i) for i in (1, 2)],
        key=generate_key(),
        synchronous=synchronous,
        read_replicas=read_replicas,
    )


def start(topo: Topology, figures: dict[str, Any]) -> dict[str, str]:
    began = time.monotonic()
    topo.start_etcd()  # Patroni waits for it by itself
    topo.start_patroni(topo.pgs[0])
    topo.wait_for_cluster(180, replicas=0)
    for pg in topo.pgs[1:]:
        topo.start_patroni(pg)
    topo.wait_for_cluster(240, replicas=2)
    topo.start_haproxy()
    topo.start_pgbouncer()
    _create_database(topo)
    keys = {
        tenant: json.loads(topo.cli("api-keys", "create", "--tenant", tenant, "--json"))["key"]
        for tenant in ("acme", "globex")
    }
    for api in topo.apis:
        topo.start_api(api)
    for worker in topo.workers:
        topo.start_worker(worker)
    _wait_ready([f"http://{a.ip}:8765" for a in topo.apis], 180)
    figures["cluster_start_s"] = round(time.monotonic() - began, 1)
    return keys


def _create_database(topo: Topology) -> None:
    import psycopg

    deadline = time.monotonic() + 60
    while True:
        try:
            with psycopg.connect(
                topo.direct_url.replace("/memvault", "/postgres"), autocommit=True
            ) as conn:
                if not conn.execute(
                    "SELECT 1 FROM pg_database WHERE datname = 'memvault'"
                ).fetchone():
                    conn.execute("CREATE DATABASE memvault")
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def _wait_ready(urls: list[str], deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    for url in urls:
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not come up")
            time.sleep(1)


# --- faults ------------------------------------------------------------------------------------


async def _phase(
    work: Workload, name: str, inject: Callable[[], Awaitable[dict[str, Any]]], settle_s: float
) -> dict[str, Any]:
    """Inject one fault under load; then how the writes went from the fault on."""
    await asyncio.sleep(settle_s)
    at = time.monotonic()
    print(f"[{time.strftime('%H:%M:%S')}] fault: {name}", flush=True)
    result = {"phase": name, **await inject()}
    at = result.pop("at", at)  # when the fault itself struck, when it came after a set-up
    await asyncio.sleep(settle_s)
    # Every answer that came after the fault, the requests already in flight at it included.
    after = [a for a in work.answers if a.ended >= at]
    result.update(_summary(after, at))
    result.update(_calls([c for c in work.calls if c.ended >= at]))
    print(f"    {json.dumps(result)}", flush=True)
    return result


def _summary(answers: list[Answer], at: float) -> dict[str, Any]:
    writes = [a for a in answers if a.op in WRITES]
    ok_writes = sorted(a.ended for a in writes if 200 <= a.status < 300 and a.started >= at)
    failed = [a for a in answers if not 200 <= a.status < 300]
    slowest_503 = max((a.ended - a.started for a in failed if a.status == 503), default=0.0)
    slowest = max((a.ended - a.started for a in answers), default=0.0)
    return {
        "slowest_answer_s": round(slowest, 2),
        "requests": len(answers),
        "errors": len(failed),
        "error_codes": _counts(f"{a.status} {a.code}".strip() for a in failed),
        "retry_after_on_503": sorted({a.retry_after or "-" for a in failed if a.status == 503}),
        "slowest_503_s": round(slowest_503, 2),
        "writes_resume_s": round(ok_writes[0] - at, 2) if ok_writes else None,
    }


def _calls(calls: list[Call]) -> dict[str, Any]:
    """What the calls came to once the client had sent them again as it may. A keyed write
    answered ``request_done_answer_lost`` was done (stored once) but failed for its client:
    counted apart from the writes that failed otherwise."""
    failed = [c for c in calls if not 200 <= c.status < 300]
    lost = [c for c in failed if c.op in WRITES and c.code == ANSWER_LOST]
    return {
        "calls": len(calls),
        "tries": sum(c.tries for c in calls),
        "calls_sent_again": sum(c.tries > 1 for c in calls),
        "failed_calls": len(failed),
        "failed_reads": sum(c.op not in WRITES for c in failed),
        "failed_keyed_writes": sum(c.op in WRITES for c in failed) - len(lost),
        "answer_lost": len(lost),
        "failed_call_codes": _counts(f"{c.status} {c.code}".strip() for c in failed),
    }


def _counts(values: Any) -> dict[str, int]:
    counted: dict[str, int] = {}
    for v in values:
        counted[v] = counted.get(v, 0) + 1
    return counted


def faults(
    topo: Topology, work: Workload, stall_replicas_s: float
) -> list[Callable[[], Awaitable[dict[str, Any]]]]:
    async def kill_primary() -> dict[str, Any]:
        leader = topo.leader()
        victim = next(h for h in topo.pgs if h.name == leader)
        # Replicas cut off from the primary a moment before it died: what was acknowledged
        # meanwhile exists on the dead primary only, unless a synchronous replica had to
        # confirm it first.
        replicas = [h for h in topo.pgs if h is not victim] if stall_replicas_s else []
        for replica in replicas:
            replica.partition_from(victim)
        cut = time.monotonic()
        await asyncio.sleep(stall_replicas_s)
        killed = time.monotonic()
        victim.kill_all()
        for replica in replicas:
            replica.heal()
        new = None
        while time.monotonic() - killed < 90:
            new = topo.leader()
            if new and new != leader:
                break
            await asyncio.sleep(0.2)
        failover = time.monotonic() - killed
        topo.start_patroni(victim)  # it comes back as a replica (pg_rewind)
        return {
            "at": killed,
            "fault": "kill -9 primary host",
            "old": leader,
            "new": new,
            "failover_s": round(failover, 2),
            "replicas_cut_off_s": stall_replicas_s,
            "writes_acknowledged_while_cut_off": sum(
                len(a.ids)
                for a in work.answers
                if a.op in WRITES and 200 <= a.status < 300 and cut <= a.ended <= killed
            ),
        }

    async def partition() -> dict[str, Any]:
        for api in topo.apis:
            api.partition_from(topo.ctl)
        await asyncio.sleep(REQUEST_TIMEOUT_S + 5)
        healed = time.monotonic()
        for api in topo.apis:
            api.heal()
        return {
            "fault": "API hosts partitioned from the database path",
            "held_s": REQUEST_TIMEOUT_S + 5,
            "healed_at_s": round(healed, 1),
        }

    async def pgbouncer() -> dict[str, Any]:
        topo.restart_pgbouncer()
        return {"fault": "PgBouncer kill -9 and restart"}

    async def worker() -> dict[str, Any]:
        topo.workers[0].kill_all()
        await asyncio.sleep(3)
        topo.start_worker(topo.workers[0])
        return {"fault": "kill -9 worker host wk1 (restarted after 3 s)"}

    async def api() -> dict[str, Any]:
        topo.apis[0].kill_all()
        await asyncio.sleep(3)
        topo.start_api(topo.apis[0])
        return {"fault": "kill -9 API host api1 (restarted after 3 s)"}

    async def etcd_down() -> dict[str, Any]:
        for pid in topo.ctl.pids():
            if Path(f"/proc/{pid}/comm").read_text().strip() == "etcd":
                os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(20)
        primaries = topo.answering_primary()
        topo.start_etcd()
        return {"fault": "etcd kill -9 for 20 s", "primary_while_down": primaries}

    async def replica_lag() -> dict[str, Any]:
        """Replay paused on the replicas: a write acknowledged through api1 is read through api2
        without its token (stale, for at most the lag bound) and with it (at once)."""
        if not topo.read_replicas:
            return {"fault": "replica lag", "skipped": "run with --read-replicas"}
        urls = [f"http://{a.ip}:8765" for a in topo.apis]
        # A tenant of its own: api2 sends its reads to the primary while the load's tenants
        # keep using the primary there (read-your-writes within a process), which would hide
        # what a stale replica serves.
        created = await asyncio.to_thread(
            topo.cli, "api-keys", "create", "--tenant", "lag-probe", "--json"
        )
        headers = {"Authorization": f"Bearer {json.loads(created)['key']}"}
        replicas = topo.replicas()
        await asyncio.to_thread(topo.maintenance, True)
        await asyncio.to_thread(_replay, replicas, "pause")
        paused = time.monotonic()
        found: dict[str, Any] = {
            "fault": "replica replay paused",
            "replicas": [h.name for h in replicas],
        }
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S + 5, headers=headers) as http:

            async def listed(url: str, user: str, memory_id: str, token: str | None) -> bool:
                extra = {READ_AFTER: token} if token else {}
                page = await http.get(
                    f"{url}/v1/memories", params={"user_id": user, "limit": 100}, headers=extra
                )
                page.raise_for_status()
                return any(m["id"] == memory_id for m in page.json()["results"])

            async def write(user: str) -> tuple[str, str | None, float]:
                added = await http.post(
                    f"{urls[0]}/v1/memories?wait=true",
                    json={"user_id": user, "content": f"replica lag probe {time.time()}"},
                )
                added.raise_for_status()
                return added.json()["id"], added.headers.get(WRITTEN), time.monotonic()

            await asyncio.sleep(1.5)  # the replica is behind the writes of the load by now
            # Two callers (users): a read that fell back to the primary makes its caller's
            # next reads wait for the replica (reads never go back in time), so the stale
            # read without a token is measured on a caller that never used the token.
            stale_id, _, acked = await write("lag-a")
            token_id, token, _ = await write("lag-b")
            found["paused_before_write_s"] = round(acked - paused, 2)
            found["token"] = token
            found["seen_without_token_at_once"] = await listed(urls[1], "lag-b", token_id, None)
            began = time.monotonic()
            found["seen_with_token"] = await listed(urls[1], "lag-b", token_id, token)
            found["read_with_token_s"] = round(time.monotonic() - began, 2)
            stale_for = None
            while time.monotonic() - acked < 30:
                if await listed(urls[1], "lag-a", stale_id, None):
                    stale_for = time.monotonic() - acked
                    break
                await asyncio.sleep(0.2)
            # How long api2 served the other caller a replica without the write: the data it
            # served was at most paused_before_write_s + this old (the bound: read_max_lag_s).
            found["stale_without_token_s"] = None if stale_for is None else round(stale_for, 2)
            found["replay_paused_for_s"] = round(time.monotonic() - paused, 1)
        await asyncio.to_thread(_replay, replicas, "resume")
        await asyncio.to_thread(topo.maintenance, False)
        return found

    return [kill_primary, partition, pgbouncer, worker, api, etcd_down, replica_lag]


def _replay(replicas: list[net.Host], what: str) -> None:
    import psycopg

    for host in replicas:
        with psycopg.connect(
            f"postgresql://postgres@{host.ip}:5432/memvault", autocommit=True
        ) as conn:
            conn.execute(f"SELECT pg_wal_replay_{what}()")


async def drive(
    topo: Topology, keys: dict[str, str], figures: dict[str, Any], args: argparse.Namespace
) -> None:
    only = [f for f in args.faults.split(",") if f]
    urls = [f"http://{a.ip}:8765" for a in topo.apis]
    work = Workload([topo.front_url], keys, client_timeout_s=REQUEST_TIMEOUT_S + 20)
    load = asyncio.create_task(work.run(CLIENTS))
    chosen = [f for f in faults(topo, work, args.stall_replicas) if not only or f.__name__ in only]
    figures["phases"] = [await _phase(work, f.__name__, f, 12) for f in chosen]
    work.stop.set()
    await load
    ok = [a for a in work.answers if 200 <= a.status < 300]
    figures["load"] = {
        "clients": CLIENTS,
        "requests": len(work.answers),
        "calls": len(work.calls),
        "tries": sum(c.tries for c in work.calls),
        "failed_calls": sum(not 200 <= c.status < 300 for c in work.calls),
        "answer_lost": sum(c.code == ANSWER_LOST for c in work.calls),
        "ok": len(ok),
        "p50_ms": round(statistics.median(a.ended - a.started for a in ok) * 1000, 1)
        if ok
        else None,
    }
    figures["check"] = await verify(urls[1], keys, work.acked, work.sent, work.lost, deadline_s=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--asynchronous", action="store_true")
    parser.add_argument("--faults", default="")
    parser.add_argument("--stall-replicas", type=float, default=0.0)
    parser.add_argument("--read-replicas", action="store_true")
    args = parser.parse_args()
    install_missing()
    root = Path(tempfile.mkdtemp(prefix="memvault-cluster-"))
    root.chmod(0o755)  # PostgreSQL and PgBouncer run as another user, under this directory
    figures: dict[str, Any] = {
        "root": str(root),
        "synchronous": not args.asynchronous,
        "replicas_cut_off_s": args.stall_replicas,
        "read_replicas": args.read_replicas,
    }
    began = time.monotonic()
    topo = build(root, synchronous=not args.asynchronous, read_replicas=args.read_replicas)
    try:
        keys = start(topo, figures)
        print(f"cluster up in {figures['cluster_start_s']} s; logs in {root / 'logs'}", flush=True)
        asyncio.run(drive(topo, keys, figures, args))
    finally:
        for h in [*topo.apis, *topo.workers, *topo.pgs, topo.ctl]:
            h.destroy()
        net.remove_bridge()
        figures["total_s"] = round(time.monotonic() - began, 1)
        (root / "figures.json").write_text(json.dumps(figures, indent=1))
        print(json.dumps(figures, indent=1))
    check = figures.get("check", {})
    failures = (
        "missing",
        "content_differs",
        "duplicated",
        "sent_stored_twice",
        "answer_lost_not_stored",
        "in_another_tenant",
        "not_searchable",
    )
    # Behind HAProxy, with calls sent again, losing an API host fails no read and no keyed
    # write but one whose answer was lost with it (done, its retry told so: answer_lost).
    api_failed = [
        p["failed_reads"] + p["failed_keyed_writes"]
        for p in figures.get("phases", [])
        if p.get("phase") == "api"
    ]
    return 1 if any(check.get(f, 1) for f in failures) or any(api_failed) else 0


if __name__ == "__main__":
    sys.exit(main())
