-- dcl_reserve's statements never read a table whole: every one of them is a point lookup or a
-- short range that an index answers (the key, the site, the walk, the candidate and its two
-- probes). Said to the planner, so that no statistics can make it think otherwise.
--
-- Why: the function's plans are generic and made once per connection (migration 0020), from the
-- statistics of that moment. An ANALYZE of an empty table (a fresh installation, a table
-- autovacuum analysed before the first sale) records 0 rows, and a plan made then scans the
-- table: the probe "is this device bound?" became `Seq Scan on service_bindings` and the site
-- check `Seq Scan on sites`. The plan stays until the table's next ANALYZE. Measured: a
-- connection that planned on an empty service_bindings, then 40,000 bindings imported (autovacuum
-- not yet round), Reserve took 40-118 ms instead of 8-12 ms, every candidate reading every
-- binding. With seqscan disabled for the function the planner takes an index wherever one
-- exists (all of these statements have one) whatever the statistics say;
-- tests/common/lookup_plans_test checks the installed function's statements after an ANALYZE
-- of empty tables.
--
-- Only for these functions (a SET clause applies to the function's own statements and to the
-- foreign-key checks its INSERT makes), not for the session. dcl_exclusion_summary, the
-- refusal's explanation, plans the same way (migration 0024) and had the same scans.
ALTER FUNCTION dcl_reserve(uuid, text, uuid, text, text, text, uuid, integer, text, integer,
                           integer, integer)
  SET enable_seqscan = off;
ALTER FUNCTION dcl_exclusion_summary(uuid, uuid, integer) SET enable_seqscan = off;
