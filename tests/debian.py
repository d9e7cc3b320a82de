"""Debian packages a test needs (chromium, pgbouncer), installed when missing and CI runs as
root. Two xdist workers may both find one missing at once: dpkg takes one installer at a
time, and a second ``apt-get`` fails at once on its lock (exit status 100), so installs here
queue on a lock of their own and apt is told to wait for dpkg's too."""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

LOCK = Path("/tmp/memvault-tests-apt.lock")
APT = ["apt-get", "-q", "-o", "DPkg::Lock::Timeout=600"]


def install_when_missing(package: str, binary: str) -> bool:
    """Install ``package`` unless ``binary`` exists; False when it is missing and this process
    may not install (not root)."""
    if Path(binary).exists():
        return True
    if os.geteuid() != 0:
        return False
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not Path(binary).exists():  # another worker installed it while this one waited
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            subprocess.run([*APT, "update"], check=True, capture_output=True, env=env)
            subprocess.run(
                [*APT, "install", "-y", "--no-install-recommends", package],
                check=True,
                capture_output=True,
                env=env,
            )
    return Path(binary).exists()
