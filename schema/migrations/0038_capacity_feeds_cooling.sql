-- Capacity the database decides, for three questions: power per feed, power with one feed lost
-- (N-1), and cooling; plus the airflow of a device against its rack's. Each is its own rule;
-- none is added into another. Rack units stay the slot index's (0003); the rack's own
-- power_budget_watts and weight_budget_kg keep their meaning (read and reported by the planners,
-- not enforced here).
--
-- Dormant until a rack is configured: a rack without power feeds, cooling_budget_watts and
-- airflow has no budget rows and no airflow rule, and every booking on it is decided exactly as
-- before. No rack has any of them when this migration runs.
--
-- The model follows NetBox's names, so an import maps one to one:
--   power_feeds: per rack, name (A, B, ...), voltage, amperage, phase, max_utilization % (80 by
--     default) and the derated rating available_watts = V x A (x sqrt 3 three-phase) x
--     max_utilization %, rounded down (NetBox's available_power);
--   racks.cooling_budget_watts (heat the rack may take) and racks.airflow (front-to-rear or
--     rear-to-front);
--   devices.power_port_count and devices.airflow (NetBox's DeviceAirflowChoices); the power
--     figure is devices.power_draw_watts (0001, NetBox's allocated_draw).
--
-- A booking of a device (placement, move hold) fixes the figures it is counted with when it is
-- made (bookings.power_watts, power_ports; feed_ids: the feeds it hangs on when it has fewer
-- ports than the rack has feeds). A release subtracts exactly what was added, whatever the
-- device's row says by then; promoting a move hold into a placement of the same device keeps
-- them; a rack reservation's promotion takes the device's.
--
-- The rules:
--   feed (per feed): in normal operation each feed carries, of every device on it, its draw
--     shared evenly over the device's feeds, rounded up; the sum stays within available_watts.
--   feed_lost (per lost feed L and remaining feed C): with L lost, a device on L and on other
--     feeds shares its whole draw over its remaining feeds (rounded up); a device on L alone is
--     lost with it and is not carried; a device not on L keeps its normal share. C's load stays
--     within C's available_watts. This is N-1 for every device with two or more power ports; a
--     single-PSU device counts on its one feed and is the feed's own risk, as a DC engineer
--     reads it (its redundancy is its service's business, not the rack's).
--   Which feeds: a device with P >= 1 power ports on a rack with F feeds hangs on min(P, F)
--     feeds: all of them when P >= F, otherwise the P feeds its booking names (feed_ids); a
--     device with no power port draws from no feed (it still makes heat).
--   cooling: the heat of every device booking (its power figure: what a device draws it turns
--     into heat) within cooling_budget_watts.
--   airflow: on a rack with an airflow, a device's airflow is known and does not oppose the
--     rack's (front-to-rear refuses rear-to-front and rear-to-side; rear-to-front refuses
--     front-to-rear and side-to-rear); passive and the side and vertical flows are accepted.
--   unknown is never free: on a rack with feeds or a cooling budget a device booking needs the
--     device's power figure, with feeds its power port count, with an airflow its airflow.
--
-- Enforced here (schema), whatever path writes: every rule above. Each budget is one row of
-- rack_budgets per (rack, dimension, key: the feed, or "lost>remaining" feed pair) holding used
-- and capacity, with one CHECK per dimension under its own name. One row per question, not a
-- sum over the bookings: the booking's transaction updates the rows it changes, so two
-- transactions booking into one rack queue on those rows' locks and the second sees the first's
-- sum (READ COMMITTED re-reads an updated row) — exactly like the slot index for units, an
-- overcommit cannot commit; and the CHECK's name tells the write path which question said no.
-- The triggers on bookings apply every booking's contribution (insert, release, promotion); the
-- triggers on power_feeds and on racks' cooling_budget_watts / airflow rebuild the rack's rows
-- from its active bookings, so a change that would leave the rack over a budget (a feed lowered
-- below its load, a cooling budget below the heat, an airflow opposite a device's) is refused by
-- the same CHECKs or named rules. A refusal raises check_violation with the constraint's name:
--   rack_feed_within_rating, rack_feed_redundancy, rack_cooling_within_budget (budget rows);
--   bookings_power_known, bookings_power_ports_known, bookings_airflow_known,
--   bookings_airflow_matches, bookings_feeds_named (a device booking's figures).
-- Enforced by the code path (services/occupancy/booking_store.cc): naming the rack, the feed,
-- the figures and the amount over in the refusal, by re-reading the rack's rows after it.
--
-- No allowance for a rack that already carries more than a new budget: no rack has a budget when
-- this runs, and a budget configured later over what a rack carries is refused, so the person
-- configuring it sees the rack's real state instead of a budget that is silently not one.
--
-- Privileges (0009): dcl_app reads and writes power_feeds (configuring a rack is the inventory's
-- business) but only reads rack_budgets. The rows change only through the triggers' functions,
-- which run as the migrating role (SECURITY DEFINER, with a fixed search_path), so a service
-- can neither raise a capacity nor lower a sum behind the rules' back.
--
-- dcl_rack_budget_drift() lists budget rows whose used differs from a recomputation from the
-- active bookings (the fault history's audit); it returns no row when the triggers held.

CREATE TABLE power_feeds (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  rack_id         uuid NOT NULL CONSTRAINT power_feeds_rack_fk REFERENCES racks (id),
  name            text NOT NULL CONSTRAINT power_feeds_name_nonempty CHECK (name <> ''),
  voltage         bigint NOT NULL CONSTRAINT power_feeds_voltage_valid
                    CHECK (voltage BETWEEN 1 AND 1000),
  amperage        bigint NOT NULL CONSTRAINT power_feeds_amperage_valid
                    CHECK (amperage BETWEEN 1 AND 1000),
  phase           text NOT NULL DEFAULT 'single-phase' CONSTRAINT power_feeds_phase_valid
                    CHECK (phase IN ('single-phase', 'three-phase')),
  max_utilization bigint NOT NULL DEFAULT 80 CONSTRAINT power_feeds_max_utilization_valid
                    CHECK (max_utilization BETWEEN 1 AND 100),
  available_watts bigint GENERATED ALWAYS AS (
    floor(voltage::numeric * amperage
          * CASE phase WHEN 'three-phase' THEN sqrt(3::numeric) ELSE 1 END
          * max_utilization / 100)::bigint) STORED,
  CONSTRAINT power_feeds_rack_name_uq UNIQUE (rack_id, name)
);

-- NULL = no budget / no rule for this rack.
ALTER TABLE racks
  ADD COLUMN cooling_budget_watts bigint CONSTRAINT racks_cooling_budget_positive
    CHECK (cooling_budget_watts > 0),
  ADD COLUMN airflow text CONSTRAINT racks_airflow_valid
    CHECK (airflow IN ('front-to-rear', 'rear-to-front'));

-- NULL = unknown (refused where a budget needs it).
ALTER TABLE devices
  ADD COLUMN power_port_count bigint CONSTRAINT devices_power_port_count_valid
    CHECK (power_port_count BETWEEN 0 AND 16),
  ADD COLUMN airflow text CONSTRAINT devices_airflow_valid
    CHECK (airflow IN ('front-to-rear', 'rear-to-front', 'left-to-right', 'right-to-left',
                       'side-to-rear', 'rear-to-side', 'bottom-to-top', 'top-to-bottom',
                       'passive', 'mixed'));

-- A device booking's figures, fixed when it is made.
ALTER TABLE bookings
  ADD COLUMN power_watts bigint CONSTRAINT bookings_power_watts_nonnegative
    CHECK (power_watts >= 0),
  ADD COLUMN power_ports bigint CONSTRAINT bookings_power_ports_nonnegative
    CHECK (power_ports >= 0),
  ADD COLUMN feed_ids uuid[];

CREATE TABLE rack_budgets (
  rack_id   uuid NOT NULL CONSTRAINT rack_budgets_rack_fk REFERENCES racks (id),
  dimension text NOT NULL CONSTRAINT rack_budgets_dimension_valid
              CHECK (dimension IN ('feed', 'feed_lost', 'cooling')),
  -- feed: the feed's id; feed_lost: "<lost feed id>><remaining feed id>"; cooling: ''.
  key       text NOT NULL DEFAULT '',
  used      bigint NOT NULL DEFAULT 0 CONSTRAINT rack_budgets_used_nonnegative CHECK (used >= 0),
  capacity  bigint NOT NULL CONSTRAINT rack_budgets_capacity_nonnegative CHECK (capacity >= 0),
  CONSTRAINT rack_budgets_pkey PRIMARY KEY (rack_id, dimension, key),
  CONSTRAINT rack_feed_within_rating CHECK (dimension <> 'feed' OR used <= capacity),
  CONSTRAINT rack_feed_redundancy CHECK (dimension <> 'feed_lost' OR used <= capacity),
  CONSTRAINT rack_cooling_within_budget CHECK (dimension <> 'cooling' OR used <= capacity)
);

-- What a device with these figures adds to each budget row of the rack (amounts >= 0), given
-- the rack's feeds as they are now. p_feed_ids matters only when the device has fewer power
-- ports than the rack has feeds.
CREATE FUNCTION dcl_capacity_contribution(p_rack uuid, p_power bigint, p_ports bigint,
                                          p_feed_ids uuid[])
RETURNS TABLE (dimension text, key text, amount bigint)
LANGUAGE sql STABLE AS $$
  WITH f AS (SELECT id FROM power_feeds WHERE rack_id = p_rack),
       nf AS (SELECT count(*) AS n FROM f),
       conn AS (SELECT f.id FROM f, nf
                 WHERE p_power IS NOT NULL AND coalesce(p_ports, 0) > 0
                   AND (p_ports >= nf.n OR f.id = ANY (p_feed_ids))),
       k AS (SELECT count(*) AS n FROM conn)
  SELECT 'cooling', '', p_power::bigint WHERE p_power IS NOT NULL
  UNION ALL
  SELECT 'feed', c.id::text, ceil(p_power::numeric / k.n)::bigint FROM conn c, k
  UNION ALL
  SELECT 'feed_lost', l.id::text || '>' || c.id::text,
         CASE WHEN l.id IN (SELECT id FROM conn) THEN ceil(p_power::numeric / (k.n - 1))::bigint
              ELSE ceil(p_power::numeric / k.n)::bigint END
    FROM f l, conn c, k
   WHERE c.id <> l.id
$$;

-- A booking's contribution: its fixed figures, while it is an active device booking.
CREATE FUNCTION dcl_booking_contribution(b bookings)
RETURNS TABLE (dimension text, key text, amount bigint)
LANGUAGE sql STABLE AS $$
  SELECT c.dimension, c.key, c.amount
    FROM dcl_capacity_contribution(b.rack_id, b.power_watts, b.power_ports, b.feed_ids) c
   WHERE b.released_at IS NULL AND b.device_id IS NOT NULL
     AND b.kind IN ('placement', 'move_hold')
$$;

-- Refuses a device booking's figures that a rule of the rack cannot decide: an unknown figure
-- a budget needs, an airflow against the rack's, feeds not named. Raises check_violation under
-- the rule's name; the message names the device, the missing figure and where it is set.
CREATE FUNCTION dcl_check_booking_figures(p_rack uuid, p_device uuid, p_power bigint,
                                          p_ports bigint, p_feed_ids uuid[])
RETURNS void LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_rack racks;
  v_airflow text;
  v_feeds uuid[];
  v_feed_count integer;
BEGIN
  SELECT * INTO v_rack FROM racks WHERE id = p_rack;
  SELECT coalesce(array_agg(id), '{}') INTO v_feeds FROM power_feeds WHERE rack_id = p_rack;
  v_feed_count := cardinality(v_feeds);
  IF p_power IS NULL AND (v_feed_count > 0 OR v_rack.cooling_budget_watts IS NOT NULL) THEN
    RAISE EXCEPTION 'device % has no power figure (devices.power_draw_watts)', p_device
      USING ERRCODE = 'check_violation', CONSTRAINT = 'bookings_power_known';
  END IF;
  IF v_feed_count > 0 THEN
    IF p_ports IS NULL THEN
      RAISE EXCEPTION 'device % has no power port count (devices.power_port_count)', p_device
        USING ERRCODE = 'check_violation', CONSTRAINT = 'bookings_power_ports_known';
    END IF;
    IF p_ports > 0 AND p_ports < v_feed_count
       AND (cardinality(p_feed_ids) IS DISTINCT FROM p_ports
            OR NOT p_feed_ids <@ v_feeds
            OR (SELECT count(DISTINCT x) FROM unnest(p_feed_ids) x) <> p_ports) THEN
      RAISE EXCEPTION 'device % has % power ports on a rack with % feeds: its booking names its feeds',
        p_device, p_ports, v_feed_count
        USING ERRCODE = 'check_violation', CONSTRAINT = 'bookings_feeds_named';
    END IF;
  END IF;
  IF v_rack.airflow IS NOT NULL THEN
    SELECT airflow INTO v_airflow FROM devices WHERE id = p_device;
    IF v_airflow IS NULL OR v_airflow = 'mixed' THEN
      RAISE EXCEPTION 'device % has no single airflow (devices.airflow is %)', p_device,
        coalesce(v_airflow, 'unset')
        USING ERRCODE = 'check_violation', CONSTRAINT = 'bookings_airflow_known';
    END IF;
    IF (v_rack.airflow = 'front-to-rear' AND v_airflow IN ('rear-to-front', 'rear-to-side'))
       OR (v_rack.airflow = 'rear-to-front' AND v_airflow IN ('front-to-rear', 'side-to-rear')) THEN
      RAISE EXCEPTION 'device % airflow % opposes the rack''s %', p_device, v_airflow,
        v_rack.airflow
        USING ERRCODE = 'check_violation', CONSTRAINT = 'bookings_airflow_matches';
    END IF;
  END IF;
END
$$;

-- BEFORE: fixes a device booking's figures from its device and checks them. The rack is read
-- FOR KEY SHARE first (the write path holds it already; a direct INSERT takes it here), so a
-- change of the rack's feeds or budgets, which locks the rack FOR UPDATE, is ordered against it.
CREATE FUNCTION dcl_bookings_figures() RETURNS trigger
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
  -- A rack without budget rows and without an airflow has no rule to apply here: nothing more
  -- is read (the common case stays as cheap as before 0038). Should the rack gain a budget,
  -- dcl_rack_budgets_rebuild fills the figures of its active bookings from their devices.
  IF NOT EXISTS (SELECT 1 FROM rack_budgets WHERE rack_id = NEW.rack_id)
     AND (SELECT airflow FROM racks WHERE id = NEW.rack_id) IS NULL THEN
    RETURN NEW;
  END IF;
  SELECT * INTO v_device FROM devices WHERE id = NEW.device_id;
  NEW.power_watts := v_device.power_draw_watts;
  NEW.power_ports := v_device.power_port_count;
  PERFORM dcl_check_booking_figures(NEW.rack_id, NEW.device_id, NEW.power_watts, NEW.power_ports,
                                    NEW.feed_ids);
  RETURN NEW;
END
$$;

-- AFTER: adds the new version's contribution and subtracts the old one's. The rows are locked
-- in one order (dimension, key) before they change, so two bookings into one rack queue and
-- never deadlock; the CHECKs judge each row's new sum.
CREATE FUNCTION dcl_bookings_apply_budget() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
  -- No budget row, no rule: the rack's bookings change nothing here. A rebuild that adds rows
  -- locks the rack FOR UPDATE and so waits for a device booking in flight (which holds it FOR
  -- KEY SHARE) and then counts it.
  IF NOT EXISTS (SELECT 1 FROM rack_budgets WHERE rack_id = NEW.rack_id) THEN
    RETURN NULL;
  END IF;
  -- Lock first, in order; then change. (One statement cannot promise the order of its locks.)
  PERFORM 1
     FROM rack_budgets b
    WHERE (b.rack_id, b.dimension, b.key) IN (
            SELECT NEW.rack_id, x.dimension, x.key FROM dcl_booking_contribution(NEW) x
            UNION ALL
            SELECT OLD.rack_id, x.dimension, x.key FROM dcl_booking_contribution(OLD) x
             WHERE TG_OP = 'UPDATE')
    ORDER BY b.rack_id, b.dimension, b.key
      FOR UPDATE;
  UPDATE rack_budgets b
     SET used = b.used + d.amount
    FROM (SELECT c.rack_id, c.dimension, c.key, sum(c.amount) AS amount
            FROM (SELECT NEW.rack_id AS rack_id, x.dimension, x.key, x.amount
                    FROM dcl_booking_contribution(NEW) x
                  UNION ALL
                  SELECT OLD.rack_id, x.dimension, x.key, -x.amount
                    FROM dcl_booking_contribution(OLD) x
                   WHERE TG_OP = 'UPDATE') c
           GROUP BY 1, 2, 3
          HAVING sum(c.amount) <> 0) d
   WHERE b.rack_id = d.rack_id AND b.dimension = d.dimension AND b.key = d.key;
  RETURN NULL;
END
$$;

CREATE TRIGGER bookings_figures
  BEFORE INSERT OR UPDATE OF kind, device_id ON bookings
  FOR EACH ROW EXECUTE FUNCTION dcl_bookings_figures();
CREATE TRIGGER bookings_apply_budget
  AFTER INSERT OR UPDATE ON bookings
  FOR EACH ROW EXECUTE FUNCTION dcl_bookings_apply_budget();

-- The budget rows a rack's facts call for, with what its active bookings use of each.
CREATE FUNCTION dcl_rack_budgets_expected(p_rack uuid)
RETURNS TABLE (dimension text, key text, used bigint, capacity bigint)
LANGUAGE sql STABLE AS $$
  WITH wanted AS (
    SELECT 'cooling' AS dimension, '' AS key, cooling_budget_watts::bigint AS capacity
      FROM racks WHERE id = p_rack AND cooling_budget_watts IS NOT NULL
    UNION ALL
    SELECT 'feed', id::text, available_watts FROM power_feeds WHERE rack_id = p_rack
    UNION ALL
    SELECT 'feed_lost', l.id::text || '>' || c.id::text, c.available_watts
      FROM power_feeds l JOIN power_feeds c ON c.rack_id = l.rack_id AND c.id <> l.id
     WHERE l.rack_id = p_rack
  ), usage AS (
    SELECT c.dimension, c.key, sum(c.amount)::bigint AS used
      FROM bookings b, dcl_booking_contribution(b) c
     WHERE b.rack_id = p_rack AND b.released_at IS NULL
     GROUP BY 1, 2
  )
  SELECT w.dimension, w.key, coalesce(u.used, 0), w.capacity
    FROM wanted w LEFT JOIN usage u USING (dimension, key)
$$;

-- Rebuilds a rack's budget rows after its feeds, cooling budget or airflow changed. The rack is
-- locked FOR UPDATE (bookings into it hold it FOR KEY SHARE and wait, or are waited for). Active
-- device bookings made before the rack had budgets get their figures from their device now; each
-- is checked as a new booking would be; a row over its capacity is refused by its CHECK.
CREATE FUNCTION dcl_rack_budgets_rebuild(p_rack uuid) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  v_booking bookings;
BEGIN
  PERFORM 1 FROM racks WHERE id = p_rack FOR UPDATE;
  DELETE FROM rack_budgets WHERE rack_id = p_rack;
  -- No budget rows exist while this runs, so these updates apply no delta.
  UPDATE bookings b
     SET power_watts = coalesce(b.power_watts, d.power_draw_watts),
         power_ports = coalesce(b.power_ports, d.power_port_count)
    FROM devices d
   WHERE b.rack_id = p_rack AND b.released_at IS NULL AND d.id = b.device_id
     AND b.kind IN ('placement', 'move_hold')
     AND (b.power_watts IS NULL OR b.power_ports IS NULL)
     AND (d.power_draw_watts IS NOT NULL OR d.power_port_count IS NOT NULL);
  FOR v_booking IN
    SELECT * FROM bookings
     WHERE rack_id = p_rack AND released_at IS NULL AND device_id IS NOT NULL
       AND kind IN ('placement', 'move_hold')
  LOOP
    PERFORM dcl_check_booking_figures(p_rack, v_booking.device_id, v_booking.power_watts,
                                      v_booking.power_ports, v_booking.feed_ids);
  END LOOP;
  INSERT INTO rack_budgets (rack_id, dimension, key, used, capacity)
  SELECT p_rack, e.dimension, e.key, e.used, e.capacity FROM dcl_rack_budgets_expected(p_rack) e;
END
$$;

CREATE FUNCTION dcl_power_feeds_rebuild() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    PERFORM dcl_rack_budgets_rebuild(OLD.rack_id);
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') AND (TG_OP = 'INSERT' OR NEW.rack_id <> OLD.rack_id) THEN
    PERFORM dcl_rack_budgets_rebuild(NEW.rack_id);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER power_feeds_rebuild
  AFTER INSERT OR UPDATE OR DELETE ON power_feeds
  FOR EACH ROW EXECUTE FUNCTION dcl_power_feeds_rebuild();

CREATE FUNCTION dcl_racks_rebuild_budgets() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.cooling_budget_watts IS DISTINCT FROM OLD.cooling_budget_watts
     OR NEW.airflow IS DISTINCT FROM OLD.airflow THEN
    PERFORM dcl_rack_budgets_rebuild(NEW.id);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER racks_rebuild_budgets
  AFTER UPDATE OF cooling_budget_watts, airflow ON racks
  FOR EACH ROW EXECUTE FUNCTION dcl_racks_rebuild_budgets();

-- Budget rows whose used differs from a recomputation from the active bookings, rows missing
-- and rows that should not exist (used / expected NULL on the side that has none). No row: the
-- triggers held.
CREATE FUNCTION dcl_rack_budget_drift()
RETURNS TABLE (rack_id uuid, dimension text, key text, used bigint, expected bigint)
LANGUAGE sql STABLE AS $$
  WITH expected AS (
    SELECT r.id AS rack_id, e.dimension, e.key, e.used
      FROM racks r, dcl_rack_budgets_expected(r.id) e
     WHERE r.cooling_budget_watts IS NOT NULL
        OR EXISTS (SELECT 1 FROM power_feeds f WHERE f.rack_id = r.id)
  )
  SELECT coalesce(b.rack_id, e.rack_id), coalesce(b.dimension, e.dimension),
         coalesce(b.key, e.key), b.used, e.used
    FROM rack_budgets b FULL JOIN expected e USING (rack_id, dimension, key)
   WHERE b.used IS DISTINCT FROM e.used
$$;

GRANT SELECT, INSERT, UPDATE, DELETE ON power_feeds TO dcl_app;
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON rack_budgets FROM dcl_app;
GRANT SELECT ON rack_budgets TO dcl_app;
