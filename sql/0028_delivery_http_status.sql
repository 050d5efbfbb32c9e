-- The HTTP status an endpoint answered a delivery's successful attempt with (a failed attempt's
-- is in queue_attempts): the console shows it instead of "2xx". Written with the completion, in
-- the same statement (JobQueue.complete). A nullable column without default: no table rewrite.
ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS http_status smallint;
