-- Reserve's common path in one statement: dcl_reserve() answers the idempotency key, checks the
-- site, walks the site's devices from a random start, locks one candidate at a time with SKIP
-- LOCKED and inserts the hold, all in the database, so a call is one round trip instead of ten
-- (services/reservation/reservation_store.cc, ReservationStore::ReserveInDatabase, calls it in
-- autocommit; its plans are cached per backend, with no client-side PREPARE, so it works the
-- same behind a transaction-pooling PgBouncer).
--
-- Unchanged rules (issue 3):
--   * the arbiter is still reservations_device_held_uq: the INSERT names it in ON CONFLICT, so a
--     lost race is DO NOTHING (an attempt) with no savepoint and no exception block; any other
--     violated constraint still raises;
--   * one row locked at a time, FOR NO KEY UPDATE SKIP LOCKED: a device another order is
--     examining is passed over, never waited for, and never counted;
--   * bounded: at most p_max_candidates devices examined (locked and found sellable), at most
--     p_max_attempts lost races, and at most p_max_rows devices walked past in all (the walk's
--     own cost must not grow with the site: a nearly sold-out 100,000-machine site answers
--     'walk_limit' after p_max_rows rows, and the caller then explains the refusal);
--   * Classify() (services/reservation/eligibility.h) stays the authority on eligibility and on
--     the reasons of a refusal; the narrowing below must hold exactly the devices it calls
--     eligible, which tests/reservation/reserve_function_test.cc checks for every combination of
--     facts;
--   * the frozen selection reason: the criteria, the device's facts read under its lock, the
--     walk's start, candidates examined, lost races (and the database's chosen_at).
--
-- The walk's statement is `SELECT id FROM devices WHERE site_id = $1 AND id > $2 AND id <= $3
-- ORDER BY id LIMIT 16` with nothing else in it: devices_site_id_order_idx (site_id, id) answers
-- it with one descent and 16 index entries whatever the statistics say. A filter in that
-- statement (criteria, process state, bindings, holds) is what once let the planner read a whole
-- 20,000-machine site with a bitmap scan and a sort on every step; the narrowing runs instead on
-- those 16 rows, found by primary key.
--
-- Two things keep that plan from changing with statistics:
--   * devices_site_idx (site_id, vendor, model) is dropped: it served only the old filtered walk,
--     devices_site_id_order_idx covers every lookup by site, and with it gone no index but
--     (site_id, id) has site_id first. While it existed, a site newer than the last ANALYZE
--     (estimated at one row) was planned as "scan devices_site_idx, sort, take one", a plan that
--     reads the whole site on every step once the site is large;
--   * the function's statements use generic plans (plan_cache_mode): planned once per backend,
--     from the table's statistics as a whole, never from one site's stale estimate, and no
--     planning per call.
--
-- Outcomes: 'held' (reservation is the new hold), 'replay' (reservation is the order's existing
-- one, whatever its criteria: the caller compares them), 'no_site', 'contended' (a bound on
-- candidates or lost races was reached), 'no_candidate' (the walk went round the site and found
-- no device it could take), 'walk_limit' (p_max_rows rows walked without a hold). The last two
-- need the caller's exclusion summary to tell CONTENDED from NO_CAPACITY.
DROP INDEX devices_site_idx;

CREATE FUNCTION dcl_reserve(
  p_org uuid, p_key text, p_site uuid, p_vendor text, p_model text, p_profile text,
  p_walk_start uuid, p_ttl_seconds integer, p_actor text,
  p_max_candidates integer, p_max_attempts integer, p_max_rows integer,
  OUT outcome text, OUT candidates_examined integer, OUT lost_races integer,
  OUT rows_visited integer, OUT reservation reservations)
LANGUAGE plpgsql
-- The statements below touch a handful of rows: never JIT-compile them, plan them once.
SET jit = off
SET plan_cache_mode = force_generic_plan
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
    -- instead of one keeps the walk's statement count low without reading ahead much).
    IF v_lo IS NULL THEN
      SELECT array_agg(w.id ORDER BY w.id) INTO v_batch
        FROM (SELECT d.id FROM devices d WHERE d.site_id = p_site AND d.id <= v_hi
               ORDER BY d.id LIMIT 16) w;
    ELSE
      SELECT array_agg(w.id ORDER BY w.id) INTO v_batch
        FROM (SELECT d.id FROM devices d WHERE d.site_id = p_site AND d.id > v_lo AND d.id <= v_hi
               ORDER BY d.id LIMIT 16) w;
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
