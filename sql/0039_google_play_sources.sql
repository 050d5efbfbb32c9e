-- SPDX-License-Identifier: Apache-2.0
-- Google Play, the third store: its pushes are queue rows of source 'play' (pointers), the
-- purchase states fetched for them rows of source 'play_purchase' (what is applied), and its
-- purchases entitlements and transactions of source 'play_store'.
ALTER TABLE events DROP CONSTRAINT events_source_check,
    ADD CONSTRAINT events_source_check CHECK (source IN ('stripe', 'apple', 'storekit', 'account', 'play', 'play_purchase'));

ALTER TABLE entitlements DROP CONSTRAINT entitlements_source_check,
    ADD CONSTRAINT entitlements_source_check CHECK (source IN ('web_checkout', 'store_kit', 'play_store'));

ALTER TABLE transactions DROP CONSTRAINT transactions_source_check,
    ADD CONSTRAINT transactions_source_check CHECK (source IN ('web_checkout', 'store_kit', 'play_store'));
