-- sluice:no-transaction
-- Lookups by entity that were sequential scans over tables growing with every applied event:
-- `worker rebuild` reads an entity's applied events; the console's customer timeline reads them
-- too, with the entity's outgoing events and their deliveries, and the events not applied yet
-- whose ordering key is one of the entity's provider ids or links. At a million events each of
-- these read every row. The tables are written all the time, so each index is built CONCURRENTLY,
-- outside a transaction (Migration.noTransactionMarker above); a build that failed leaves an
-- INVALID index, dropped first when the file runs again.
DROP INDEX CONCURRENTLY IF EXISTS applied_events_entity;
CREATE INDEX CONCURRENTLY applied_events_entity ON applied_events (entity_key) WHERE entity_key IS NOT NULL;

DROP INDEX CONCURRENTLY IF EXISTS outgoing_events_entity;
CREATE INDEX CONCURRENTLY outgoing_events_entity ON outgoing_events (entity_key, id);

DROP INDEX CONCURRENTLY IF EXISTS deliveries_outgoing_event;
CREATE INDEX CONCURRENTLY deliveries_outgoing_event ON deliveries (outgoing_event_id) WHERE outgoing_event_id IS NOT NULL;

DROP INDEX CONCURRENTLY IF EXISTS provider_links_entitlement;
CREATE INDEX CONCURRENTLY provider_links_entitlement ON provider_links (entitlement_key) WHERE entitlement_key IS NOT NULL;

-- Only the few events not finished: done ones (nearly all) are not in it.
DROP INDEX CONCURRENTLY IF EXISTS events_unfinished_ordering;
CREATE INDEX CONCURRENTLY events_unfinished_ordering ON events (ordering_key) WHERE state IN ('pending', 'running', 'dead');
