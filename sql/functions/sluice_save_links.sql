-- SPDX-License-Identifier: Apache-2.0
-- Saves an applied event's provider links in one call (StateStore.save(_: [ProviderLink])), with
-- what saving them one after another in the order given would leave: each link is added or
-- completed (a NULL field keeps the value before it), and a link already stored with every value
-- it carries is not written, so it takes no row lock.
--
-- One statement for all the links (SaveLinksTests checks it against one call a link):
-- - links of the same key are merged first, each field the last value given (a later link
--   completes an earlier one, as it would written after it), since one INSERT … ON CONFLICT may
--   not touch a row twice;
-- - "already stored?" is one probe of the primary key a link (LATERAL … LIMIT 1). Written as a
--   join, PostgreSQL cannot know how few rows the JSON holds and checked with a scan of
--   provider_links: 1.07 ms a call against 0.46 ms for a statement a link. That was the reason
--   for the loop of one statement a link this replaced (Benchmarks/HISTORY.md, twenty-fourth
--   session: 205 → 154 µs a call of 13 links);
-- - rows are written in the order their keys first come: callers sort their links, so two events
--   writing the same ones wait for each other instead of deadlocking.
CREATE OR REPLACE FUNCTION sluice_save_links(p_links jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    WITH input AS (
        SELECT * FROM ROWS FROM (jsonb_to_recordset(p_links)
                AS (kind text, scope text, external_id text, user_id text, entitlement_key text, transaction_key text, account text))
            WITH ORDINALITY AS x(kind, scope, external_id, user_id, entitlement_key, transaction_key, account, n)
    ),
    merged AS (
        SELECT kind, scope, external_id, min(n) AS n,
               (array_agg(user_id ORDER BY n DESC) FILTER (WHERE user_id IS NOT NULL))[1] AS user_id,
               (array_agg(entitlement_key ORDER BY n DESC) FILTER (WHERE entitlement_key IS NOT NULL))[1] AS entitlement_key,
               (array_agg(transaction_key ORDER BY n DESC) FILTER (WHERE transaction_key IS NOT NULL))[1] AS transaction_key,
               (array_agg(account ORDER BY n DESC) FILTER (WHERE account IS NOT NULL))[1] AS account
        FROM input GROUP BY kind, scope, external_id
    )
    INSERT INTO provider_links AS p (kind, scope, external_id, user_id, entitlement_key, transaction_key, account)
    SELECT l.kind, l.scope, l.external_id, l.user_id, l.entitlement_key, l.transaction_key, l.account
    FROM merged l
    LEFT JOIN LATERAL (
        SELECT true AS seen FROM provider_links s
        WHERE s.kind = l.kind AND s.scope = l.scope AND s.external_id = l.external_id
          AND (l.user_id IS NULL OR s.user_id = l.user_id)
          AND (l.entitlement_key IS NULL OR s.entitlement_key = l.entitlement_key)
          AND (l.transaction_key IS NULL OR s.transaction_key = l.transaction_key)
          AND (l.account IS NULL OR s.account = l.account)
        LIMIT 1
    ) stored ON true
    WHERE stored.seen IS NULL
    ORDER BY l.n
    ON CONFLICT (kind, scope, external_id) DO UPDATE SET
        user_id = COALESCE(EXCLUDED.user_id, p.user_id),
        entitlement_key = COALESCE(EXCLUDED.entitlement_key, p.entitlement_key),
        transaction_key = COALESCE(EXCLUDED.transaction_key, p.transaction_key),
        account = COALESCE(EXCLUDED.account, p.account),
        updated_at = now();
END $$;

-- Least privilege: only the worker (and the owner) may call it.
CALL sluice_allow_execute('sluice_save_links(jsonb)', 'sluice_worker');
