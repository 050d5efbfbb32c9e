-- SPDX-License-Identifier: Apache-2.0
-- The least work PostgreSQL can do to apply one batch of realistic events: pgbench runs this one
-- statement per transaction (scripts/bench-floor), so no worker, no wire round trip per event and
-- no planning per event stand between the database and its writes. What it leaves out (a lease
-- taken in its own transaction, provider links, reading state before deciding, a second update
-- of the event's row) only makes Sluice's real path slower, so its rate is a ceiling on any
-- worker's on this machine: a target above it cannot be met by changing the worker.
--
-- Per batch of :batch events, in the shape of ApplyBenchmark's mixed workload (half Stripe, half
-- Apple, about 2.5 events per entitlement in arrival order, a transaction for two thirds):
-- the entitlements upserted once each, the transactions upserted with their status history, one
-- applied_events row per event, one outgoing event per changed entitlement and transaction
-- (about 800 bytes, numbered from outgoing_event_sequence), the events marked done.
WITH claimed AS (
    SELECT id, payload FROM events WHERE state = 'pending' ORDER BY run_at LIMIT :batch FOR UPDATE SKIP LOCKED
),
entitled AS (
    INSERT INTO entitlements (entity_key, user_id, product_id, product_type, source, environment, status, expires_at,
        purchased_at, will_renew, last_event_time, announced_active)
    SELECT DISTINCT ON (id % 2, id / 5) 'floor:' || id % 2 || ':' || id / 5, 'user_' || id / 5, 'pro.monthly',
        'auto_renewable', CASE WHEN id % 2 = 0 THEN 'web_checkout' ELSE 'store_kit' END, 'production', 'active',
        now() + interval '30 days', now(), id % 5 <> 4, now(), true
    FROM claimed ORDER BY id % 2, id / 5, id DESC
    ON CONFLICT (entity_key) DO UPDATE SET status = EXCLUDED.status, expires_at = EXCLUDED.expires_at,
        will_renew = EXCLUDED.will_renew, last_event_time = EXCLUDED.last_event_time, updated_at = now()
    RETURNING entity_key, user_id
),
paid AS (
    INSERT INTO transactions (source, environment, provider_transaction_id, entitlement_key, user_id, product_id,
        product_type, status, amount, currency, purchased_at, period_end, last_event_time)
    SELECT CASE WHEN id % 2 = 0 THEN 'web_checkout' ELSE 'store_kit' END, 'production', 'floor:' || id,
        'floor:' || id % 2 || ':' || id / 5, 'user_' || id / 5, 'pro.monthly', 'auto_renewable', 'succeeded', 999, 'USD',
        now(), now() + interval '30 days', now()
    FROM claimed WHERE id % 2 = 1 OR (id / 5) % 3 = 0
    ON CONFLICT (source, environment, provider_transaction_id) DO UPDATE SET status = EXCLUDED.status,
        last_event_time = EXCLUDED.last_event_time, updated_at = now()
    RETURNING id, entitlement_key, user_id, status
),
history AS (
    INSERT INTO transaction_status_history (transaction_id, status, event_id) SELECT id, status, NULL FROM paid
),
recorded AS (
    INSERT INTO applied_events (event_id, entity_key, outcome) SELECT id, 'floor:' || id % 2 || ':' || id / 5, 'applied'
    FROM claimed ON CONFLICT (event_id) DO NOTHING
),
changes AS (
    SELECT 'entitlement.renewed' AS type, entity_key, user_id FROM entitled
    UNION ALL SELECT 'transaction.succeeded', entitlement_key, user_id FROM paid
),
announced AS (
    INSERT INTO outgoing_events (message_id, type, entity_key, ordering_key, provider, environment, user_id, sequence, payload)
    SELECT 'msg_' || md5(random()::text), type, entity_key, entity_key, 'stripe', 'production', user_id,
        nextval('outgoing_event_sequence'), convert_to(repeat('x', 800), 'UTF8')
    FROM changes
),
completed AS (
    UPDATE events SET state = 'done', finished_at = now(), locked_by = NULL, locked_until = NULL, updated_at = now()
    FROM claimed WHERE events.id = claimed.id
)
SELECT count(*), sum(length(payload)) FROM claimed;
