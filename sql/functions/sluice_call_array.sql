-- SPDX-License-Identifier: Apache-2.0
-- A call's array member in sluice_write_applied_batch's argument (links, balance_changes): the
-- array the worker writes into the call (OutgoingEventWriter), or NULL for none. A worker of the
-- release before wrote each as a string holding the array's text, which is read as well, so that
-- it keeps applying during a rolling update (docs/operations.md); drop that arm in the release
-- after next.
CREATE OR REPLACE FUNCTION sluice_call_array(p_member jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE jsonb_typeof(p_member) WHEN 'array' THEN p_member WHEN 'string' THEN (p_member #>> '{}')::jsonb END
$$;

-- Anyone may call it: it reads nothing.
