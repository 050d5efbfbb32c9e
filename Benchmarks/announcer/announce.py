#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What announcing one balance change costs, worker and PostgreSQL apart.

Fills a fresh database with CALLS calls of deposits.sql (four ledger rows due each), starts
`WORKER run` on it and waits until every row is announced as balance.changed; prints one line:
the rows, the seconds, and the CPU each side spent a row (the worker process's, and that of
every PostgreSQL process of the server, backends and autovacuum alike). Nothing else runs: the
worker's figure moves about 5 % from run to run, PostgreSQL's up to 15 % (autovacuum), where the
mixed drain's grants-on/off ratio moves by several points of its 12. CPU is counted in clock
ticks (10 ms), so fewer than ~10,000 rows say little. Compare two builds with
scripts/bench-announce-ab.

    announce.py WORKER SQL_DIR CALLS     (DATABASE_URL and PG* name a server on this machine)
"""
import glob
import os
import subprocess
import sys
import time

worker, sql_dir, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
here = os.path.dirname(os.path.abspath(__file__))
database = f"sluice_announce_{os.getpid()}"


def psql(query, db="postgres"):
    return subprocess.run(["psql", "-qAtd", db, "-c", query], capture_output=True, text=True, check=True).stdout.strip()


def postgres_ticks():
    """CPU ticks of every process named postgres, by /proc path."""
    ticks = {}
    for path in glob.glob("/proc/[0-9]*/stat"):
        try:
            stat = open(path).read()
        except OSError:
            continue
        if stat[stat.index("(") + 1:stat.rindex(")")] != "postgres":
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        ticks[path] = int(fields[11]) + int(fields[12])
    return ticks


def process_ticks(pid):
    fields = open(f"/proc/{pid}/stat").read()
    fields = fields[fields.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])


psql(f"CREATE DATABASE {database}")
try:
    url = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + database
    environment = dict(os.environ, DATABASE_URL=url, MIGRATIONS_DIR=sql_dir, METRICS_PORT="0", LOG_LEVEL="error")
    subprocess.run([worker, "migrate"], env=environment, capture_output=True, check=True)
    subprocess.run(["pgbench", "-n", "-t", str(calls), "-c", "1", "-f", os.path.join(here, "deposits.sql"), database],
                   capture_output=True, check=True)
    due = int(psql("SELECT count(*) FROM balance_transactions", database))
    psql("VACUUM ANALYZE", database)
    psql("CHECKPOINT", database)
    before = postgres_ticks()
    announcer = subprocess.Popen([worker, "run"], env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.monotonic()
    while int(psql("SELECT count(*) FROM outgoing_events", database)) < due:
        if announcer.poll() is not None or time.monotonic() - started > 600:
            sys.exit(f"the worker stopped or took too long: {announcer.returncode}")
        time.sleep(0.1)
    seconds = time.monotonic() - started
    worker_ticks = process_ticks(announcer.pid)
    after = postgres_ticks()
    announcer.terminate()
    announcer.wait()
    server_ticks = sum(value - before.get(path, 0) for path, value in after.items())
    hz = os.sysconf("SC_CLK_TCK")
    print(f"RESULT announce rows={due} seconds={seconds:.2f} worker_cpu_us_per_row={worker_ticks / hz * 1e6 / due:.1f} "
          f"postgres_cpu_us_per_row={server_ticks / hz * 1e6 / due:.1f}")
finally:
    psql(f"DROP DATABASE {database} WITH (FORCE)")
