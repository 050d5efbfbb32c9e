-- SPDX-License-Identifier: Apache-2.0
-- Least privilege for every function the processes call, one rule: nobody may call p_function
-- (PUBLIC's default EXECUTE is revoked) but its owner and each of p_roles that exists (a
-- database set up without deploy/roles.sql has none of them). Each function's file calls it
-- after the function's body; DatabaseRolesTests performs the calls each role may not make.
--
-- Named to sort first: the function files are applied in name order (Migrator), and the others
-- call it (MigratorTests checks the order).
CREATE OR REPLACE PROCEDURE allow_execute(p_function regprocedure, VARIADIC p_roles text[]) LANGUAGE plpgsql AS $$
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
REVOKE ALL ON PROCEDURE allow_execute(regprocedure, text[]) FROM PUBLIC;
