-- sluice:no-transaction
-- A Stripe subscription with several items grants one entitlement per item's product: the first
-- keeps the subscription's key, every other is a companion keyed `<subscription key>#<product>`
-- (StripeDecider+Items.swift). Events about the subscription's invoices, refunds and disputes name
-- only the subscription; its companions are found by key prefix. The index holds companion rows
-- alone (the predicate), so other entitlements' writes never touch it, and `text_pattern_ops`
-- compares bytes, so the prefix range holds in any collation. Built CONCURRENTLY (see 0020).
DROP INDEX CONCURRENTLY IF EXISTS entitlements_companions;
CREATE INDEX CONCURRENTLY entitlements_companions ON entitlements (entity_key text_pattern_ops) WHERE strpos(entity_key, '#') > 0;
