-- SPDX-License-Identifier: Apache-2.0
-- The Google Play product ids (a subscription's or a one-time product's productId) that are a
-- catalog product, as apple_product_ids are its App Store ids: a Play purchase of one gives the
-- product's access levels and currency grants.
ALTER TABLE catalog_products ADD COLUMN IF NOT EXISTS play_product_ids text[] NOT NULL DEFAULT '{}';
