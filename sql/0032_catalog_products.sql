-- SPDX-License-Identifier: Apache-2.0
-- The product catalog (docs/catalog.md): the products an app sells, on either store, and the
-- access levels each grants. Managed at run time with `worker products`; read by ingest for
-- `GET /v1/iap/access`. Without rows everything works as before: entitlements of products not
-- in it grant no access level.
CREATE TABLE IF NOT EXISTS catalog_products (
    -- the id the app and the read API use (a Stripe purchase's metadata product_id)
    id                 text        PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 255),
    type               text        NOT NULL CHECK (type IN ('consumable', 'non_consumable', 'auto_renewable', 'non_renewing')),
    -- a Stripe price id (price_…) or lookup key
    stripe_price       text        CHECK (length(stripe_price) BETWEEN 1 AND 255),
    -- the App Store product ids that are this product
    apple_product_ids  text[]      NOT NULL DEFAULT '{}',
    trial_days         integer     CHECK (trial_days BETWEEN 1 AND 730),
    access_levels      text[]      NOT NULL DEFAULT '{}',
    -- no longer sold; what was bought keeps its access levels
    archived_at        timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sluice_ingest') THEN
        GRANT SELECT ON catalog_products TO sluice_ingest;
    END IF;
END $$;
