"""Envelope encryption of memory content, key ids and rotation, keyed content hashes.

Every piece of content is sealed with AES-256-GCM under a fresh 96-bit nonce. The associated
data binds a ciphertext to its tenant and row, so a ciphertext copied into another row or
tenant fails to open instead of leaking. A key's id is derived from the key itself (an HMAC of
a fixed label), so ids never need configuring and a wrong key is recognised by its id.

With per-tenant keys, each tenant's keyring seals under the tenant's own data key, which is
stored only wrapped under the master key (``wrap_tenant_key``); ``memvault.keys.data_keys`` loads,
re-wraps and destroys them.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from memvault.errors import ConfigurationError, KeyMismatch, ServerError
from memvault.text import for_hash

KEY_BYTES = 32
NONCE_BYTES = 12
_KEY_ID_LABEL = b"memvault/key-id/v1"
_HASH_KEY_LABEL = b"memvault/content-hash/v1"
_INDEX_KEY_LABEL = b"memvault/blind-index/v1"
_CACHE_KEY_LABEL = b"memvault/embedding-cache/v1"


def _derive(secret: bytes, label: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=label).derive(secret)


@dataclass(frozen=True)
class Sealed:
    ciphertext: bytes
    nonce: bytes
    key_id: str


@dataclass(frozen=True)
class DataKey:
    key_id: str
    secret: bytes = field(repr=False)
    hash_key: bytes = field(repr=False)
    index_key: bytes = field(repr=False)

    @classmethod
    def from_secret(cls, secret: bytes) -> DataKey:
        if len(secret) != KEY_BYTES:
            raise ConfigurationError(
                f"An encryption key must be {KEY_BYTES} bytes, not {len(secret)}."
            )
        key_id = hmac.new(secret, _KEY_ID_LABEL, hashlib.sha256).hexdigest()[:16]
        return cls(
            key_id=key_id,
            secret=secret,
            hash_key=_derive(secret, _HASH_KEY_LABEL),
            index_key=_derive(secret, _INDEX_KEY_LABEL),
        )


def generate_key() -> str:
    """A new random key, base64-encoded, as ``MEMVAULT_ENCRYPTION_KEY`` expects it."""
    return base64.b64encode(secrets.token_bytes(KEY_BYTES)).decode()


def parse_key(encoded: str, *, name: str = "MEMVAULT_ENCRYPTION_KEY") -> bytes:
    try:
        secret = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ConfigurationError(
            f"{name} is not valid base64. Generate a key with `memvault keys generate`."
        ) from exc
    if len(secret) != KEY_BYTES:
        raise ConfigurationError(
            f"{name} must decode to {KEY_BYTES} bytes, it decodes to {len(secret)}. "
            "Generate a key with `memvault keys generate`."
        )
    return secret


class Keyring:
    """The active key that seals new content, and retired keys that may still open old rows."""

    # Why a key id may be missing, for the error that says so.
    _missing = "which is not configured"

    def __init__(self, active: bytes, retired: Iterable[bytes] = ()) -> None:
        self.active = DataKey.from_secret(active)
        self._keys = {self.active.key_id: self.active}
        for secret in retired:
            key = DataKey.from_secret(secret)
            self._keys.setdefault(key.key_id, key)

    def under(self, tenant_key: DataKey) -> Keyring:
        """A tenant's keyring: its data key seals, and this (master) keyring's keys still open
        what was sealed before per-tenant keys were on, until a rotation moves it."""
        keyring = object.__new__(Keyring)
        keyring.active = tenant_key
        keyring._keys = {tenant_key.key_id: tenant_key}
        for key_id, key in self._keys.items():
            keyring._keys.setdefault(key_id, key)
        keyring._missing = (
            "which this tenant does not hold: its data key was destroyed (crypto-shredded), "
            "or the content belongs to another tenant"
        )
        return keyring

    @property
    def key_ids(self) -> frozenset[str]:
        return frozenset(self._keys)

    @property
    def retired_ids(self) -> frozenset[str]:
        return self.key_ids - {self.active.key_id}

    def key(self, key_id: str) -> DataKey:
        try:
            return self._keys[key_id]
        except KeyError:
            raise KeyMismatch(
                f"Content is encrypted under key {key_id}, {self._missing}.",
                details={"key_id": key_id},
            ) from None

    def seal(self, plaintext: str, associated: bytes) -> Sealed:
        nonce = secrets.token_bytes(NONCE_BYTES)
        ciphertext = AESGCM(self.active.secret).encrypt(nonce, plaintext.encode(), associated)
        return Sealed(ciphertext=ciphertext, nonce=nonce, key_id=self.active.key_id)

    def open(self, sealed: Sealed, associated: bytes) -> str:
        key = self.key(sealed.key_id)
        try:
            return AESGCM(key.secret).decrypt(sealed.nonce, sealed.ciphertext, associated).decode()
        except InvalidTag:
            raise KeyMismatch(
                "A stored memory failed its integrity check: it was altered or moved.",
                details={"key_id": sealed.key_id},
            ) from None

    def content_hash(self, text: str, key_id: str | None = None) -> bytes:
        key = self.active if key_id is None else self.key(key_id)
        return hmac.new(key.hash_key, for_hash(text).encode(), hashlib.sha256).digest()

    def term_id(self, term: str, key_id: str | None = None) -> int:
        """A keyword's blind-index id: HMAC of the normalised, stemmed term, as a signed
        64-bit integer (the database sees only these, never the word)."""
        key = self.active if key_id is None else self.key(key_id)
        digest = hmac.new(key.index_key, term.encode(), hashlib.sha256).digest()
        return int.from_bytes(digest[:8], "big", signed=True)

    def content_hashes(self, text: str) -> list[bytes]:
        """The hash under every key held: rows written before a rotation finished match too."""
        return [self.content_hash(text, key_id) for key_id in sorted(self._keys)]


@functools.lru_cache(maxsize=64)
def _cache_secret(secret: bytes) -> bytes:
    return _derive(secret, _CACHE_KEY_LABEL)


def cache_secrets(keyring: Keyring) -> list[bytes]:
    """What the embedding cache keys its entries with (an HMAC, so the cache holds no digest
    of a text that a guess could be checked against): the active key's first, then every
    retired key's, for the entries made before a rotation."""
    ordered = [keyring.active.key_id, *sorted(keyring.retired_ids)]
    return [_cache_secret(keyring.key(k).secret) for k in ordered]


def associated_data(*parts: str) -> bytes:
    return "\x00".join(parts).encode()


# --- tenant data keys, wrapped under the master key -------------------------------------------


def _tenant_aad(tenant_id: str) -> bytes:
    return associated_data("memvault/tenant-key/v1", tenant_id)


def new_tenant_key() -> DataKey:
    return DataKey.from_secret(secrets.token_bytes(KEY_BYTES))


def wrap_tenant_key(master: Keyring, tenant_id: str, key: DataKey) -> Sealed:
    """A tenant's data key sealed under the active master key, bound to the tenant: a wrapped
    key copied to another tenant's row does not unwrap."""
    nonce = secrets.token_bytes(NONCE_BYTES)
    wrapped = AESGCM(master.active.secret).encrypt(nonce, key.secret, _tenant_aad(tenant_id))
    return Sealed(ciphertext=wrapped, nonce=nonce, key_id=master.active.key_id)


def unwrap_tenant_key(master: Keyring, tenant_id: str, wrapped: Sealed) -> DataKey:
    key = master.key(wrapped.key_id)
    try:
        secret = AESGCM(key.secret).decrypt(
            wrapped.nonce, wrapped.ciphertext, _tenant_aad(tenant_id)
        )
    except InvalidTag:
        raise KeyMismatch(
            "A tenant's data key failed its integrity check: it was altered or moved.",
            details={"key_id": wrapped.key_id},
        ) from None
    return DataKey.from_secret(secret)


# --- the key file used in embedded mode -------------------------------------------------------


def _write_key_file(path: Path, active: str, retired: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump({"version": 1, "active": active, "retired": retired}, handle)
    os.replace(tmp, path)


def _read_key_file(path: Path) -> tuple[str, list[str]]:
    try:
        data = json.loads(path.read_text())
        return str(data["active"]), [str(k) for k in data.get("retired", [])]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigurationError(
            f"The key file {path} cannot be read. Restore it from backup; without it the "
            "stored memories cannot be decrypted."
        ) from exc


def load_key_file(path: Path, *, create: bool) -> Keyring:
    if not path.exists():
        if not create:
            raise ConfigurationError(f"No key file at {path}.")
        _write_key_file(path, generate_key(), [])
    active, retired = _read_key_file(path)
    return Keyring(
        parse_key(active, name=str(path)), [parse_key(k, name=str(path)) for k in retired]
    )


def add_key_to_file(path: Path) -> Keyring:
    """Make a fresh key active; the previous keys stay to open rows not yet re-encrypted."""
    active, retired = _read_key_file(path)
    _write_key_file(path, generate_key(), [active, *retired])
    return load_key_file(path, create=False)


def forget_keys_in_file(path: Path, key_ids: Iterable[str]) -> None:
    """Drop retired keys once no row needs them."""
    drop = set(key_ids)
    active, retired = _read_key_file(path)
    kept = [k for k in retired if DataKey.from_secret(parse_key(k)).key_id not in drop]
    _write_key_file(path, active, kept)


@dataclass
class _TenantEntry:
    key: DataKey
    # When the key was last checked against its row (monotonic seconds).
    checked: float
    # The tenant keyring, and the master keyring it was built over (rebuilt when that changes).
    keyring: Keyring
    master: Keyring


class KeyringSource:
    """Hands out the current keyring; re-reads a key file when it changes (at most once a
    second), so a rotation started by another process is picked up without a restart.

    With ``per_tenant`` on, ``current(tenant)`` is that tenant's keyring, held here once its
    data key was loaded (``memvault.keys.data_keys.load``, at the start of every piece of a
    tenant's work); without ``per_tenant`` every tenant gets the master keyring."""

    def __init__(
        self,
        keyring: Keyring,
        reload: Callable[[], Keyring] | None = None,
        watch: Path | None = None,
        *,
        per_tenant: bool = False,
    ) -> None:
        self._keyring = keyring
        self._reload = reload
        self._watch = watch
        self._mtime = self._stat()
        self._checked = time.monotonic()
        self._lock = threading.Lock()
        self.per_tenant = per_tenant
        self._tenants: dict[str, _TenantEntry] = {}

    def _stat(self) -> float | None:
        return self._watch.stat().st_mtime if self._watch and self._watch.exists() else None

    def current(self, tenant_id: str | None = None) -> Keyring:
        master = self._master()
        if tenant_id is None or not self.per_tenant:
            return master
        entry = self._tenants.get(tenant_id)
        if entry is None:
            # A bug, not a user's error: every path into a tenant's work loads its key first.
            raise ServerError("A tenant's data key was used before it was loaded.")
        if entry.master is not master:
            entry.keyring, entry.master = master.under(entry.key), master
        return entry.keyring

    def tenant_key(self, tenant_id: str, max_age_s: float) -> DataKey | None:
        """The tenant's data key held here, if checked against its row within ``max_age_s``."""
        entry = self._tenants.get(tenant_id)
        if entry is None or time.monotonic() - entry.checked > max_age_s:
            return None
        return entry.key

    def hold_tenant_key(self, tenant_id: str, key: DataKey) -> None:
        entry = self._tenants.get(tenant_id)
        now = time.monotonic()
        if entry is not None and entry.key.key_id == key.key_id:
            entry.checked = now
            return
        master = self._master()
        self._tenants[tenant_id] = _TenantEntry(key, now, master.under(key), master)

    def drop_tenant_key(self, tenant_id: str) -> None:
        self._tenants.pop(tenant_id, None)

    def _master(self) -> Keyring:
        if self._reload is None or time.monotonic() - self._checked < 1.0:
            return self._keyring
        with self._lock:
            self._checked = time.monotonic()
            mtime = self._stat()
            if mtime != self._mtime:
                self._keyring, self._mtime = self._reload(), mtime
        return self._keyring

    def refresh(self) -> Keyring:
        if self._reload is not None:
            with self._lock:
                self._keyring, self._mtime = self._reload(), self._stat()
        return self._keyring
