-- sluice:no-transaction
-- events_unfinished_ordering (0020) put one more index write on ingest's hot path — every
-- insert and every pending → running → done step — for a lookup only the console's customer
-- timeline makes. The timeline reaches the same few unfinished rows through the partial indexes
-- the queue already keeps (events_runnable, events_leased, events_dead), one per state, by
-- naming each state in its own OR arm (TimelineReader), so this index goes.
DROP INDEX CONCURRENTLY IF EXISTS events_unfinished_ordering;
