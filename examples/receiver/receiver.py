#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small receiver of Sluice's entitlement events (docs/webhooks.md).

It verifies each delivery with the `standardwebhooks` library and the endpoint's secret (the
`whsec_…` that `worker endpoints add` printed), drops a delivery it has already seen (by
`webhook-id`) and a state older than one it already has (by `sequence`, per entitlement), and
keeps each user's latest access in memory. A real receiver stores the same two things in its own
database, in the transaction that acts on the event.

    pip install -r requirements.txt
    SLUICE_ENDPOINT_SECRET=whsec_… python3 receiver.py --port 8000
    worker endpoints add http://127.0.0.1:8000/sluice --allow-private --events 'entitlement.*'

Answers 204 once the event is handled (or was already), 400 when the signature does not verify:
Sluice retries anything but a 2xx, so answer 2xx only once the event is safely handled.
"""
import argparse
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Lock

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


class Receiver:
    def __init__(self, secret, log=None):
        self.webhook = Webhook(secret)
        self.lock = Lock()
        self.seen = set()  # webhook-ids handled: deliveries are at least once
        self.latest = {}  # entitlement id -> (sequence, entitlement)
        self.log = log

    def handle(self, body: bytes, headers) -> int:
        try:
            event = self.webhook.verify(body, headers)
        except WebhookVerificationError:
            return 400
        with self.lock:
            if event["id"] in self.seen:
                return 204
            self.seen.add(event["id"])
            entitlement = event["data"].get("entitlement")
            if entitlement is not None:
                known = self.latest.get(entitlement["id"])
                if known is None or known[0] < event["sequence"]:
                    self.latest[entitlement["id"]] = (event["sequence"], entitlement)
                    self.on_change(event["type"], entitlement)
            if self.log:
                self.log.write(json.dumps({"id": event["id"], "type": event["type"], "sequence": event["sequence"]}) + "\n")
                self.log.flush()
        return 204

    def on_change(self, event_type, entitlement):
        """Where an app grants or removes access: gate on `is_active`, never on the type alone."""
        user, product, active = entitlement["user_id"], entitlement["product_id"], entitlement["is_active"]
        print(f"{event_type}: {user} {'may' if active else 'may not'} use {product}", file=sys.stderr)


def serve(port, path, receiver):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            if self.path != path:
                self.send_response(404)
                self.end_headers()
                return
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(receiver.handle(body, {k.lower(): v for k, v in self.headers.items()}))
            self.end_headers()

        def log_message(self, *args):
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--path", default="/sluice")
    parser.add_argument("--log", help="append one JSON line per event handled to this file")
    arguments = parser.parse_args()
    secret = os.environ.get("SLUICE_ENDPOINT_SECRET")
    if not secret:
        sys.exit("set SLUICE_ENDPOINT_SECRET to the endpoint's whsec_ secret")
    log = open(arguments.log, "a") if arguments.log else None
    serve(arguments.port, arguments.path, Receiver(secret, log))
