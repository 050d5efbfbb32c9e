#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs once in the postgres container, when its data directory is new (docker-entrypoint-initdb.d):
# creates the least-privilege roles of deploy/roles.sql with the passwords from deploy/.env.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    -v migrate_password="$POSTGRES_MIGRATE_PASSWORD" \
    -v ingest_password="$POSTGRES_INGEST_PASSWORD" \
    -v worker_password="$POSTGRES_WORKER_PASSWORD" \
    -f /sluice/roles.sql
