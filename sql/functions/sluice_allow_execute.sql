-- SPDX-License-Identifier: Apache-2.0
-- Least privilege for every function the processes call, one rule: nobody may call p_function
-- (PUBLIC's default EXECUTE is revoked) but its owner and each of p_roles that exists (a
-- database set up without deploy/roles.sql has none of them). Each function's file calls it
-- after the function's body; DatabaseRolesTests performs the calls each role may not make.
--
-- Applied before the other function files, which call it (Migration.appliedFirst; MigratorTests
-- checks the order). Named sluice_ like every function Sluice makes (it shares a schema with the
-- app's own); sql/0048 dropped the unprefixed name of earlier releases.
CREATE OR REPLACE PROCEDURE sluice_allow_execute(p_function regprocedure, VARIADIC p_roles text[]) LANGUAGE plpgsql AS $$
DECLARE
    role text;
BEGIN
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', p_function);
    FOREACH role IN ARRAY p_roles LOOP
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = role) THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', p_function, role);
        END IF;
    END LOOP;
END $$;
REVOKE ALL ON PROCEDURE sluice_allow_execute(regprocedure, text[]) FROM PUBLIC;
