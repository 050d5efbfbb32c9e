-- SPDX-License-Identifier: Apache-2.0
-- A call's array member in sluice_write_applied_batch's argument (links, balance_changes): the
-- array the worker writes into the call (OutgoingEventWriter), or NULL for none (absent or JSON
-- null). Anything else is passed on, so that jsonb_array_elements refuses it and the batch fails
-- aloud instead of dropping the call's writes. A worker of the release before wrote each as a
-- string holding the array's text, which is read as well, so that it keeps applying during a
-- rolling update (docs/operations.md); drop that arm in the release after next, with the old
-- names' mapping in sluice_write_applied_batch.
CREATE OR REPLACE FUNCTION sluice_call_array(p_member jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE jsonb_typeof(p_member) WHEN 'null' THEN NULL WHEN 'string' THEN (p_member #>> '{}')::jsonb ELSE p_member END
$$;

-- Anyone may call it: it reads nothing.
