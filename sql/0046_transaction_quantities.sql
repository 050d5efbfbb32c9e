-- SPDX-License-Identifier: Apache-2.0
-- How many of the product one payment bought (docs/credits.md): Apple's `quantity` and Google
-- Play's, a consumable bought three at once; NULL is one. A currency grant is the product's
-- amounts times it, and a refund of some of them takes back their share.
ALTER TABLE transactions ADD COLUMN IF NOT EXISTS quantity integer CHECK (quantity IS NULL OR quantity > 0);
