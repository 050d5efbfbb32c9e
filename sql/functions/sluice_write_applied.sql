-- SPDX-License-Identifier: Apache-2.0
-- What applying one event writes besides its state (OutgoingEventWriter): its provider links first
-- (sluice_save_links), then its record, outgoing events and deliveries (sluice_write_announcements).
-- p_links defaults to NULL, so a worker of a release before it keeps working during a rolling upgrade.
CREATE OR REPLACE FUNCTION sluice_write_applied(
    p_record_event_id bigint, p_record_entity_key text, p_record_outcome text, p_record_detail text,
    p_message_ids text[], p_types text[], p_entity_keys text[], p_ordering_keys text[], p_providers text[],
    p_environments text[], p_user_ids text[], p_tails text[],
    p_cause_event_id bigint, p_occurred_at timestamptz,
    p_raw_event_id bigint, p_raw_environment text,
    p_links jsonb DEFAULT NULL
) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    IF p_links IS NOT NULL THEN
        PERFORM sluice_save_links(p_links);
    END IF;
    RETURN sluice_write_announcements(
        p_record_event_id, p_record_entity_key, p_record_outcome, p_record_detail,
        p_message_ids, p_types, p_entity_keys, p_ordering_keys, p_providers, p_environments, p_user_ids, p_tails,
        p_cause_event_id, p_occurred_at, p_raw_event_id, p_raw_environment);
END $$;

-- Least privilege: only the worker (and the owner) may call it.
REVOKE ALL ON FUNCTION sluice_write_applied(bigint, text, text, text, text[], text[], text[], text[], text[], text[], text[], text[], bigint, timestamptz, bigint, text, jsonb) FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_worker') THEN
        GRANT EXECUTE ON FUNCTION sluice_write_applied(bigint, text, text, text, text[], text[], text[], text[], text[], text[], text[], text[], bigint, timestamptz, bigint, text, jsonb) TO sluice_worker;
    END IF;
END $$;
