"""The package's public surface is exactly what ``__all__`` promises."""

from __future__ import annotations

import memvault


def test_all_names_exist_and_nothing_public_is_missing() -> None:
    assert sorted(memvault.__all__) == memvault.__all__
    for name in memvault.__all__:
        assert hasattr(memvault, name), name
    public = {n for n in vars(memvault) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(memvault, n)).__name__ == "module"}
    assert public - modules == set(memvault.__all__) - {"__version__"}


def test_sync_and_async_faces_offer_the_same_methods() -> None:
    sync = {n for n in vars(memvault.Memory) if not n.startswith("_")}
    async_ = {n for n in vars(memvault.AsyncMemory) if not n.startswith("_")}
    async_only = {"open", "for_tenant", "backend", "close", "run_worker"}
    assert async_ - async_only <= sync
