-- SPDX-License-Identifier: Apache-2.0
-- sluice_write_applied (sql/0016) also saves the applied event's provider links, first, through
-- sluice_save_links (sql/0017): one statement fewer for every applied event that writes links.
--
-- The function of sql/0016 keeps its body under a new name, and sluice_write_applied becomes a
-- wrapper with one more parameter, p_links, which defaults to NULL: a worker of the previous
-- release, calling it without, keeps working during a rolling upgrade.
ALTER FUNCTION sluice_write_applied(bigint, text, text, text, text[], text[], text[], text[], text[], text[], text[], text[],
    bigint, timestamptz, bigint, text) RENAME TO sluice_write_announcements;

CREATE FUNCTION sluice_write_applied(
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

-- Least privilege: only the worker (and the owner) may call it; the renamed function keeps its grants.
REVOKE ALL ON FUNCTION sluice_write_applied(bigint, text, text, text, text[], text[], text[], text[], text[], text[], text[], text[],
    bigint, timestamptz, bigint, text, jsonb) FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_worker') THEN
        GRANT EXECUTE ON FUNCTION sluice_write_applied(bigint, text, text, text, text[], text[], text[], text[], text[], text[],
            text[], text[], bigint, timestamptz, bigint, text, jsonb) TO sluice_worker;
    END IF;
END $$;
