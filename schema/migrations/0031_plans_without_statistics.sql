-- dcl_reserve and dcl_exclusion_summary plan the same whatever the statistics say.
--
-- Their plans are generic and made once per connection (migrations 0020, 0024), from the
-- statistics of that moment, and kept until the tables' next ANALYZE or VACUUM. When those say a
-- table is empty (an ANALYZE of a fresh installation; the table's pages counted while it was
-- still empty), every lookup costs the same to the planner, and it chose whole-table reads:
-- `Seq Scan on reservations` for the key, `Seq Scan on devices` for the walk, `Seq Scan on
-- service_bindings` for the "is it bound?" probe, `Seq Scan on sites`; with sequential scans
-- forbidden alone, the walk went to devices_id_org_uq (every device in the id range, filtered by
-- site). Measured: a connection that planned on an empty service_bindings, then 40,000 bindings
-- imported before autovacuum came round, took 40-118 ms per Reserve instead of 8-12 ms.
--
-- Two changes, nothing else in the functions' text:
--   * SET enable_seqscan = off: every statement of both has an index that answers it (the
--     key, the site, the walk, the candidate by id, the two probes by their partial unique
--     indexes), and the planner now takes one wherever it exists;
--   * the walks state their bounds on the pair (site_id, id) and order by it. A row comparison
--     is an index condition only for an index that leads with those columns, and
--     devices_site_id_order_idx is the only one, so the walk is one descent of that index
--     whatever the statistics say. Same rows: (site_id, id) > (p_site, v_lo) and <= (p_site,
--     v_hi) hold exactly when site_id = p_site and v_lo < id <= v_hi.
-- tests/common/lookup_plans_test checks both installed functions' statements after an ANALYZE of
-- empty tables (red before: 12 sequential scans and the walk on devices_id_org_uq).

CREATE OR REPLACE FUNCTION dcl_reserve(
  p_org uuid, p_key text, p_site uuid, p_vendor text, p_model text, p_profile text,
  p_walk_start uuid, p_ttl_seconds integer, p_actor text,
  p_max_candidates integer, p_max_attempts integer, p_max_rows integer,
  OUT outcome text, OUT candidates_examined integer, OUT lost_races integer,
  OUT rows_visited integer, OUT reservation reservations)
LANGUAGE plpgsql
-- The statements below touch a handful of rows: never JIT-compile them, plan them once.
SET jit = off
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
DECLARE
  -- The part of the site still to walk: (v_lo, v_hi], v_lo NULL = from the site's first device.
  -- First the devices after the walk's start, then, wrapping once, those up to it.
  v_lo uuid := p_walk_start;
  v_hi uuid := 'ffffffff-ffff-ffff-ffff-ffffffffffff';
  v_wrapped boolean := false;
  v_batch uuid[];
  v_batch_size integer;
  v_fetched integer;
  v_device record;
BEGIN
  candidates_examined := 0;
  lost_races := 0;
  rows_visited := 0;

  -- Callers with the same key wait for each other here (until the first commits), so the second
  -- finds the first's reservation below and replays it instead of walking. Every statement of a
  -- volatile function takes a fresh snapshot at READ COMMITTED, so the lookup sees that commit.
  -- A hash collision between two keys only makes two unrelated orders wait briefly.
  PERFORM pg_advisory_xact_lock(hashtext(p_org::text), hashtext(p_key));
  SELECT * INTO reservation FROM reservations r
   WHERE r.org_id = p_org AND r.idempotency_key = p_key;
  IF FOUND THEN
    outcome := 'replay';
    RETURN;
  END IF;
  PERFORM 1 FROM sites s WHERE s.id = p_site AND s.org_id = p_org;
  IF NOT FOUND THEN
    outcome := 'no_site';
    RETURN;
  END IF;

  LOOP
    IF rows_visited >= p_max_rows THEN
      outcome := 'walk_limit';
      RETURN;
    END IF;
    -- The next 16 device ids of the site in id order (one index descent; 16 rows per statement
    -- instead of one keeps the walk's statement count low without reading ahead much). The
    -- bounds are stated on the pair (site_id, id), which only devices_site_id_order_idx can
    -- take as its index condition, so no statistics can send the walk to another index.
    IF v_lo IS NULL THEN
      SELECT array_agg(w.id ORDER BY w.id) INTO v_batch
        FROM (SELECT d.id FROM devices d
               WHERE (d.site_id, d.id) >= (p_site, '00000000-0000-0000-0000-000000000000'::uuid)
                 AND (d.site_id, d.id) <= (p_site, v_hi)
               ORDER BY d.site_id, d.id LIMIT 16) w;
    ELSE
      SELECT array_agg(w.id ORDER BY w.id) INTO v_batch
        FROM (SELECT d.id FROM devices d
               WHERE (d.site_id, d.id) > (p_site, v_lo) AND (d.site_id, d.id) <= (p_site, v_hi)
               ORDER BY d.site_id, d.id LIMIT 16) w;
    END IF;
    v_batch_size := coalesce(array_length(v_batch, 1), 0);
    v_fetched := v_batch_size;
    IF v_batch_size > 0 THEN
      rows_visited := rows_visited + v_batch_size;
      v_lo := v_batch[v_batch_size];
    END IF;

    -- Among those, the first device that passes the narrowing and that no other transaction
    -- has locked, locked FOR NO KEY UPDATE SKIP LOCKED: one row, never a set; a row another
    -- order is examining is passed over, not waited for. Only a row that passes is locked
    -- (locking writes the tuple; sold machines are walked past without a write). Scalar
    -- subqueries, not NOT EXISTS: each stays a probe of its partial unique index. Both read one
    -- snapshot, so a Convert committing meanwhile is seen as the hold or as the binding, never
    -- as neither; a hold committed after that snapshot is left to the arbiter below.
    WHILE v_batch_size > 0 LOOP
      SELECT d.id, d.site_id, d.vendor, d.model, d.hardware_profile, d.process_state
        INTO v_device
        FROM devices d
       WHERE d.id = ANY (v_batch) AND d.site_id = p_site AND d.org_id = p_org
         AND (p_vendor = '' OR d.vendor = p_vendor)
         AND (p_model = '' OR d.model = p_model)
         AND (p_profile = '' OR d.hardware_profile = p_profile)
         AND d.process_state = 'normal' AND d.decommissioned_at IS NULL
         AND (SELECT 1 FROM service_bindings b
               WHERE b.device_id = d.id AND b.ended_at IS NULL LIMIT 1) IS NULL
         AND (SELECT 1 FROM reservations h
               WHERE h.device_id = d.id AND h.state = 'held' LIMIT 1) IS NULL
       ORDER BY d.id LIMIT 1
         FOR NO KEY UPDATE OF d SKIP LOCKED;
      EXIT WHEN NOT FOUND;
      candidates_examined := candidates_examined + 1;

      INSERT INTO reservations AS r (org_id, idempotency_key, device_id, state, criteria_site_id,
                                     criteria_vendor, criteria_model, criteria_hardware_profile,
                                     selection_reason, created_by, expires_at)
      VALUES (p_org, p_key, v_device.id, 'held', p_site, p_vendor, p_model, p_profile,
              jsonb_build_object(
                'criteria', jsonb_build_object('site_id', p_site::text, 'vendor', p_vendor,
                                               'model', p_model, 'hardware_profile', p_profile),
                'device', jsonb_build_object('id', v_device.id::text,
                                             'site_id', v_device.site_id::text,
                                             'vendor', v_device.vendor, 'model', v_device.model,
                                             'hardware_profile', v_device.hardware_profile,
                                             'process_state', v_device.process_state,
                                             'bound', false, 'held', false,
                                             'decommissioned', false),
                'eligibility', 'eligible',
                'candidates_examined', candidates_examined,
                'lost_races', lost_races,
                'rows_visited', rows_visited,
                'walk_start', p_walk_start::text,
                'chosen_at', now()),
              p_actor, now() + make_interval(secs => p_ttl_seconds))
      ON CONFLICT (device_id) WHERE state = 'held' DO NOTHING
      RETURNING r.* INTO reservation;
      IF FOUND THEN
        outcome := 'held';
        RETURN;
      END IF;
      -- The arbiter gave this machine to another order after our snapshot: a lost race.
      lost_races := lost_races + 1;
      IF candidates_examined >= p_max_candidates OR lost_races >= p_max_attempts THEN
        outcome := 'contended';
        RETURN;
      END IF;
      v_batch := v_batch[array_position(v_batch, v_device.id) + 1:];
      v_batch_size := coalesce(array_length(v_batch, 1), 0);
    END LOOP;

    -- A short batch ends this part of the walk.
    CONTINUE WHEN v_fetched = 16;
    EXIT WHEN v_wrapped;
    v_wrapped := true;
    v_lo := NULL;
    v_hi := p_walk_start;
  END LOOP;

  -- Before the caller refuses: a same-key writer that did not take the advisory lock may have
  -- committed meanwhile (this statement's snapshot is fresh).
  SELECT * INTO reservation FROM reservations r
   WHERE r.org_id = p_org AND r.idempotency_key = p_key;
  outcome := CASE WHEN FOUND THEN 'replay' ELSE 'no_candidate' END;
END
$$;

-- The refusal's explanation: the same two changes (its batches are the walk's shape).
CREATE OR REPLACE FUNCTION dcl_exclusion_summary(p_org uuid, p_site uuid, p_max_listed integer)
RETURNS TABLE (at_asked_site boolean, vendor text, model text, hardware_profile text,
               process_state text, bound boolean, held boolean, decommissioned boolean,
               devices bigint, first_ids text)
LANGUAGE plpgsql STABLE
SET jit = off
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
  v_lo uuid;  -- the batch: the site's next 1,024 devices after v_lo (NULL: from the first)
  v_last uuid;  -- the batch's last id, NULL when the batch is the site's last
BEGIN
  LOOP
    IF v_lo IS NULL THEN
      SELECT d.id INTO v_last FROM devices d
       WHERE (d.site_id, d.id) >= (p_site, '00000000-0000-0000-0000-000000000000'::uuid)
         AND (d.site_id, d.id) <= (p_site, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
       ORDER BY d.site_id, d.id OFFSET 1023 LIMIT 1;
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
             WHERE (d.site_id, d.id) >= (p_site, '00000000-0000-0000-0000-000000000000'::uuid)
               AND (d.site_id, d.id) <= (p_site, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
             ORDER BY d.site_id, d.id LIMIT 1024)
           AS f(id, vendor, model, hardware_profile, process_state, bound, held, decommissioned,
                org_id)
     WHERE f.org_id = p_org
     GROUP BY 2, 3, 4, 5, 6, 7, 8;
    ELSE
      SELECT d.id INTO v_last FROM devices d
       WHERE (d.site_id, d.id) > (p_site, v_lo)
         AND (d.site_id, d.id) <= (p_site, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
       ORDER BY d.site_id, d.id OFFSET 1023 LIMIT 1;
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
             WHERE (d.site_id, d.id) > (p_site, v_lo)
               AND (d.site_id, d.id) <= (p_site, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
             ORDER BY d.site_id, d.id LIMIT 1024)
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
