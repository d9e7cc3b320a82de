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


def _public(cls: type) -> set[str]:
    return {n for n in vars(cls) if not n.startswith("_")}


def test_sync_and_async_faces_offer_the_same_methods() -> None:
    # ``write_once`` serves a keyed write's retries on the server's event loop.
    async_only = {"open", "for_tenant", "close", "write_once"}
    assert _public(memvault.AsyncMemory) - async_only <= _public(memvault.Memory)
    # The operator's door: the same, less what only an event loop can do.
    async_only |= {"of", "memory", "embedder", "active_key_id", "run_worker", "authenticate"}
    async_only |= {"take_rate_token", "warm_model"}
    # The dashboard's session store, which only a served app (on its event loop) reads.
    async_only |= {"session_vault"}
    assert _public(memvault.AsyncAdmin) - async_only <= _public(memvault.Admin)


def test_the_data_face_holds_no_whole_store_work() -> None:
    whole_store = {"list_jobs", "retry_jobs", "reembed", "purge_expired", "rotate_encryption_key"}
    assert not whole_store & (_public(memvault.AsyncMemory) | _public(memvault.Memory))
    assert "backend" not in _public(memvault.AsyncMemory)
