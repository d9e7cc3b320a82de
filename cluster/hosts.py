"""Hosts as Linux network namespaces on one bridge, and the processes each runs.

Every host is a namespace ``mv-<name>`` with one veth leg on the bridge ``mvbr0``
(10.77.0.0/24, the harness itself is 10.77.0.1 in the root namespace). Killing a host kills
every process in its namespace (``ip netns pids``), which is what a power cut does; a
partition is an iptables rule inside one host's namespace.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

BRIDGE = "mvbr0"
PREFIX = "mv-"
NET = "10.77.0"


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=check, capture_output=True, text=True)


@dataclass
class Host:
    name: str
    ip: str
    logs: Path
    _outs: list[IO[bytes]] = field(default_factory=list)

    @property
    def ns(self) -> str:
        return PREFIX + self.name

    def create(self) -> None:
        veth, peer = f"mvh-{self.name}", f"mvb-{self.name}"
        sh("ip", "netns", "add", self.ns)
        sh("ip", "link", "add", veth, "type", "veth", "peer", "name", peer)
        sh("ip", "link", "set", veth, "netns", self.ns)
        sh("ip", "link", "set", peer, "master", BRIDGE)
        sh("ip", "link", "set", peer, "up")
        self.exec("ip", "addr", "add", f"{self.ip}/24", "dev", veth)
        self.exec("ip", "link", "set", veth, "up")
        self.exec("ip", "link", "set", "lo", "up")

    def exec(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return sh("ip", "netns", "exec", self.ns, *args, check=check)

    def start(
        self, label: str, args: Sequence[str], env: dict[str, str] | None = None, user: str = ""
    ) -> subprocess.Popen[bytes]:
        """A long-running process inside this host, its output in logs/<host>-<label>.log."""
        as_user = ["runuser", "-u", user, "--"] if user else []
        out = (self.logs / f"{self.name}-{label}.log").open("ab")
        self._outs.append(out)
        return subprocess.Popen(
            ["ip", "netns", "exec", self.ns, *as_user, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )

    def pids(self) -> list[int]:
        found = sh("ip", "netns", "pids", self.ns, check=False).stdout.split()
        return [int(p) for p in found]

    def kill_all(self) -> None:
        """SIGKILL every process in the namespace: the host loses power."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.1)

    def partition_from(self, *others: Host) -> None:
        for other in others:
            for chain, flag in (("OUTPUT", "-d"), ("INPUT", "-s")):
                self.exec("iptables", "-A", chain, flag, other.ip, "-j", "DROP")

    def heal(self) -> None:
        self.exec("iptables", "-F", "OUTPUT")
        self.exec("iptables", "-F", "INPUT")

    def destroy(self) -> None:
        self.kill_all()
        sh("ip", "netns", "del", self.ns, check=False)
        sh("ip", "link", "del", f"mvb-{self.name}", check=False)
        for out in self._outs:
            out.close()


def make_bridge() -> None:
    remove_bridge()
    sh("ip", "link", "add", BRIDGE, "type", "bridge")
    sh("ip", "addr", "add", f"{NET}.1/24", "dev", BRIDGE)
    sh("ip", "link", "set", BRIDGE, "up")
    # Bridged frames pass the root namespace's iptables when br_netfilter is loaded: let ours.
    sh("iptables", "-I", "FORWARD", "-i", BRIDGE, "-o", BRIDGE, "-j", "ACCEPT", check=False)


def remove_bridge() -> None:
    for name in sh("ip", "netns", "list", check=False).stdout.split("\n"):
        ns = name.split(" ")[0]
        if ns.startswith(PREFIX):
            for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            sh("ip", "netns", "del", ns, check=False)
    sh("ip", "link", "del", BRIDGE, check=False)
    while (
        sh(
            "iptables", "-D", "FORWARD", "-i", BRIDGE, "-o", BRIDGE, "-j", "ACCEPT", check=False
        ).returncode
        == 0
    ):
        pass
