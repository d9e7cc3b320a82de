"""Outbound HTTPS clients share one TLS context (memvault.tls) and it still verifies: a server
whose certificate no trusted authority signed is refused by the client, the LLM clients and
webhook deliveries alike."""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from memvault.client import AsyncMemoryClient
from memvault.errors import ServerUnreachable
from memvault.llm.base import LLMUnavailable
from memvault.llm.openai import OpenAIChat
from memvault.tls import verified_context
from tests.fakes import running


def _self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


class _Answers(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_POST = do_GET

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def untrusted_https(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTPS server on 127.0.0.1 with a self-signed certificate; its URL and the cert."""
    cert_file, key_file = _self_signed(tmp_path)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    with running(server) as port:
        yield f"https://127.0.0.1:{port}", cert_file


async def test_the_client_refuses_a_server_no_authority_vouches_for(
    untrusted_https: tuple[str, Path],
) -> None:
    url, _ = untrusted_https
    async with AsyncMemoryClient(url, max_retries=0) as client:
        with pytest.raises(ServerUnreachable) as refused:
            await client.list(user_id="u")
    assert isinstance(refused.value.__cause__, httpx.ConnectError)
    assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value.__cause__)


async def test_an_llm_client_refuses_it_too_and_a_trusting_context_would_not(
    untrusted_https: tuple[str, Path],
) -> None:
    url, cert_file = untrusted_https
    chat = OpenAIChat(base_url=url, model="m", api_key=None, timeout_s=5, attempts=1)
    try:
        with pytest.raises(LLMUnavailable) as refused:
            await chat.complete_json("system", "user", {"type": "object"}, "answer")
    finally:
        await chat.aclose()
    assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value.__cause__)
    # The refusal is the certificate's: a context that trusts this one certificate connects.
    trusting = ssl.create_default_context(cafile=str(cert_file))
    async with httpx.AsyncClient(verify=trusting) as http:
        assert (await http.get(url)).status_code == 200
    assert verified_context() is verified_context()  # made once, shared
