-- SPDX-License-Identifier: Apache-2.0
-- The database roles of a least-privilege deployment (docs/operations.md, "Database roles").
-- Run once, by an administrator, in the database Sluice uses, before the first `worker migrate`:
--
--   psql "postgres://admin@db/sluice" -v migrate_password=… -v ingest_password=… -v worker_password=… -f deploy/roles.sql
--
-- sluice_migrate  owns the schema: `worker migrate` (and `worker prune`, `rebuild`) connect as it
-- sluice_ingest   stores raw events and reads state (grants in sql/0008_roles.sql)
-- sluice_worker   reads and writes rows, changes no schema (grants in sql/0008_roles.sql)
CREATE ROLE sluice_migrate LOGIN PASSWORD :'migrate_password';
CREATE ROLE sluice_ingest LOGIN PASSWORD :'ingest_password';
CREATE ROLE sluice_worker LOGIN PASSWORD :'worker_password';
REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT USAGE, CREATE ON SCHEMA public TO sluice_migrate;
GRANT USAGE ON SCHEMA public TO sluice_ingest, sluice_worker;
SELECT format('GRANT CONNECT, TEMPORARY ON DATABASE %I TO sluice_migrate, sluice_ingest, sluice_worker', current_database()) \gexec
-- Tables the migrate role creates are readable and writable by the worker from the start.
ALTER DEFAULT PRIVILEGES FOR ROLE sluice_migrate IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO sluice_worker;
-- Session-level advisory locks only for the roles that use them (the migrator's lock): ingest's
-- credential, leaked, could otherwise hold an entity's or a token's lock for as long as it likes
-- and stall its events. Transaction-level locks end with their transaction, which ingest may not
-- keep open idle for long. A managed service whose administrator does not own pg_catalog's
-- functions skips the first part with a notice; the timeout still applies.
DO $$
DECLARE
    signature text;
BEGIN
    FOREACH signature IN ARRAY ARRAY[
        'pg_advisory_lock(bigint)', 'pg_advisory_lock_shared(bigint)', 'pg_try_advisory_lock(bigint)',
        'pg_try_advisory_lock_shared(bigint)', 'pg_advisory_lock(integer, integer)', 'pg_advisory_lock_shared(integer, integer)',
        'pg_try_advisory_lock(integer, integer)', 'pg_try_advisory_lock_shared(integer, integer)'
    ] LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION pg_catalog.%s FROM PUBLIC', signature);
        EXECUTE format('GRANT EXECUTE ON FUNCTION pg_catalog.%s TO sluice_migrate, sluice_worker', signature);
    END LOOP;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'session-level advisory locks left to every role: this administrator does not own pg_catalog''s functions';
END $$;
ALTER ROLE sluice_ingest SET idle_in_transaction_session_timeout = '60s';
