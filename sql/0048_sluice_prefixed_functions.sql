-- SPDX-License-Identifier: Apache-2.0
-- Every function and procedure Sluice makes is named sluice_…: it shares its schema with the
-- app's own objects, where `allow_execute` or `notify_user_changed` could be someone else's.
-- The three unprefixed ones of earlier releases are dropped here; sql/functions/ makes their
-- sluice_ successors in this same transaction (Migrator), and re-creates the triggers CASCADE
-- drops under the same names, so no write commits between without them. A release before this
-- one, migrated again, re-creates its old names and points the same triggers back at them.
DROP FUNCTION IF EXISTS notify_user_changed() CASCADE;
DROP FUNCTION IF EXISTS queue_balance_announcements() CASCADE;
DROP PROCEDURE IF EXISTS allow_execute(regprocedure, text[]);
