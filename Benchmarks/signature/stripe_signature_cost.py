#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""CPU that a running `ingest` spends per Stripe webhook request, by the shape of its
Stripe-Signature header, on a 1 MB body. The baseline is the same run's ordinary bad request (one
wrong `v1`): a header an attacker controls must cost no more than that.

    scripts/with-postgres python3 Benchmarks/signature/stripe_signature_cost.py .build/debug/ingest

Reads DATABASE_URL; starts the given ingest on a free loopback port with two endpoint secrets;
sends REQUESTS (default 40) of each shape one after another; reads the process's user + system
CPU time from /proc before and after. Prints one RESULT line per shape.
"""
import hashlib, hmac, json, os, socket, subprocess, sys, time

binary = sys.argv[1]
requests = int(os.environ.get("REQUESTS", "40"))
with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
env = dict(os.environ, INGEST_HOST="127.0.0.1", INGEST_PORT=str(port), INGEST_ADMIN_PORT="0", LOG_LEVEL="critical",
           STRIPE_WEBHOOK_SECRETS="whsec_measure_one,whsec_measure_two")
ingest = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            break
        except OSError:
            time.sleep(0.1)
    body = json.dumps({"id": "evt_m", "object": "event", "type": "x", "created": 1,
                       "data": {"object": {"id": "pi_m", "object": "payment_intent", "description": "x" * 1_000_000}}}).encode()

    def cpu_seconds():
        fields = open(f"/proc/{ingest.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def post(header):
        with socket.create_connection(("127.0.0.1", port)) as connection:
            connection.sendall(b"POST /v1/webhooks/stripe HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                               + b"Stripe-Signature: " + header.encode() + b"\r\nContent-Length: " + str(len(body)).encode()
                               + b"\r\nConnection: close\r\n\r\n" + body)
            answer = b""
            while chunk := connection.recv(65536):
                answer += chunk
        return answer.split(b" ")[1].decode()

    t = int(time.time())
    wrong = hmac.new(b"whsec_other", f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    shapes = {
        "one wrong v1 (baseline: an ordinary bad request)": f"t={t},v1={wrong}",
        "15 wrong 64-hex v1 (the most a header may hold)": f"t={t}," + ",".join([f"v1={wrong}"] * 15),
        "1,500 empty v1 (the stuffed header)": f"t={t}," + ",".join(["v1="] * 1500),
    }
    baseline = None
    for name, header in shapes.items():
        post(header)
        before, answers = cpu_seconds(), set()
        for _ in range(requests):
            answers.add(post(header))
        per_request = 1000 * (cpu_seconds() - before) / requests
        baseline = baseline or per_request
        print(f"RESULT {name}: {per_request:.2f} ms CPU/request, {per_request / baseline:.2f}x the baseline, answers {sorted(answers)}")
finally:
    ingest.terminate()
    ingest.wait()
