-- SPDX-License-Identifier: Apache-2.0
-- Whether a payment is a subscription's free trial period, as its provider marks one
-- (docs/credits.md): Apple's `offerDiscountType` FREE_TRIAL, a Stripe trial checkout's row,
-- Google Play's `offerPhase.freeTrial`. A trial period's currency grant is the product's trial
-- amounts; a period that cost 0 for another reason (a 100 % coupon, the customer's balance) is
-- not a trial and grants the full amounts.
ALTER TABLE transactions ADD COLUMN IF NOT EXISTS is_trial boolean NOT NULL DEFAULT false;

-- Rows written before this release were read as a trial when they were a subscription's period of
-- no amount, and granted so: they keep that reading, so a grant made later for one of them (its
-- user learned late) is the one it would have had.
UPDATE transactions SET is_trial = true WHERE amount = 0 AND product_type = 'auto_renewable' AND NOT is_trial;
