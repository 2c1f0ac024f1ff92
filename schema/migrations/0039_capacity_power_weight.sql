-- The rack's own power and weight budgets (racks.power_budget_watts, weight_budget_kg, since
-- 0001 and until now only read by the planners) decided by the database, as 0038 decides feeds
-- and cooling: one rack_budgets row per rack and dimension ('power', 'weight'), changed by every
-- booking's transaction, with a CHECK of its own name. Five 450 W servers no longer go into a
-- 2,000 W rack: the fifth is refused by rack_power_within_budget.
--
-- Reservations carry figures. A rack reservation (kind 'reservation', no device) counts the
-- power and weight its writer gave it (bookings.power_watts, weight_kg: a delivery item's known
-- figures, ReserveUnits' optional ones) in 'power', 'weight' and 'cooling'; a figure it lacks is
-- not counted: such a reservation holds units only (the write path says so). Promotion exchanges
-- the reservation's figures for the device's (the BEFORE trigger fixes the device's, the AFTER
-- trigger subtracts the old and adds the new), so a device that needs more than was reserved is
-- judged at promotion. Reservations hang on no feed (their ports are not known): the feed rows
-- count devices only.
--
-- Unknown is never free and never a number that closes the rack. A device booking on a rack
-- with a power (weight) budget needs the device's power (weight) figure: bookings_power_known,
-- bookings_weight_known, as 0038 does for feeds and cooling.
--
-- Racks that stood before this migration. A rack may already carry more than its budget, or
-- devices without the figure (nothing refused them until now). Neither is rewritten or guessed:
--   allowance: the row's CHECK is used <= capacity + allowance, and allowance is set here to what
--     the rack is over by. Every change that lowers used lowers allowance with it (never below
--     0), no change raises it except a figure becoming known (below); so the rack accepts
--     releases, refuses every addition until it is back under its budget, and from then on is
--     held to the budget exactly. allowance is 0 on every row built after this migration.
--   unknown: the number of active device bookings counted without the figure. While it is above
--     0 the rack's free amount is not known, so the apply trigger refuses every booking that
--     would add to the row (rack_power_load_unknown, rack_weight_load_unknown: "unknown reads as
--     blocked") and lets releases pass. Setting the device's figure (devices.power_draw_watts,
--     weight_kg) fills its active bookings' figures (trigger on devices): unknown drops, used
--     rises by the figure and allowance rises to cover it, since what already stands in the rack
--     is a fact to record, not a booking to refuse.
--
-- Figures of an active booking are fixed: an UPDATE may fill a figure that is NULL, and the
-- promotion trigger may exchange them when the booking's kind or device changes; any other
-- change of power_watts, power_ports, feed_ids or weight_kg of an active booking is refused
-- (bookings_figures_fixed), so a writer cannot lower what a booking counts behind the rules'
-- back (0038 checked a raise but not a lowering).
--
-- Enforced here (schema), whatever path writes: the four rules above. Enforced by the code path
-- (services/occupancy/capacity_refusal.cc): the readable refusal naming the rack, the figures
-- and the amount over, and reservations' figures bounded before they are written.
--
-- Rolling upgrade: the previous release calls dcl_insert_booking with 14 arguments (kept, now
-- inserting no figures) and dcl_capacity_contribution with 4 (kept as 0038 wrote it); this
-- release calls the 17-argument dcl_insert_booking and the 5-argument contribution. The
-- previous release's bookings are counted by the same triggers.

-- Taken first: the trigger below locks bookings against writers until this migration commits,
-- so the figures filled and the rows built here count every booking.
CREATE FUNCTION dcl_bookings_figures_fixed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.released_at IS NULL AND NEW.released_at IS NULL
     AND OLD.kind = NEW.kind AND OLD.device_id IS NOT DISTINCT FROM NEW.device_id
     AND ((OLD.power_watts IS NOT NULL AND NEW.power_watts IS DISTINCT FROM OLD.power_watts)
          OR (OLD.power_ports IS NOT NULL AND NEW.power_ports IS DISTINCT FROM OLD.power_ports)
          OR (OLD.feed_ids IS NOT NULL AND NEW.feed_ids IS DISTINCT FROM OLD.feed_ids)
          OR (OLD.weight_kg IS NOT NULL AND NEW.weight_kg IS DISTINCT FROM OLD.weight_kg)) THEN
    RAISE EXCEPTION 'booking %: the figures an active booking counts are fixed when it is made',
      OLD.id
      USING ERRCODE = 'check_violation', CONSTRAINT = 'bookings_figures_fixed';
  END IF;
  RETURN NEW;
END
$$;

-- A weight figure, as 0038's power_watts. Bounded like the device's own figures are
-- (services/common/validation.h), so no sum of a rack's bookings can leave bigint.
ALTER TABLE bookings
  ADD COLUMN weight_kg bigint CONSTRAINT bookings_weight_kg_valid
    CHECK (weight_kg BETWEEN 0 AND 1000000);

CREATE TRIGGER bookings_figures_fixed
  BEFORE UPDATE OF power_watts, power_ports, feed_ids, weight_kg ON bookings
  FOR EACH ROW EXECUTE FUNCTION dcl_bookings_figures_fixed();

-- The two new dimensions and their rules. NOT VALID: no existing row has dimension 'power' or
-- 'weight' and allowance/unknown are new (0 everywhere), so no existing row can violate them;
-- every row written from now on is checked.
ALTER TABLE rack_budgets
  ADD COLUMN allowance bigint NOT NULL DEFAULT 0,
  ADD COLUMN unknown bigint NOT NULL DEFAULT 0;
ALTER TABLE rack_budgets
  ADD CONSTRAINT rack_budgets_allowance_nonnegative CHECK (allowance >= 0) NOT VALID,
  ADD CONSTRAINT rack_budgets_unknown_nonnegative CHECK (unknown >= 0) NOT VALID,
  ADD CONSTRAINT rack_budgets_dimension_known
    CHECK (dimension IN ('feed', 'feed_lost', 'cooling', 'power', 'weight')) NOT VALID,
  ADD CONSTRAINT rack_power_within_budget
    CHECK (dimension <> 'power' OR used <= capacity + allowance) NOT VALID,
  ADD CONSTRAINT rack_weight_within_budget
    CHECK (dimension <> 'weight' OR used <= capacity + allowance) NOT VALID,
  DROP CONSTRAINT rack_budgets_dimension_valid;

-- What a booking with these figures adds to each budget row of the rack, given the rack's feeds
-- as they are now: 'power' and 'weight', whose amount is NULL when the figure is unknown
-- (counted in the row's unknown, see the header), and 0038's feed, feed_lost and cooling rows
-- as 0038's function computes them (they need the power figure). 0038's four-argument function
-- stays for the previous release's refusal text; this one is every rule in one place.
CREATE FUNCTION dcl_capacity_contribution(p_rack uuid, p_power bigint, p_ports bigint,
                                          p_feed_ids uuid[], p_weight bigint)
RETURNS TABLE (dimension text, key text, amount bigint)
LANGUAGE sql STABLE AS $$
  WITH f AS (SELECT id FROM power_feeds WHERE rack_id = p_rack),
       nf AS (SELECT count(*) AS n FROM f),
       conn AS (SELECT f.id FROM f, nf
                 WHERE p_power IS NOT NULL AND coalesce(p_ports, 0) > 0
                   AND (p_ports >= nf.n OR f.id = ANY (p_feed_ids))),
       k AS (SELECT count(*) AS n FROM conn)
  SELECT 'power', '', p_power
  UNION ALL
  SELECT 'weight', '', p_weight
  UNION ALL
  SELECT 'cooling', '', p_power WHERE p_power IS NOT NULL
  UNION ALL
  SELECT 'feed', c.id::text, ceil(p_power::numeric / k.n)::bigint FROM conn c, k
  UNION ALL
  SELECT 'feed_lost', l.id::text || '>' || c.id::text,
         CASE WHEN l.id IN (SELECT id FROM conn) THEN ceil(p_power::numeric / (k.n - 1))::bigint
              ELSE ceil(p_power::numeric / k.n)::bigint END
    FROM f l, conn c, k
   WHERE c.id <> l.id
$$;

-- A booking's contribution while it is active: a device booking (placement, move hold) all of
-- its rows, unknown figures included; a rack reservation the power, weight and heat it names
-- (no feed: its ports are not known; no unknown: without a figure it holds units only).
CREATE OR REPLACE FUNCTION dcl_booking_contribution(b bookings)
RETURNS TABLE (dimension text, key text, amount bigint)
LANGUAGE sql STABLE AS $$
  SELECT c.dimension, c.key, c.amount
    FROM dcl_capacity_contribution(b.rack_id, b.power_watts, b.power_ports, b.feed_ids,
                                   b.weight_kg) c
   WHERE b.released_at IS NULL
     AND ((b.device_id IS NOT NULL AND b.kind IN ('placement', 'move_hold'))
          OR (b.kind = 'reservation' AND c.amount IS NOT NULL
              AND c.dimension IN ('power', 'weight', 'cooling')))
$$;

-- 0038's checks of a device booking's figures, and: a rack with a power budget needs the
-- device's power figure, one with a weight budget its weight.
CREATE FUNCTION dcl_check_booking_figures(p_rack uuid, p_device uuid, p_power bigint,
                                          p_ports bigint, p_feed_ids uuid[], p_weight bigint)
RETURNS void LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_rack racks;
BEGIN
  SELECT * INTO v_rack FROM racks WHERE id = p_rack;
  IF p_power IS NULL AND v_rack.power_budget_watts IS NOT NULL THEN
    RAISE EXCEPTION 'device % has no power figure (devices.power_draw_watts)', p_device
      USING ERRCODE = 'check_violation', CONSTRAINT = 'bookings_power_known';
  END IF;
  IF p_weight IS NULL AND v_rack.weight_budget_kg IS NOT NULL THEN
    RAISE EXCEPTION 'device % has no weight figure (devices.weight_kg)', p_device
      USING ERRCODE = 'check_violation', CONSTRAINT = 'bookings_weight_known';
  END IF;
  PERFORM dcl_check_booking_figures(p_rack, p_device, p_power, p_ports, p_feed_ids);
END
$$;

-- The feeds a device booking hangs on when it names none and has fewer power ports than the rack
-- has feeds (a single-PSU server on an A/B rack): dcl decides, records the choice in feed_ids and
-- the write path answers it (Booking.power_feeds), as it decides units. The choice: the p feeds
-- with the most headroom, each feed's headroom being the least room left on the rows the device
-- would load there (the feed itself, and the feed carrying each other lost feed's load); ties by
-- name. Read without locks: it is a choice, not a rule; the rows' CHECKs decide, and a booking
-- that lost a race for the chosen feed is refused naming it (a retry chooses again).
CREATE FUNCTION dcl_choose_feeds(p_rack uuid, p_ports bigint) RETURNS uuid[]
LANGUAGE sql STABLE AS $$
  SELECT array_agg(x.id ORDER BY x.id)
    FROM (SELECT f.id
            FROM power_feeds f
           WHERE f.rack_id = p_rack
           ORDER BY (SELECT min(b.capacity - b.used)
                       FROM rack_budgets b
                      WHERE b.rack_id = p_rack
                        AND ((b.dimension = 'feed' AND b.key = f.id::text)
                             OR (b.dimension = 'feed_lost'
                                 AND split_part(b.key, '>', 2) = f.id::text))) DESC NULLS LAST,
                    f.name
           LIMIT greatest(p_ports, 0)) x
$$;

-- BEFORE: fixes a device booking's figures from its device and checks them (0038), now with
-- the weight and the feeds chosen where the booking names none (dcl_choose_feeds). On a rack without budget rows and airflow nothing is read (0038's dormant path);
-- a reservation promoted there drops its figures, so that a budget configured later takes the
-- device's (dcl_rack_budgets_rebuild fills them) and not what was reserved.
CREATE OR REPLACE FUNCTION dcl_bookings_figures() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_device devices;
BEGIN
  IF NEW.device_id IS NULL OR NEW.kind NOT IN ('placement', 'move_hold')
     OR NEW.released_at IS NOT NULL THEN
    RETURN NEW;
  END IF;
  IF TG_OP = 'UPDATE' AND OLD.device_id IS NOT DISTINCT FROM NEW.device_id
     AND OLD.kind IN ('placement', 'move_hold') AND OLD.released_at IS NULL THEN
    RETURN NEW;  -- a move hold becoming a placement of the same device: its figures stay
  END IF;
  PERFORM 1 FROM racks WHERE id = NEW.rack_id FOR KEY SHARE;
  IF NOT EXISTS (SELECT 1 FROM rack_budgets WHERE rack_id = NEW.rack_id)
     AND (SELECT airflow FROM racks WHERE id = NEW.rack_id) IS NULL THEN
    NEW.power_watts := NULL;
    NEW.power_ports := NULL;
    NEW.weight_kg := NULL;
    RETURN NEW;
  END IF;
  SELECT * INTO v_device FROM devices WHERE id = NEW.device_id;
  NEW.power_watts := v_device.power_draw_watts;
  NEW.power_ports := v_device.power_port_count;
  NEW.weight_kg := v_device.weight_kg;
  IF NEW.feed_ids IS NULL AND NEW.power_ports > 0
     AND NEW.power_ports < (SELECT count(*) FROM power_feeds WHERE rack_id = NEW.rack_id) THEN
    NEW.feed_ids := dcl_choose_feeds(NEW.rack_id, NEW.power_ports);
  END IF;
  PERFORM dcl_check_booking_figures(NEW.rack_id, NEW.device_id, NEW.power_watts, NEW.power_ports,
                                    NEW.feed_ids, NEW.weight_kg);
  RETURN NEW;
END
$$;

-- AFTER: 0038's apply, with unknown amounts and the allowance (header). The rows are locked in
-- one order first; then every row changes by its delta and its CHECK judges the new sum; a
-- booking that added to a row whose load is partly unknown is refused after it (the exception
-- undoes the update).
CREATE OR REPLACE FUNCTION dcl_bookings_apply_budget() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  v_blocked text;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM rack_budgets WHERE rack_id = NEW.rack_id) THEN
    RETURN NULL;
  END IF;
  PERFORM 1
     FROM rack_budgets b
    WHERE (b.rack_id, b.dimension, b.key) IN (
            SELECT NEW.rack_id, x.dimension, x.key FROM dcl_booking_contribution(NEW) x
            UNION ALL
            SELECT OLD.rack_id, x.dimension, x.key FROM dcl_booking_contribution(OLD) x
             WHERE TG_OP = 'UPDATE')
    ORDER BY b.rack_id, b.dimension, b.key
      FOR UPDATE;
  WITH changed AS (
    UPDATE rack_budgets b
       SET used = b.used + d.amount,
           unknown = b.unknown + d.unknown,
           allowance = CASE
             WHEN d.unknown < 0 AND d.amount > 0  -- a figure became known: record what stands
               THEN greatest(b.allowance, b.used + d.amount - b.capacity)
             ELSE least(b.allowance, greatest(b.used + d.amount - b.capacity, 0)) END
      FROM (SELECT c.rack_id, c.dimension, c.key, sum(coalesce(c.amount, 0)) AS amount,
                   sum(CASE WHEN c.amount IS NULL THEN c.sign ELSE 0 END) AS unknown
              FROM (SELECT NEW.rack_id AS rack_id, x.dimension, x.key, x.amount, 1 AS sign
                      FROM dcl_booking_contribution(NEW) x
                    UNION ALL
                    SELECT OLD.rack_id, x.dimension, x.key, -x.amount, -1
                      FROM dcl_booking_contribution(OLD) x
                     WHERE TG_OP = 'UPDATE') c
             GROUP BY 1, 2, 3
            HAVING sum(coalesce(c.amount, 0)) <> 0
                OR sum(CASE WHEN c.amount IS NULL THEN c.sign ELSE 0 END) <> 0) d
     WHERE b.rack_id = d.rack_id AND b.dimension = d.dimension AND b.key = d.key
    RETURNING b.dimension, b.unknown - d.unknown AS unknown_before, d.amount, d.unknown
  )
  SELECT min(dimension) INTO v_blocked
    FROM changed WHERE unknown_before > 0 AND amount > 0 AND unknown >= 0;
  IF v_blocked IS NOT NULL THEN
    RAISE EXCEPTION 'rack %: its % load is not known (a device booked before the budget has no figure)',
      NEW.rack_id, v_blocked
      USING ERRCODE = 'check_violation', CONSTRAINT = 'rack_' || v_blocked || '_load_unknown';
  END IF;
  RETURN NULL;
END
$$;

-- The rows a rack's facts call for, with what its active bookings use of each and how many
-- count without a figure. Replaces 0038's (one more column: unknown).
DROP FUNCTION dcl_rack_budget_drift();
DROP FUNCTION dcl_rack_budgets_expected(uuid);
CREATE FUNCTION dcl_rack_budgets_expected(p_rack uuid)
RETURNS TABLE (dimension text, key text, used bigint, unknown bigint, capacity bigint)
LANGUAGE sql STABLE AS $$
  WITH wanted AS (
    SELECT 'cooling' AS dimension, '' AS key, cooling_budget_watts::bigint AS capacity
      FROM racks WHERE id = p_rack AND cooling_budget_watts IS NOT NULL
    UNION ALL
    SELECT 'power', '', power_budget_watts::bigint
      FROM racks WHERE id = p_rack AND power_budget_watts IS NOT NULL
    UNION ALL
    SELECT 'weight', '', weight_budget_kg::bigint
      FROM racks WHERE id = p_rack AND weight_budget_kg IS NOT NULL
    UNION ALL
    SELECT 'feed', id::text, available_watts FROM power_feeds WHERE rack_id = p_rack
    UNION ALL
    SELECT 'feed_lost', l.id::text || '>' || c.id::text, c.available_watts
      FROM power_feeds l JOIN power_feeds c ON c.rack_id = l.rack_id AND c.id <> l.id
     WHERE l.rack_id = p_rack
  ), usage AS (
    SELECT c.dimension, c.key, coalesce(sum(c.amount), 0)::bigint AS used,
           count(*) FILTER (WHERE c.amount IS NULL) AS unknown
      FROM bookings b, dcl_booking_contribution(b) c
     WHERE b.rack_id = p_rack AND b.released_at IS NULL
     GROUP BY 1, 2
  )
  SELECT w.dimension, w.key, coalesce(u.used, 0), coalesce(u.unknown, 0), w.capacity
    FROM wanted w LEFT JOIN usage u USING (dimension, key)
$$;

-- Rebuilds a rack's rows after its feeds or budgets changed (0038), now with power and weight.
-- Every active device booking is checked as a new one would be, so a rack whose devices lack a
-- figure its budgets need, or that carries more than a budget, refuses the change: a rebuilt
-- row has no allowance and no unknown.
CREATE OR REPLACE FUNCTION dcl_rack_budgets_rebuild(p_rack uuid) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  v_booking bookings;
BEGIN
  PERFORM 1 FROM racks WHERE id = p_rack FOR UPDATE;
  DELETE FROM rack_budgets WHERE rack_id = p_rack;
  -- No budget rows exist while this runs, so these updates apply no delta.
  UPDATE bookings b
     SET power_watts = coalesce(b.power_watts, d.power_draw_watts),
         power_ports = coalesce(b.power_ports, d.power_port_count),
         weight_kg = coalesce(b.weight_kg, d.weight_kg)
    FROM devices d
   WHERE b.rack_id = p_rack AND b.released_at IS NULL AND d.id = b.device_id
     AND b.kind IN ('placement', 'move_hold')
     AND ((b.power_watts IS NULL AND d.power_draw_watts IS NOT NULL)
          OR (b.power_ports IS NULL AND d.power_port_count IS NOT NULL)
          OR (b.weight_kg IS NULL AND d.weight_kg IS NOT NULL));
  FOR v_booking IN
    SELECT * FROM bookings
     WHERE rack_id = p_rack AND released_at IS NULL AND device_id IS NOT NULL
       AND kind IN ('placement', 'move_hold')
  LOOP
    PERFORM dcl_check_booking_figures(p_rack, v_booking.device_id, v_booking.power_watts,
                                      v_booking.power_ports, v_booking.feed_ids,
                                      v_booking.weight_kg);
  END LOOP;
  INSERT INTO rack_budgets (rack_id, dimension, key, used, capacity)
  SELECT p_rack, e.dimension, e.key, e.used, e.capacity FROM dcl_rack_budgets_expected(p_rack) e;
END
$$;

CREATE OR REPLACE FUNCTION dcl_racks_rebuild_budgets() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.cooling_budget_watts IS DISTINCT FROM OLD.cooling_budget_watts
     OR NEW.airflow IS DISTINCT FROM OLD.airflow
     OR NEW.power_budget_watts IS DISTINCT FROM OLD.power_budget_watts
     OR NEW.weight_budget_kg IS DISTINCT FROM OLD.weight_budget_kg THEN
    PERFORM dcl_rack_budgets_rebuild(NEW.id);
  END IF;
  RETURN NULL;
END
$$;

-- A rack created with a budget gets its rows at once (0038 built them only on an update, so a
-- rack inserted with a cooling budget had none until its first change).
CREATE FUNCTION dcl_racks_build_budgets() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM dcl_rack_budgets_rebuild(NEW.id);
  RETURN NULL;
END
$$;

CREATE TRIGGER racks_build_budgets
  AFTER INSERT ON racks
  FOR EACH ROW
  WHEN (NEW.cooling_budget_watts IS NOT NULL OR NEW.airflow IS NOT NULL
        OR NEW.power_budget_watts IS NOT NULL OR NEW.weight_budget_kg IS NOT NULL)
  EXECUTE FUNCTION dcl_racks_build_budgets();

DROP TRIGGER racks_rebuild_budgets ON racks;
CREATE TRIGGER racks_rebuild_budgets
  AFTER UPDATE OF cooling_budget_watts, airflow, power_budget_watts, weight_budget_kg ON racks
  FOR EACH ROW EXECUTE FUNCTION dcl_racks_rebuild_budgets();

-- Setting a device's figure fills the figures its active bookings lack (the header's unknown).
-- A figure already fixed on a booking stays: the booking counts what it was made with.
CREATE FUNCTION dcl_devices_fill_booking_figures() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE bookings b
     SET power_watts = coalesce(b.power_watts, NEW.power_draw_watts),
         power_ports = coalesce(b.power_ports, NEW.power_port_count),
         weight_kg = coalesce(b.weight_kg, NEW.weight_kg)
   WHERE b.device_id = NEW.id AND b.released_at IS NULL
     AND b.kind IN ('placement', 'move_hold')
     AND EXISTS (SELECT 1 FROM rack_budgets r WHERE r.rack_id = b.rack_id)
     AND ((b.power_watts IS NULL AND NEW.power_draw_watts IS NOT NULL)
          OR (b.power_ports IS NULL AND NEW.power_port_count IS NOT NULL)
          OR (b.weight_kg IS NULL AND NEW.weight_kg IS NOT NULL));
  RETURN NULL;
END
$$;

CREATE TRIGGER devices_fill_booking_figures
  AFTER UPDATE OF power_draw_watts, power_port_count, weight_kg ON devices
  FOR EACH ROW EXECUTE FUNCTION dcl_devices_fill_booking_figures();

-- The audit (0038's, with the unknown count and the two new dimensions): rows whose used or
-- unknown differs from a recomputation, rows missing, rows that should not exist.
CREATE FUNCTION dcl_rack_budget_drift()
RETURNS TABLE (rack_id uuid, dimension text, key text, used bigint, expected bigint,
               unknown bigint, expected_unknown bigint)
LANGUAGE sql STABLE AS $$
  WITH expected AS (
    SELECT r.id AS rack_id, e.dimension, e.key, e.used, e.unknown
      FROM racks r, dcl_rack_budgets_expected(r.id) e
     WHERE r.cooling_budget_watts IS NOT NULL OR r.power_budget_watts IS NOT NULL
        OR r.weight_budget_kg IS NOT NULL
        OR EXISTS (SELECT 1 FROM power_feeds f WHERE f.rack_id = r.id)
  )
  SELECT coalesce(b.rack_id, e.rack_id), coalesce(b.dimension, e.dimension),
         coalesce(b.key, e.key), b.used, e.used, b.unknown, e.unknown
    FROM rack_budgets b FULL JOIN expected e USING (rack_id, dimension, key)
   WHERE b.used IS DISTINCT FROM e.used OR b.unknown IS DISTINCT FROM e.unknown
$$;

-- The insert of 0026, with the booking's figures: a reservation's power and weight (NULL: not
-- given) and the names of the feeds a device booking hangs on (NULL: the rack's feeds as the
-- BEFORE trigger takes them, all of them or its choice; a name the rack does not have names no
-- feed, and bookings_feeds_named refuses the count). A device booking's power and weight are the
-- device's, fixed by the BEFORE trigger whatever is passed. Answers 0026's five fields and a
-- sixth: the names of the feeds the booking hangs on, comma-separated ('' for none named).
CREATE FUNCTION dcl_insert_booking(p_org uuid, p_site uuid, p_rack uuid, p_kind text,
                                   p_device uuid, p_front boolean, p_rear boolean,
                                   p_first_unit integer, p_last_unit integer,
                                   p_ttl_seconds bigint, p_actor text, p_reason text,
                                   p_sides text[], p_units integer[], p_power_watts bigint,
                                   p_weight_kg bigint, p_feed_names text[],
                                   OUT returned text, OUT violated_constraint text,
                                   OUT violated_sqlstate text)
LANGUAGE plpgsql AS $$
BEGIN
  WITH h AS (
    INSERT INTO bookings (org_id, site_id, rack_id, kind, device_id, front, rear, first_unit,
                          last_unit, expires_at, created_by, reason, power_watts, weight_kg,
                          feed_ids)
    VALUES (p_org, p_site, p_rack, p_kind, p_device, p_front, p_rear, p_first_unit, p_last_unit,
            CASE WHEN p_ttl_seconds > 0 THEN now() + make_interval(secs => p_ttl_seconds) END,
            p_actor, p_reason, p_power_watts, p_weight_kg,
            CASE WHEN p_feed_names IS NOT NULL THEN
              ARRAY(SELECT f.id FROM power_feeds f
                     WHERE f.rack_id = p_rack AND f.name = ANY (p_feed_names) ORDER BY f.id)
            END)
    RETURNING id, rack_id, device_id, created_at, expires_at, feed_ids
  ), s AS (
    INSERT INTO booking_slots (booking_id, rack_id, side, unit)
    SELECT h.id, h.rack_id, x.side, x.unit
      FROM h, unnest(p_sides, p_units) AS x(side, unit)
  )
  SELECT h.id::text || '|' || h.rack_id::text || '|' || coalesce(h.device_id::text, '') || '|' ||
         (extract(epoch FROM h.created_at) * 1000000)::bigint || '|' ||
         coalesce((extract(epoch FROM h.expires_at) * 1000000)::bigint::text, '') || '|' ||
         coalesce((SELECT string_agg(f.name, ',' ORDER BY f.name) FROM power_feeds f
                    WHERE f.id = ANY (h.feed_ids)), '')
    INTO returned
    FROM h;
EXCEPTION WHEN integrity_constraint_violation THEN
  GET STACKED DIAGNOSTICS violated_constraint = CONSTRAINT_NAME,
                          violated_sqlstate = RETURNED_SQLSTATE;
END
$$;

-- The previous release's insert: the same, without figures, answering 0026's five fields.
CREATE OR REPLACE FUNCTION dcl_insert_booking(p_org uuid, p_site uuid, p_rack uuid, p_kind text,
                                              p_device uuid, p_front boolean, p_rear boolean,
                                              p_first_unit integer, p_last_unit integer,
                                              p_ttl_seconds bigint, p_actor text, p_reason text,
                                              p_sides text[], p_units integer[],
                                              OUT returned text, OUT violated_constraint text,
                                              OUT violated_sqlstate text)
LANGUAGE sql AS $$
  SELECT regexp_replace(i.returned, '\|[^|]*$', ''), i.violated_constraint, i.violated_sqlstate
    FROM dcl_insert_booking(p_org, p_site, p_rack, p_kind, p_device, p_front, p_rear,
                            p_first_unit, p_last_unit, p_ttl_seconds, p_actor, p_reason,
                            p_sides, p_units, NULL::bigint, NULL::bigint, NULL::text[]) i
$$;

-- Adopts a rack that stood before its power and weight budgets were decided here (the header):
-- its device bookings take the figures their devices have, and the rack gets its 'power' and
-- 'weight' rows, over by what it is over by (allowance) and with the bookings whose figure is
-- unknown counted as such. Nothing is refused: what stands in the rack is recorded as it is.
-- Called below for every rack with a budget; a rack that already has the rows is left alone.
CREATE FUNCTION dcl_rack_budgets_adopt(p_rack uuid) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
  PERFORM 1 FROM racks WHERE id = p_rack FOR UPDATE;
  IF EXISTS (SELECT 1 FROM rack_budgets
              WHERE rack_id = p_rack AND dimension IN ('power', 'weight')) THEN
    RETURN;
  END IF;
  -- Power and weight rows do not exist yet, so these updates apply no delta to them (feed and
  -- cooling rows, where 0038 built them, already count these bookings' power).
  UPDATE bookings b
     SET power_watts = coalesce(b.power_watts, d.power_draw_watts),
         weight_kg = coalesce(b.weight_kg, d.weight_kg)
    FROM devices d
   WHERE d.id = b.device_id AND b.rack_id = p_rack AND b.released_at IS NULL
     AND b.kind IN ('placement', 'move_hold')
     AND ((b.power_watts IS NULL AND d.power_draw_watts IS NOT NULL)
          OR (b.weight_kg IS NULL AND d.weight_kg IS NOT NULL));
  INSERT INTO rack_budgets (rack_id, dimension, key, used, unknown, capacity, allowance)
  SELECT p_rack, e.dimension, e.key, e.used, e.unknown, e.capacity,
         greatest(e.used - e.capacity, 0)
    FROM dcl_rack_budgets_expected(p_rack) e
   WHERE e.dimension IN ('power', 'weight');
END
$$;

SELECT dcl_rack_budgets_adopt(id) FROM racks
 WHERE power_budget_watts IS NOT NULL OR weight_budget_kg IS NOT NULL;

-- A rack's feeds are judged as a set, not row by row: 0038's trigger rebuilt the rack's rows
-- after every row, so a set change written as several statements (InventoryService.
-- SetPowerFeeds: upsert the named feeds, delete the others) was judged at its in-between states
-- (a third feed inserted before the second one is deleted leaves a dual-PSU device without
-- named feeds for a moment). Deferred, the rebuild runs at COMMIT, on the set as it ends; a
-- writer that wants the refusal at a statement of its own (the service, to name the constraint
-- in its answer) says SET CONSTRAINTS power_feeds_rebuild IMMEDIATE after its writes. Every
-- queued row rebuilds the whole rack, so the last one decides; the earlier ones see the same
-- end state.
DROP TRIGGER power_feeds_rebuild ON power_feeds;
CREATE CONSTRAINT TRIGGER power_feeds_rebuild
  AFTER INSERT OR UPDATE OR DELETE ON power_feeds
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION dcl_power_feeds_rebuild();

-- The service's judgement of its feed writes at a statement of its own (dcl_guarded_exec runs
-- one statement returning a value, and SET CONSTRAINTS returns none): fires the queued rebuilds
-- now, so a refusal carries its constraint's name to the caller. Returns the rack's feed count.
CREATE FUNCTION dcl_power_feeds_judge(p_rack uuid) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
  SET CONSTRAINTS power_feeds_rebuild IMMEDIATE;
  RETURN (SELECT count(*) FROM power_feeds WHERE rack_id = p_rack);
END
$$;
GRANT EXECUTE ON FUNCTION dcl_power_feeds_judge(uuid) TO dcl_app;
