-- SPDX-License-Identifier: Apache-2.0
-- How many of a purchase of several were refunded while the rest stands (docs/credits.md):
-- Google Play's quantity-based partial refund, read as the purchase's `quantity` less its
-- `refundableQuantity`. NULL is none. A currency grant of the purchase takes back their share.
ALTER TABLE transactions ADD COLUMN IF NOT EXISTS quantity_refunded integer CHECK (quantity_refunded IS NULL OR quantity_refunded > 0);
