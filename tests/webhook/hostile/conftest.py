"""Each file here is one class of attack on a real `colocate serve` process over TLS on 127.0.0.1,
through the `served` fixture of tests/webhook/conftest.py (tests.support.served)."""
