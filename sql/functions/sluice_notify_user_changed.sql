-- SPDX-License-Identifier: Apache-2.0
-- `GET /v1/iap/transactions/{id}?wait=` is woken by this: each transaction or entitlement a
-- commit wrote names its user on the channel, once per user and transaction (PostgreSQL folds
-- equal notifications), delivered only if the apply commits. Only a user with a checkout of the
-- last two days (the longest window is one day) is named: a transaction that notifies takes a
-- database-wide lock at commit, which the rest of the apply traffic need not pay.
CREATE OR REPLACE FUNCTION sluice_notify_user_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.user_id IS NOT NULL
        AND EXISTS (SELECT 1 FROM checkouts WHERE user_id = NEW.user_id AND created_at > now() - interval '2 days') THEN
        PERFORM pg_notify('sluice_user_changed', NEW.user_id);
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER transactions_notify_user AFTER INSERT OR UPDATE ON transactions
    FOR EACH ROW EXECUTE FUNCTION sluice_notify_user_changed();
CREATE OR REPLACE TRIGGER entitlements_notify_user AFTER INSERT OR UPDATE ON entitlements
    FOR EACH ROW EXECUTE FUNCTION sluice_notify_user_changed();
