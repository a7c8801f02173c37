"""The baseline: a bare aiohttp HTTPS server answering a fixed AdmissionReview with the same TLS.

It reads the body (as any webhook must) and returns a constant allowed response, so the difference
to `colocate serve` is exactly the admission work.
"""
from __future__ import annotations

import argparse
import ssl
from asyncio import new_event_loop as stdlib_loop

from aiohttp import web

FIXED = b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"fixed","allowed":true}}'


async def handle(request: web.Request) -> web.Response:
    await request.read()
    return web.Response(body=FIXED, content_type="application/json")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert-dir", required=True)
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop instead of the stdlib loop")
    args = parser.parse_args()
    if args.uvloop:
        from uvloop import new_event_loop
    else:
        new_event_loop = stdlib_loop
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(f"{args.cert_dir}/tls.crt", f"{args.cert_dir}/tls.key")
    app = web.Application(client_max_size=8 * 1024 * 1024 + 1)
    app.router.add_post("/mutate-pod", handle)
    web.run_app(app, host="127.0.0.1", port=args.port, ssl_context=context, access_log=None, print=None,
                loop=new_event_loop() if args.uvloop else None)


if __name__ == "__main__":
    main()
