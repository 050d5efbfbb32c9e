-- SPDX-License-Identifier: Apache-2.0
-- Endpoints may not reach inside (docs/operations.md, "Security model"): a delivery's connection to
-- a loopback, private, link-local or metadata address is refused, checked on the address the name
-- resolved to, unless the endpoint was added with --allow-private. FORWARD_TARGETS endpoints are
-- configuration and reach any address.
ALTER TABLE endpoints ADD COLUMN IF NOT EXISTS allow_private boolean NOT NULL DEFAULT false;
-- Endpoints added before this migration keep reaching what they reached: an upgrade must not stop
-- an internal receiver's deliveries. `worker endpoints list --json` shows each one's allow_private;
-- `worker endpoints update ep_N --no-allow-private` takes it away.
UPDATE endpoints SET allow_private = true;
