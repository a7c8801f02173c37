"""What a TLS client sees of a server under test."""

from __future__ import annotations

import socket
import ssl

from cryptography import x509


def served_certificate(port: int, ca_pem: bytes, name: str = "localhost") -> x509.Certificate:
    """The certificate a new TLS connection gets, verified against `ca_pem` only (raises if it does not)."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname=name) as tls:
            der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)
