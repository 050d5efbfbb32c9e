-- SPDX-License-Identifier: Apache-2.0
-- A count of microseconds since 2000-01-01 (how PostgreSQL and a bind parameter count time) as
-- the timestamptz it names.
CREATE OR REPLACE FUNCTION sluice_timestamp_us(p_microseconds bigint) RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT timestamptz '2000-01-01 00:00:00+00' + p_microseconds * interval '1 microsecond'
$$;

-- Anyone may call it: it reads nothing.
