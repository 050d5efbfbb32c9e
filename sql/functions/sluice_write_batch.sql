-- SPDX-License-Identifier: Apache-2.0
-- The held saves (sluice_save_held_states), their late-linked users (sluice_assign_held_users),
-- then the held records and announcements (sluice_write_applied_batch): one statement for all of
-- a batch's writes. Returns each call's count of deliveries, in order.
CREATE OR REPLACE FUNCTION sluice_write_batch(p_states jsonb, p_calls jsonb) RETURNS bigint[] LANGUAGE plpgsql AS $$
BEGIN
    IF p_states IS NOT NULL THEN
        PERFORM sluice_save_held_states(p_states);
        IF jsonb_array_length(COALESCE(p_states->'assignments', '[]'::jsonb)) > 0 THEN
            PERFORM sluice_assign_held_users(p_states);
        END IF;
    END IF;
    IF p_calls IS NULL OR jsonb_array_length(p_calls) = 0 THEN
        RETURN '{}';
    END IF;
    RETURN sluice_write_applied_batch(p_calls);
END $$;

-- Least privilege: only the worker (and the owner) may call it.
CALL sluice_allow_execute('sluice_write_batch(jsonb, jsonb)', 'sluice_worker');
