-- SPDX-License-Identifier: Apache-2.0
-- Whether a payment is a subscription's free trial period, as its provider marks one
-- (docs/credits.md): Apple's `offerDiscountType` FREE_TRIAL, a Stripe trial checkout's row,
-- Google Play's `offerPhase.freeTrial`. A trial period's currency grant is the product's trial
-- amounts; a period that cost 0 for another reason (a 100 % coupon, the customer's balance) is
-- not a trial and grants the full amounts. Adding a column with a constant default rewrites
-- nothing; the rows written before are marked by 0050, outside this transaction's table lock.
ALTER TABLE transactions ADD COLUMN IF NOT EXISTS is_trial boolean NOT NULL DEFAULT false;
