-- dcl_reserve tries a batch's devices in the walk's order and stops at the first it holds.
--
-- The walk reads the site's next 16 device ids (one descent of devices_site_id_order_idx); the
-- candidate step then chose among them with `d.id = ANY (v_batch)`. PostgreSQL 15 does not take
-- an index scan with a list of ids as ordered, so the plan fetched all 16 rows, evaluated the
-- narrowing and both probes (a binding? a hold?) on each, sorted the survivors by id, and only
-- then locked the first: 16 heap fetches and 32 index probes for a hold that needs one device.
--
-- Now the step unnests the batch WITH ORDINALITY and looks each device up by id in a LATERAL
-- subquery that carries the narrowing, the probes and the row lock; the outer query orders by
-- the ordinality. A function scan is ordered by its ordinality and a nested loop keeps its outer
-- order, so the plan has no sort, and LIMIT 1 ends the statement at the first device that passes
-- and that no other walk has locked. The LATERAL reference makes the lookup by id the only plan
-- for the inner side (devices has three unique indexes that lead with id; any answers it
-- alike): a plain join of the unnested batch to devices let stale statistics choose a nested
-- loop over the whole site, probes and all (reserve_function_test caught it). So each device
-- tried is one lookup by id, a batch costs the same wherever it lies in the site, and a batch
-- with no machine to hold (a sold-out stretch, a refusal) costs its 16 lookups, as before. The
-- walk's order is the batch's (ascending id), so the device chosen is the one the old step
-- chose, and only a device that passes is locked, as before.
--
-- Not a range: stating the batch as its range on (site_id, id) was tried first and measured
-- wrong. A btree scan does not stop at a row comparison's second column (PostgreSQL 15 marks
-- only its first column as required), so a batch with no free machine read on past its last
-- device to the end of the site (a sold-out batch in the middle of a site of 60,000 machines:
-- 314 buffers instead of about 70), and the benchmark run on that version fell apart: a refusal
-- on a full site of 10 took 6.8 ms of the database instead of 0.16, 256 clients on 10 machines
-- made 191-299 decisions/s instead of about 1,000. Bounds on id as scalars stop
-- the scan but let the planner take an index that leads with id, which reads every device of
-- every site between the batch's first and last id (tests/reservation/reserve_function_test saw
-- it choose devices_id_org_site_occupancy_uq).
--
-- Measured with pgbench at one client (the service's Reserve query, fsync on, one database with
-- a site of 60,000 machines and a full site of 10), the versions taking turns, three rounds of
-- 5 s, every hold of the large site cancelled before each run; PostgreSQL's CPU per call, all
-- of the cluster's processes:
--   a hold:                      before 0.543 / 0.504 / 0.602 ms, after 0.492 / 0.504 / 0.490
--   a refusal on the full site:  before 0.354 / 0.351 / 0.354 ms, after 0.372 / 0.371 / 0.358
-- A hold saves the other rows' fetches and probes and the sort, about 0.05 ms; a refusal, which
-- tries every row of every batch either way, pays about 0.01 ms more for the per-row lookups.
-- (The range form of the first version: a hold 0.504 / 0.470 / 0.487 ms, and the refusals above.)
--
-- Enforced here (schema), unchanged: one hold per machine (reservations_device_held_uq, the
-- arbiter of the INSERT below), one active binding per machine. Enforced by this function's
-- path, unchanged: the walk's bounds and the row lock that keeps two walks off one candidate.
-- Outputs and signature are dcl_reserve's of 0031, so servers of the previous release call it
-- as before. tests/reservation/reserve_function_test checks the plan in both plan modes with
-- skewed statistics, and that the step's cost does not depend on where the batch lies.

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

    -- Among those, in the walk's order, the first device that passes the narrowing and that no
    -- other transaction has locked, locked FOR NO KEY UPDATE SKIP LOCKED: one row, never a set;
    -- a row another order is examining is passed over, not waited for. Only a row that passes
    -- is locked (locking writes the tuple; sold machines are walked past without a write).
    -- Scalar subqueries, not NOT EXISTS: each stays a probe of its partial unique index. Both
    -- read one snapshot, so a Convert committing meanwhile is seen as the hold or as the
    -- binding, never as neither; a hold committed after that snapshot is left to the arbiter
    -- below. The batch is read as a list in its own order (migration 0037): one lookup by id
    -- per device tried, and the first that passes ends the statement, so a free machine costs
    -- its own probes, not the whole batch's and a sort.
    WHILE v_batch_size > 0 LOOP
      SELECT candidate.id, candidate.site_id, candidate.vendor, candidate.model,
             candidate.hardware_profile, candidate.process_state
        INTO v_device
        FROM unnest(v_batch) WITH ORDINALITY AS batch(id, walk_order)
       CROSS JOIN LATERAL (
             SELECT d.id, d.site_id, d.vendor, d.model, d.hardware_profile, d.process_state
               FROM devices d
              WHERE d.id = batch.id AND d.site_id = p_site AND d.org_id = p_org
                AND (p_vendor = '' OR d.vendor = p_vendor)
                AND (p_model = '' OR d.model = p_model)
                AND (p_profile = '' OR d.hardware_profile = p_profile)
                AND d.process_state = 'normal' AND d.decommissioned_at IS NULL
                AND (SELECT 1 FROM service_bindings b
                      WHERE b.device_id = d.id AND b.ended_at IS NULL LIMIT 1) IS NULL
                AND (SELECT 1 FROM reservations h
                      WHERE h.device_id = d.id AND h.state = 'held' LIMIT 1) IS NULL
                FOR NO KEY UPDATE OF d SKIP LOCKED) candidate
       ORDER BY batch.walk_order LIMIT 1;
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
