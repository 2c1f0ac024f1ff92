-- A booking's header and slots are written by dcl_insert_booking(), a function whose insert is
-- static SQL, instead of through dcl_guarded_exec() (0001), whose dynamic EXECUTE parses,
-- analyses and plans the statement again on every call. Measured with pg_stat_statements on one
-- client of the occupancy benchmark: the guarded call took 0.369 ms of a PlaceDevice, of which
-- the insert itself was 0.161 ms. plpgsql keeps the static statement's plan for the backend's
-- life, and services/occupancy/booking_store.cc (CreateBooking) calls the function as a
-- prepared statement of its connection (a plain statement behind a transaction-pooling
-- PgBouncer), so the call is not planned per booking either.
--
-- Unchanged rules:
--   * header and slots are one statement inside the function's exception block: a violation
--     rolls back the block's subtransaction, so neither the header nor any slot stays, and the
--     caller's transaction stays usable (it re-reads the collisions, may release a lapsed
--     reservation and retry);
--   * the schema decides, the code only names: booking_slots_active_uq (one active booking per
--     rack, side and unit) is still the arbiter of a slot, and every constraint of bookings and
--     booking_slots (0003) still fires; the function does not check anything itself. On any
--     integrity violation it answers the constraint's NAME and SQLSTATE from the error, which
--     booking_store.cc maps to the caller's rejection (UNIT_OCCUPIED for the slot index,
--     DEVICE_ALREADY_PLACED, NOT_FOUND, ...). Any other error still raises;
--   * expires_at: now() + p_ttl_seconds when p_ttl_seconds > 0, otherwise NULL (the CHECKs
--     bookings_placement_never_expires and bookings_reservation_expires judge it);
--   * the answer, one text: id|rack_id|device_id|created_at|expires_at, device_id '' when NULL,
--     the times in microseconds since the epoch spelled as SqlMicros() spells them
--     (services/common/time_util.cc), expires_at '' when NULL.
--
-- No SET clauses (dcl_reserve has jit = off and generic plans): these two single-row inserts
-- cost far below jit_above_cost, their custom and generic plans are the same, and a SET clause
-- would make every call save and restore the setting.
CREATE FUNCTION dcl_insert_booking(
  p_org uuid, p_site uuid, p_rack uuid, p_kind text, p_device uuid, p_front boolean,
  p_rear boolean, p_first_unit integer, p_last_unit integer, p_ttl_seconds bigint,
  p_actor text, p_reason text, p_sides text[], p_units integer[],
  OUT returned text, OUT violated_constraint text, OUT violated_sqlstate text)
LANGUAGE plpgsql AS $$
BEGIN
  WITH h AS (
    INSERT INTO bookings (org_id, site_id, rack_id, kind, device_id, front, rear, first_unit,
                          last_unit, expires_at, created_by, reason)
    VALUES (p_org, p_site, p_rack, p_kind, p_device, p_front, p_rear, p_first_unit, p_last_unit,
            CASE WHEN p_ttl_seconds > 0 THEN now() + make_interval(secs => p_ttl_seconds) END,
            p_actor, p_reason)
    RETURNING id, rack_id, device_id, created_at, expires_at
  ), s AS (
    INSERT INTO booking_slots (booking_id, rack_id, side, unit)
    SELECT h.id, h.rack_id, x.side, x.unit
      FROM h, unnest(p_sides, p_units) AS x(side, unit)
  )
  SELECT h.id::text || '|' || h.rack_id::text || '|' || coalesce(h.device_id::text, '') || '|' ||
         (extract(epoch FROM h.created_at) * 1000000)::bigint || '|' ||
         coalesce((extract(epoch FROM h.expires_at) * 1000000)::bigint::text, '')
    INTO returned
    FROM h;
EXCEPTION WHEN integrity_constraint_violation THEN
  GET STACKED DIAGNOSTICS violated_constraint = CONSTRAINT_NAME,
                          violated_sqlstate = RETURNED_SQLSTATE;
END
$$;
