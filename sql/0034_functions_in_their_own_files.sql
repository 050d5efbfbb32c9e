-- SPDX-License-Identifier: Apache-2.0
-- Every function's current body now lives in one file of sql/functions/, which `worker migrate`
-- applies after the pending migrations, every time (CREATE OR REPLACE, with its grants). The
-- migrations that created or replaced functions (0010, 0016–0019, 0022–0025, 0033) keep only a
-- pointer to those files; a database that ran them keeps what they made until the files replace it.
--
-- A database migrated to 0016, 0017 or 0018 before 0019 renamed its sluice_write_applied holds
-- that function under its first signature, which the files would leave beside the current one.
DROP FUNCTION IF EXISTS sluice_write_applied(bigint, text, text, text, text[], text[], text[], text[], text[], text[], text[],
    text[], bigint, timestamptz, bigint, text);
