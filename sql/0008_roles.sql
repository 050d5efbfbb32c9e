-- SPDX-License-Identifier: Apache-2.0
-- Least privilege (docs/operations.md, "Database roles").
--
-- When the deployment created the roles of deploy/roles.sql, each process gets only what it uses:
-- ingest stores raw events and reads state; the worker reads and writes rows but changes no
-- schema; only the role that runs `worker migrate` owns the schema. Without those roles (a single
-- role, as in scripts/dev) this changes nothing. A later migration that adds a table ingest reads
-- grants it there; the worker's grants cover new tables by default. (The schema's USAGE is
-- granted by deploy/roles.sql: only the schema's owner may give it.)
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_worker') THEN
        GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO sluice_worker;
        ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO sluice_worker;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_ingest') THEN
        GRANT SELECT, INSERT ON events TO sluice_ingest;
        GRANT SELECT ON event_keys, entitlements, transactions TO sluice_ingest;
    END IF;
END $$;
