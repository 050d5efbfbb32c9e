#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs once in the postgres container, when its data directory is new (docker-entrypoint-initdb.d):
# creates the least-privilege roles of deploy/roles.sql with the passwords from deploy/secrets/.
set -eu
secret() { tr -d '\n' < "/run/secrets/$1"; }
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    -v migrate_password="$(secret migrate_password)" \
    -v ingest_password="$(secret ingest_password)" \
    -v worker_password="$(secret worker_password)" \
    -f /sluice/roles.sql
