# SPDX-License-Identifier: Apache-2.0
"""pgqueuer baseline for Sluice's queue benchmark: drain a backlog of no-op jobs.

Installs pgqueuer's schema into the database given, enqueues --jobs no-op jobs, then runs
--consumers PgQueuer instances (one asyncpg connection each) in drain mode with --batch, and
prints `pgqueuer drain: N jobs, C consumers, batch B: X jobs/s` and the same as a `RESULT` line.

    python Benchmarks/pgqueuer/drain.py --dsn postgres://postgres@127.0.0.1:5432/postgres \
        --jobs 100000 --consumers 5 --batch 200
"""
from __future__ import annotations

import argparse
import asyncio
import time

import asyncpg
from pgqueuer import AsyncpgDriver, PgQueuer, Queries
from pgqueuer.domain.types import QueueExecutionMode


async def prepare(dsn: str, jobs: int) -> None:
    connection = await asyncpg.connect(dsn)
    try:
        queries = Queries(AsyncpgDriver(connection))
        try:
            await queries.uninstall()
        except Exception:  # nothing installed yet
            pass
        await queries.install()
        chunk = 5_000
        for start in range(0, jobs, chunk):
            count = min(chunk, jobs - start)
            await queries.enqueue(["noop"] * count, [None] * count, [0] * count)
    finally:
        await connection.close()


async def consume(dsn: str, batch: int) -> None:
    connection = await asyncpg.connect(dsn)
    try:
        pgq = PgQueuer(AsyncpgDriver(connection))

        @pgq.entrypoint("noop")
        async def noop(job) -> None:  # the job itself does nothing: the queue alone is measured
            return None

        await pgq.run(batch_size=batch, mode=QueueExecutionMode.drain)
    finally:
        await connection.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--consumers", type=int, default=5)
    parser.add_argument("--batch", type=int, default=200)
    arguments = parser.parse_args()
    await prepare(arguments.dsn, arguments.jobs)
    started = time.perf_counter()
    await asyncio.gather(*(consume(arguments.dsn, arguments.batch) for _ in range(arguments.consumers)))
    elapsed = time.perf_counter() - started
    connection = await asyncpg.connect(arguments.dsn)
    left = await connection.fetchval("SELECT count(*) FROM pgqueuer")
    await connection.close()
    if left:
        raise SystemExit(f"pgqueuer drain left {left} jobs behind")
    print(
        f"pgqueuer drain: {arguments.jobs} jobs, {arguments.consumers} consumers, batch {arguments.batch}: "
        f"{arguments.jobs / elapsed:.0f} jobs/s"
    )
    print(f"RESULT pgqueuer consumers={arguments.consumers} batch={arguments.batch} jobs_per_s={arguments.jobs / elapsed:.0f}")


if __name__ == "__main__":
    asyncio.run(main())
