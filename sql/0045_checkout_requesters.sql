-- SPDX-License-Identifier: Apache-2.0
-- Who may be handed a checkout again (docs/checkout.md, "Client keys"): NULL for one a server key
-- asked for, which any server-key request may reuse; for an app's client-key request, the
-- SHA-256 (hex) of its Idempotency-Key, or of a random value when it sent none. A client-key
-- request is answered an open checkout (its client secret, its customer) only when it carries the
-- same key; otherwise the open one is superseded and a new one made, so that naming another
-- user's id never hands their checkout over.
ALTER TABLE checkouts ADD COLUMN IF NOT EXISTS requester text;
