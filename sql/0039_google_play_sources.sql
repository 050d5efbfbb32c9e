-- SPDX-License-Identifier: Apache-2.0
-- Google Play, the third store: its pushes and fetched states are queue rows of source 'play'
-- (PlayNotificationType), and its purchases are entitlements and transactions of source 'play_store'.
ALTER TABLE events DROP CONSTRAINT events_source_check,
    ADD CONSTRAINT events_source_check CHECK (source IN ('stripe', 'apple', 'storekit', 'account', 'play'));

ALTER TABLE entitlements DROP CONSTRAINT entitlements_source_check,
    ADD CONSTRAINT entitlements_source_check CHECK (source IN ('web_checkout', 'store_kit', 'play_store'));

ALTER TABLE transactions DROP CONSTRAINT transactions_source_check,
    ADD CONSTRAINT transactions_source_check CHECK (source IN ('web_checkout', 'store_kit', 'play_store'));
