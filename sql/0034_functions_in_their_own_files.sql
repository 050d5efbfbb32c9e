-- SPDX-License-Identifier: Apache-2.0
-- Every function's current body now lives in one file of sql/functions/, which `worker migrate`
-- applies after the pending migrations, every time (CREATE OR REPLACE, with its grants). The
-- migrations that created or replaced functions (0010, 0016–0019, 0022–0025, 0033) keep only a
-- pointer to those files; a database that ran them keeps what they made until the files replace it.
--
-- Every event's writes now take one path: held, then sent by sluice_write_batch (StateStore,
-- HeldWrites), a lone event's as a batch's. The functions of the other path are dropped: the
-- saves at once (sluice_save_entitlement, sluice_save_transaction) and the one-event call
-- (sluice_write_applied, which wrapped sluice_write_announcements; the first signature of
-- sluice_write_applied too, kept by a database stopped between 0016 and 0019). A worker of the
-- previous release still running calls them: its applies fail and are retried, nothing is lost,
-- until it is replaced.
DROP FUNCTION IF EXISTS sluice_write_applied(bigint, text, text, text, text[], text[], text[], text[], text[], text[], text[],
    text[], bigint, timestamptz, bigint, text);
DROP FUNCTION IF EXISTS sluice_write_applied(bigint, text, text, text, text[], text[], text[], text[], text[], text[], text[],
    text[], bigint, timestamptz, bigint, text, jsonb);
DROP FUNCTION IF EXISTS sluice_write_announcements(bigint, text, text, text, text[], text[], text[], text[], text[], text[],
    text[], text[], bigint, timestamptz, bigint, text);
DROP FUNCTION IF EXISTS sluice_save_entitlement(text, text, text, text, text, text, text, text, timestamptz, timestamptz, boolean,
    boolean, timestamptz, timestamptz, timestamptz, text, text, text, text, timestamptz, text, text, timestamptz, timestamptz, boolean);
DROP FUNCTION IF EXISTS sluice_save_transaction(text, text, text, text, text, text, text, text, bigint, text, timestamptz,
    timestamptz, bigint, timestamptz, timestamptz, bigint);
