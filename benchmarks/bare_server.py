"""The baseline: a bare aiohttp HTTPS server answering a fixed AdmissionReview with the same TLS.

It reads the body (as any webhook must) and returns a constant allowed response, so the difference
to `colocate serve` is exactly the admission work.

With `--parse` it also does the part of an admission no webhook can skip: `orjson.loads` of the
review, and an answer with the request's uid and a patch the size of colocate's answer to the
benchmark pod (18 operations, about 1.7 KB base64), encoded with `orjson.dumps`. The difference
between that and `colocate serve` is what colocate's policies, checks, log line and metrics cost.
"""

from __future__ import annotations

import argparse
import base64
import ssl
from asyncio import new_event_loop as stdlib_loop

import orjson
from aiohttp import web

FIXED = b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"fixed","allowed":true}}'


#: the size of colocate's patch for the benchmark pod (18 JSON Patch operations)
PATCH = base64.b64encode(
    orjson.dumps(
        [{"op": "add", "path": f"/metadata/labels/example.com~1label-{i}", "value": "x" * 32} for i in range(18)]
    )
).decode()


async def handle(request: web.Request) -> web.Response:
    await request.read()
    return web.Response(body=FIXED, content_type="application/json")


async def handle_parsed(request: web.Request) -> web.Response:
    review = orjson.loads(await request.read())
    answer = {
        "apiVersion": review["apiVersion"],
        "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], "allowed": True, "patchType": "JSONPatch", "patch": PATCH},
    }
    return web.Response(body=orjson.dumps(answer), content_type="application/json")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert-dir", required=True)
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop instead of the stdlib loop")
    parser.add_argument("--parse", action="store_true", help="parse the review and answer with a colocate-sized patch")
    args = parser.parse_args()
    if args.uvloop:
        from uvloop import new_event_loop
    else:
        new_event_loop = stdlib_loop
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(f"{args.cert_dir}/tls.crt", f"{args.cert_dir}/tls.key")
    app = web.Application(client_max_size=8 * 1024 * 1024 + 1)
    app.router.add_post("/mutate-pod", handle_parsed if args.parse else handle)
    web.run_app(
        app,
        host="127.0.0.1",
        port=args.port,
        ssl_context=context,
        access_log=None,
        print=None,
        loop=new_event_loop() if args.uvloop else None,
    )


if __name__ == "__main__":
    main()
