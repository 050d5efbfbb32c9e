-- SPDX-License-Identifier: Apache-2.0
-- Whether an endpoint takes an event of this type, provider and environment: its filters, in one place
-- for the writer and for `worker endpoints resend`. A pattern is a type, '*', or a prefix and '.*'.
CREATE OR REPLACE FUNCTION sluice_endpoint_takes(e endpoints, p_type text, p_provider text, p_environment text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT (e.environment = 'all' OR e.environment = p_environment)
       AND (cardinality(e.sources) = 0 OR p_provider = ANY(e.sources))
       AND (cardinality(e.event_types) = 0 OR EXISTS (
           SELECT 1 FROM unnest(e.event_types) AS pattern
           WHERE pattern = '*' OR pattern = p_type
              OR (right(pattern, 2) = '.*' AND starts_with(p_type, left(pattern, -1)))))
$$;

-- Least privilege: the worker (and the owner) call it, from its writes and `worker endpoints resend`.
CALL sluice_allow_execute('sluice_endpoint_takes(endpoints, text, text, text)', 'sluice_worker');
