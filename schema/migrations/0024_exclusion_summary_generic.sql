-- The refusal's explanation planned once per connection instead of on every refusal.
--
-- dcl_exclusion_summary() (migrations 0022, 0023) ran with force_custom_plan: its one statement
-- filtered devices by "site_id = p_site AND org_id = p_org", and a generic plan of that, under
-- statistics from before the organization's sites existed, read the whole table. So every
-- refusal planned the statement (two subplans, the six indexes of devices) for its own values:
-- about as much time as running it on a 10-machine site (EXPLAIN: planning 1.0 ms, execution
-- 0.23 ms on the loaded 2-core machine).
--
-- Here the asked site is read in the two statement shapes dcl_reserve() already walks with
-- generic plans (tests/reservation/reserve_function_test.cc checks them under stale, skewed
-- statistics): "site_id = $1 [AND id > $2] AND id <= top ORDER BY id LIMIT n", whose only
-- sensible plan is the ordered scan of devices_site_id_order_idx (site_id, id) that stops at the
-- limit. (A bounded range without the LIMIT was measured to plan as a scan of the id range of
-- devices_id_org_site_occupancy_uq: 58 ms for a 10-machine site.) The site is read 1,024
-- devices at a time; a first statement of the same shape finds the batch's last id, where the
-- next batch starts. The binding and hold probes are scalar subqueries with LIMIT 1, as in
-- dcl_reserve: a generic plan for 1,024 rows turned EXISTS into a hash of every active binding
-- and held reservation (measured: 215 ms for a 10-machine site). Each batch is grouped
-- by the facts Classify() reads; a site larger than one batch answers one row per combination
-- and batch, which ReservationStore::SummarizeExclusions adds up (it sums every row's count into
-- its reason and lists ids from the rows in order, up to its limit). The other sites' count is
-- migration 0023's. Output unchanged otherwise.
CREATE OR REPLACE FUNCTION dcl_exclusion_summary(p_org uuid, p_site uuid, p_max_listed integer)
RETURNS TABLE (at_asked_site boolean, vendor text, model text, hardware_profile text,
               process_state text, bound boolean, held boolean, decommissioned boolean,
               devices bigint, first_ids text)
LANGUAGE plpgsql STABLE
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
  v_lo uuid;  -- the batch: the site's next 1,024 devices after v_lo (NULL: from the first)
  v_last uuid;  -- the batch's last id, NULL when the batch is the site's last
BEGIN
  LOOP
    IF v_lo IS NULL THEN
      SELECT d.id INTO v_last FROM devices d
       WHERE d.site_id = p_site AND d.id <= 'ffffffff-ffff-ffff-ffff-ffffffffffff'
       ORDER BY d.id OFFSET 1023 LIMIT 1;
    RETURN QUERY
    SELECT true, f.vendor, f.model, f.hardware_profile, f.process_state, f.bound, f.held,
           f.decommissioned, count(*),
           array_to_string((array_agg(f.id ORDER BY f.id))[1:p_max_listed], ',')
      FROM (SELECT d.id::text, d.vendor, d.model, d.hardware_profile, d.process_state,
                   (SELECT 1 FROM service_bindings b
                     WHERE b.device_id = d.id AND b.ended_at IS NULL LIMIT 1) IS NOT NULL,
                   (SELECT 1 FROM reservations h
                     WHERE h.device_id = d.id AND h.state = 'held' LIMIT 1) IS NOT NULL,
                   d.decommissioned_at IS NOT NULL, d.org_id
              FROM devices d
             WHERE d.site_id = p_site AND d.id <= 'ffffffff-ffff-ffff-ffff-ffffffffffff'
             ORDER BY d.id LIMIT 1024)
           AS f(id, vendor, model, hardware_profile, process_state, bound, held, decommissioned,
                org_id)
     WHERE f.org_id = p_org
     GROUP BY 2, 3, 4, 5, 6, 7, 8;
    ELSE
      SELECT d.id INTO v_last FROM devices d
       WHERE d.site_id = p_site AND d.id > v_lo AND d.id <= 'ffffffff-ffff-ffff-ffff-ffffffffffff'
       ORDER BY d.id OFFSET 1023 LIMIT 1;
    RETURN QUERY
    SELECT true, f.vendor, f.model, f.hardware_profile, f.process_state, f.bound, f.held,
           f.decommissioned, count(*),
           array_to_string((array_agg(f.id ORDER BY f.id))[1:p_max_listed], ',')
      FROM (SELECT d.id::text, d.vendor, d.model, d.hardware_profile, d.process_state,
                   (SELECT 1 FROM service_bindings b
                     WHERE b.device_id = d.id AND b.ended_at IS NULL LIMIT 1) IS NOT NULL,
                   (SELECT 1 FROM reservations h
                     WHERE h.device_id = d.id AND h.state = 'held' LIMIT 1) IS NOT NULL,
                   d.decommissioned_at IS NOT NULL, d.org_id
              FROM devices d
             WHERE d.site_id = p_site AND d.id > v_lo AND d.id <= 'ffffffff-ffff-ffff-ffff-ffffffffffff'
             ORDER BY d.id LIMIT 1024)
           AS f(id, vendor, model, hardware_profile, process_state, bound, held, decommissioned,
                org_id)
     WHERE f.org_id = p_org
     GROUP BY 2, 3, 4, 5, 6, 7, 8;
    END IF;
    EXIT WHEN v_last IS NULL;
    v_lo := v_last;
  END LOOP;
  RETURN QUERY
  SELECT false, '', '', '', '', false, false, false, o.devices::bigint, ''
    FROM (SELECT sum(c.devices) AS devices FROM site_device_counts c
           WHERE c.org_id = p_org AND c.site_id <> p_site) o
   WHERE o.devices > 0;
END
$$;
