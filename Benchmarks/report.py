# SPDX-License-Identifier: Apache-2.0
"""Turns the RESULT lines that scripts/bench gathered into a Markdown report (stdout).

Each row puts Sluice next to the baseline measured in the same run and the issue's target.
"""
import os
import re
from datetime import datetime, timezone


def parse(path):
    results = []
    for line in open(path):
        if not line.startswith("RESULT "):
            continue
        kind, *fields = line.split()[1:]
        values = dict(field.split("=", 1) for field in fields if "=" in field)
        results.append((kind, values))
    return results


def find(results, kind, **match):
    for found, values in results:
        if found == kind and all(values.get(k) == str(v) for k, v in match.items()):
            return values
    return None


def number(values, key):
    try:
        return float(values[key])
    except (TypeError, KeyError, ValueError):
        return None


def ratio(a, b):
    return f"{a / b:.2f}×" if a and b else "n/a"


def main():
    results = parse(os.environ["BENCH_LOG"])
    rows = []

    def row(what, sluice, baseline, relation, target):
        rows.append(f"| {what} | {sluice} | {baseline} | {relation} | {target} |")

    for connections in ("1", "32", "128"):
        ingest = find(results, "ingest", label="stripe", connections=connections)
        pgbench = find(results, "pgbench", clients=connections)
        if ingest:
            row(f"ingest, Stripe, {connections} conn.",
                f"{ingest['rate']} req/s, p50 {ingest['p50']} ms, p99 {ingest['p99']} ms, p999 {ingest['p999']} ms, errors {ingest['errors']}",
                f"pgbench 2 KB INSERT, {connections} clients: {pgbench['tps'] if pgbench else 'n/a'} tps",
                ratio(number(ingest, "rate"), number(pgbench, "tps")), "≥ 1.0× at 32" if connections == "32" else "—")
    paced = find(results, "ingest", label="stripe-70pct")
    if paced:
        row("ingest, Stripe, 32 conn. paced to 70 % of pgbench", f"{paced['rate']} req/s, p99 {paced['p99']} ms", "—", "—", "p99 < 25 ms")
    apple = find(results, "ingest", label="apple")
    if apple:
        row("ingest, Apple notifications, 32 conn.", f"{apple['rate']} req/s, p50 {apple['p50']} ms, p99 {apple['p99']} ms", "—", "—", "—")
    rss = find(results, "ingest-rss")
    if rss:
        row("ingest peak RSS over the ingest runs", f"{rss['peak_mib']} MiB", "—", "—", "< 100 MiB")

    pgqueuer = find(results, "pgqueuer", batch="200")
    sluice = find(results, "queue-sluice")
    if sluice:
        row(f"queue mechanism: JobQueue drain, {sluice['consumers']} consumers, batch {sluice['batch']}",
            f"{sluice['jobs_per_s']} jobs/s",
            f"pgqueuer best (5 consumers, batch 200): {pgqueuer['jobs_per_s'] if pgqueuer else 'n/a'} jobs/s; bare cycle in-process {sluice['bare_jobs_per_s']}",
            ratio(number(sluice, "jobs_per_s"), number(pgqueuer, "jobs_per_s")), "≥ 1.5× pgqueuer")
    for claim in ("1", "10"):
        for clients in ("1", "8"):
            cycle = find(results, "queue-cycle", claim=claim, clients=clients)
            if cycle:
                bound = " (table drained within the run: a lower bound)" if cycle.get("drained") == "1" else ""
                row(f"baseline: raw SKIP LOCKED cycle via pgbench, claim {claim}, {clients} clients", "—", f"{cycle['jobs_per_s']} jobs/s{bound}", "—", "—")
    small = find(results, "pgqueuer", batch="10")
    if small:
        row("baseline: pgqueuer, 5 consumers, batch 10", "—", f"{small['jobs_per_s']} jobs/s", "—", "—")
    for workload in ("noop", "mixed"):
        for processes in ("1", "2", "4"):
            for batch in ("1", "16"):
                drain = find(results, "drain", workload=workload, processes=processes, batch=batch, proofs="off")
                if drain:
                    row(f"drain through `worker run`, {workload}, {processes} process(es), WORKER_BATCH_SIZE={batch}",
                        f"{drain['rate']} events/s; table {drain['filled_mib']} → {drain['drained_mib']} → {drain['pruned_mib']} MiB (filled → drained → pruned); worker RSS {drain['worker_rss_mib']} MiB",
                        f"pgqueuer no-op best: {pgqueuer['jobs_per_s'] if pgqueuer else 'n/a'} jobs/s",
                        ratio(number(drain, "rate"), number(pgqueuer, "jobs_per_s")),
                        "realistic ≥ 0.5× pgqueuer" if workload == "mixed" else "—")
    for workload in ("noop", "mixed"):
        proven = find(results, "drain", workload=workload, processes="1", batch="1", proofs="on")
        plain = find(results, "drain", workload=workload, processes="1", batch="1", proofs="off")
        if proven and plain:
            row(f"drain with EVENT_SIGNING_KEY (every row's HMAC checked), {workload}, 1 process",
                f"{proven['rate']} events/s", f"the same without: {plain['rate']} events/s",
                ratio(number(proven, "rate"), number(plain, "rate")), "≥ 0.95× (a check costs ≤ 5 %)")
    for kind, values in results:
        if kind == "e2e":
            row(f"end to end, {values['label']}",
                f"offered {values['offered']}/s; 2xx → visible p50 {values['visible_p50']} ms, p99 {values['visible_p99']} ms ({values['sampled']} sampled, {values['never_visible']} not visible in 10 s)",
                f"2xx itself p50 {values['ack_p50']} ms, p99 {values['ack_p99']} ms", "—", "p50 < 10 ms, p99 < 50 ms at 500/s")
        if kind == "rss":
            row(f"peak RSS during end to end, {values['label']}", f"worker {values['worker_mib']} MiB, ingest {values['ingest_mib']} MiB", "—", "—", "worker < 150 MiB")

    print(f"# Sluice benchmarks, {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}\n")
    print(f"Machine: {os.environ['BENCH_CORES']} cores; load average before {os.environ['BENCH_LOAD_BEFORE']}, "
          f"after {os.environ['BENCH_LOAD_AFTER']}; the timed part took {os.environ['BENCH_ELAPSED']} s. "
          "Ratios compare figures measured in this run on this machine.\n")
    print("| benchmark | Sluice | baseline, same run | ratio | target |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    verification = os.environ.get("BENCH_VERIFICATION", "").strip()
    if verification:
        print("\n## Verification (ordo-one/benchmark, one core; reference: Apple's Python library ~100 notifications/s, "
              "stripe-python ~3,200 events/s per core)\n")
        print("```")
        print(verification)
        print("```")


main()
