"""Outbound webhook requests: Standard Webhooks signatures, and the guard that keeps them off
the operator's own network.

A signature is ``v1,`` + base64 of HMAC-SHA256 over ``{id}.{timestamp}.{body}`` with the
secret's bytes (``whsec_`` + base64), sent as ``webhook-signature`` beside ``webhook-id`` and
``webhook-timestamp`` (https://www.standardwebhooks.com).

A subscription's URL is a request the server makes on a tenant's say-so, so its host is
resolved and every address it names must be public (not private, loopback, link-local,
multicast, reserved or unspecified, an IPv4-mapped IPv6 address judged as its IPv4) unless the
operator allows it (``webhook_allow_private``, ``webhook_allowed_cidrs``). The request then goes
to the address that was checked, not to a second lookup's answer (DNS rebinding), with the name
kept for the ``Host`` header and TLS; redirects are not followed.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import ipaddress
import secrets
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit
from uuid import UUID

import httpx

from memvault.config import Settings
from memvault.crypto.envelope import associated_data
from memvault.events import SECRET_PREFIX
from memvault.tls import verified_context

# A name that takes longer than this to resolve is treated as one that does not resolve.
RESOLVE_TIMEOUT_S = 5.0
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def secret_aad(tenant_id: str, subscription_id: UUID) -> bytes:
    """What a subscription's sealed secret is bound to: its tenant and its row."""
    return associated_data("webhook_subscriptions", tenant_id, str(subscription_id))


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def signed_headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(secret, message_id, timestamp, body),
        "content-type": "application/json",
        "user-agent": "memvault-webhooks",
    }


class Refused(Exception):
    """The URL may not be called: its message says why (never the resolved addresses)."""


@dataclass(frozen=True)
class Target:
    """Where a request goes: the URL with the checked address as its host, and the name."""

    url: str
    hostname: str
    host_header: str
    https: bool


@dataclass(frozen=True)
class Guard:
    allow_private: bool
    allowed: tuple[Network, ...]

    @classmethod
    def from_settings(cls, settings: Settings) -> Guard:
        cidrs = [c.strip() for c in settings.webhook_allowed_cidrs.split(",") if c.strip()]
        networks = tuple(ipaddress.ip_network(c, strict=False) for c in cidrs)
        return cls(settings.webhook_allow_private, networks)

    def permits(self, address: Address) -> bool:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if self.allow_private or any(address in n for n in self.allowed):
            return True
        return address.is_global and not address.is_multicast

    async def resolve(self, url: str) -> Target:
        """The URL's host resolved and checked; ``Refused`` when any address is not allowed
        or the name does not resolve."""
        parts = urlsplit(url)
        hostname = parts.hostname or ""
        https = parts.scheme == "https"
        port = parts.port or (443 if https else 80)
        addresses = await _addresses(hostname, port)
        refused = [a for a in addresses if not self.permits(a)]
        if refused:
            raise Refused(
                "The webhook URL's host is a private, loopback, link-local or otherwise "
                "non-public address; the operator allows such targets with "
                "MEMVAULT_WEBHOOK_ALLOW_PRIVATE or MEMVAULT_WEBHOOK_ALLOWED_CIDRS."
            )
        chosen = addresses[0]
        literal = f"[{chosen}]" if chosen.version == 6 else str(chosen)
        netloc = f"{literal}:{port}"
        pinned = parts._replace(netloc=netloc).geturl()
        return Target(pinned, hostname, parts.netloc.rpartition("@")[2], https)


async def _addresses(hostname: str, port: int) -> list[Address]:
    try:
        return [ipaddress.ip_address(hostname)]
    except ValueError:
        pass
    lookup = asyncio.get_running_loop().getaddrinfo(hostname, port, type=socket.SOCK_STREAM)
    try:
        infos = await asyncio.wait_for(lookup, RESOLVE_TIMEOUT_S)
    except (socket.gaierror, UnicodeError, TimeoutError):
        raise Refused("The webhook URL's host does not resolve.") from None
    found = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    if not found:
        raise Refused("The webhook URL's host does not resolve.")
    return list(dict.fromkeys(found))


def client(settings: Settings) -> httpx.AsyncClient:
    """The client deliveries go out on: no redirects, no proxies from the environment, the
    configured timeout."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(settings.webhook_timeout_s),
        follow_redirects=False,
        trust_env=False,
        verify=verified_context(trust_env=False),
    )


async def post(
    http: httpx.AsyncClient, target: Target, body: bytes, headers: dict[str, str]
) -> int:
    """POST ``body`` to the checked address; the status (raises ``httpx.HTTPError``)."""
    extensions = {"sni_hostname": target.hostname} if target.https else {}
    request = http.build_request(
        "POST",
        target.url,
        content=body,
        headers={**headers, "host": target.host_header},
        extensions=extensions,
    )
    response = await http.send(request, follow_redirects=False)
    await response.aclose()
    return response.status_code
