-- The explanation of a refusal (Reserve's NO_CAPACITY / CONTENDED), in one statement whose cost
-- follows the asked site, not the organization: dcl_exclusion_summary() groups the asked site's
-- devices by the facts Classify() reads (services/reservation/eligibility.h, still the authority:
-- ReservationStore::SummarizeExclusions classifies each group) and answers the devices at the
-- organization's other sites as one count.
--
-- Why the other sites need no facts: Classify checks the site first, so a device at another site
-- is wrong_site whatever else it is (tests/reservation/eligibility_test.cc). Their count stays
-- exact; it is read from devices_org_site_idx (org_id, site_id) instead of the table. Before
-- this, every refusal read every device of the organization through a sequential scan (no index
-- had org_id first) and sorted it for the listed ids: 256 callers on a 10-machine site of an
-- organization with 10,000 machines got 53 decisions/s.
--
-- The asked site's devices come from devices_site_id_order_idx (site_id, id); the binding and
-- hold probes run only for them, each a probe of its partial unique index.
--
-- Planned for the actual organization and site on every call (force_custom_plan): a generic
-- plan estimates "org_id = $1" and "site_id = $2" from the number of distinct values alone,
-- and with statistics from before a customer's later sites and organizations existed (one
-- organization, one site) that estimate is the whole table, so the generic plan read every
-- device of every organization twice per refusal (measured: 57 refusals/s for 256 callers on a
-- 10-machine site in a 146,000-machine database). With the actual values, an organization or
-- site that the statistics do not know is estimated at a few rows and read from its index.
CREATE INDEX devices_org_site_idx ON devices (org_id, site_id);

CREATE FUNCTION dcl_exclusion_summary(p_org uuid, p_site uuid, p_max_listed integer)
RETURNS TABLE (at_asked_site boolean, vendor text, model text, hardware_profile text,
               process_state text, bound boolean, held boolean, decommissioned boolean,
               devices bigint, first_ids text)
LANGUAGE plpgsql STABLE
-- A sold-out large site's summary is planned above jit_above_cost; compiling it costs more than
-- running it.
SET jit = off
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
BEGIN
  -- (use_column: the output columns' names are also the devices table's; in the query a name
  -- is the column.)
  RETURN QUERY
  SELECT true, f.vendor, f.model, f.hardware_profile, f.process_state, f.bound, f.held,
         f.decommissioned, count(*),
         array_to_string((array_agg(f.id ORDER BY f.id))[1:p_max_listed], ',')
    FROM (SELECT d.id::text, d.vendor, d.model, d.hardware_profile, d.process_state,
                 EXISTS (SELECT 1 FROM service_bindings b
                          WHERE b.device_id = d.id AND b.ended_at IS NULL),
                 EXISTS (SELECT 1 FROM reservations h
                          WHERE h.device_id = d.id AND h.state = 'held'),
                 d.decommissioned_at IS NOT NULL
            FROM devices d
           WHERE d.site_id = p_site AND d.org_id = p_org)
         AS f(id, vendor, model, hardware_profile, process_state, bound, held, decommissioned)
   GROUP BY 2, 3, 4, 5, 6, 7, 8
  UNION ALL
  SELECT false, '', '', '', '', false, false, false, count(*), ''
    FROM devices d
   WHERE d.org_id = p_org AND d.site_id <> p_site
  HAVING count(*) > 0;
END
$$;
