-- Switch ports by speed, the fifth capacity question, decided by the database as 0038 and 0039
-- decide feeds, cooling, power and weight: one rack_budgets row per rack and speed (dimension
-- 'ports', key the speed, capacity the ports the rack's switches offer), changed by every device
-- booking's transaction, with a CHECK of its own name. None is added into another: a 10g port is
-- not two 1g ports.
--
-- The model (NetBox records interfaces by type and enforces nothing; here only the counts the rule
-- needs):
--   speeds: a small fixed vocabulary, dcl_port_speeds(): 1g, 10g, 25g, 100g;
--   racks.switch_ports: the ports the rack offers, by speed, as a JSON object {"10g": 48, ...};
--     a speed it does not name is offered 0 times. NULL = no ports rule for this rack (dormant).
--   devices.network_ports: the ports a device needs, by speed, the same shape ({} = none).
--     NULL = unknown (refused where the rack offers ports).
--   bookings.network_ports: a device booking's needs, fixed when it is made, as power_watts is.
-- Both objects are checked by dcl_port_counts_valid: known speeds only, whole counts, bounded
-- (a rack 0..100,000 per speed, a device 0..1,024), so no sum of a rack's bookings leaves bigint.
--
-- The rules:
--   ports (per rack and speed): the needs of every active device booking (placement, move hold)
--     at that speed stay within what the rack offers: rack_ports_within_budget. A rack that offers
--     ports has a row for every speed of the vocabulary (capacity 0 for those it does not offer),
--     so a need at a speed the rack lacks is refused by the same CHECK, never left uncounted.
--   unknown is never free: on a rack that offers ports a device booking needs the device's
--     network_ports: bookings_ports_known.
--   Reservations hang on no ports: a rack reservation holds units (and, 0039, the power and
--     weight it names) only; its ports are those of the device it is promoted to, judged at
--     promotion as a new booking is.
--   No allowance and no unknown count (0039's adoption): no rack offers ports when this runs, and
--     a rack given ports later is rebuilt from its bookings, which refuses a configuration its
--     standing devices exceed or whose devices lack the figure.
--     So no booking on a rack with ports lacks the figure, and 0039's devices_fill_booking_figures
--     is not extended: a device's later change of network_ports leaves its bookings' fixed needs.
--
-- Enforced here (schema), whatever path writes: every rule above, and the figures of an active
-- booking fixed (bookings_figures_fixed now covers network_ports). Releases, promotions and the
-- sweeper's lapses are updates of bookings and go through the same apply trigger (0038, 0039,
-- unchanged here; it adds dcl_booking_contribution's rows, now with ports). Enforced by the code
-- path (services/occupancy/capacity_refusal.cc, services/inventory): the readable refusal naming
-- the rack, the speed, used, offered and the amount over, and the requests' counts validated
-- with field names before they are written.
--
-- Dormant path: a rack without budget rows and airflow reads nothing more than before (0038's
-- early return in dcl_bookings_figures and dcl_bookings_apply_budget); on a budgeted rack the
-- ports rule reads the rack's switch_ports only when the device's figure is unknown.
--
-- Rolling upgrade: the previous release calls the 5-argument dcl_capacity_contribution (kept);
-- this release's refusal calls the 6-argument one.

CREATE FUNCTION dcl_port_speeds() RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$ SELECT ARRAY['1g', '10g', '25g', '100g'] $$;

-- A ports-by-speed object: keys from dcl_port_speeds(), values whole numbers 0..p_max.
CREATE FUNCTION dcl_port_counts_valid(p jsonb, p_max bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_typeof(p) = 'object'
     AND NOT EXISTS (
           SELECT 1 FROM jsonb_each(p) e
            WHERE e.key <> ALL (dcl_port_speeds())
               OR CASE WHEN jsonb_typeof(e.value) <> 'number' THEN true
                       ELSE e.value::numeric <> trunc(e.value::numeric)
                            OR e.value::numeric NOT BETWEEN 0 AND p_max END)
$$;

-- Taken first: bookings_figures_fixed below locks bookings against writers until this
-- migration commits.
ALTER TABLE bookings
  ADD COLUMN network_ports jsonb CONSTRAINT bookings_network_ports_valid
    CHECK (dcl_port_counts_valid(network_ports, 1024));

ALTER TABLE racks
  ADD COLUMN switch_ports jsonb CONSTRAINT racks_switch_ports_valid
    CHECK (dcl_port_counts_valid(switch_ports, 100000));

ALTER TABLE devices
  ADD COLUMN network_ports jsonb CONSTRAINT devices_network_ports_valid
    CHECK (dcl_port_counts_valid(network_ports, 1024));

-- NOT VALID: no existing row has dimension 'ports'; every row written from now on is checked.
ALTER TABLE rack_budgets
  ADD CONSTRAINT rack_budgets_dimension_known_ports
    CHECK (dimension IN ('feed', 'feed_lost', 'cooling', 'power', 'weight', 'ports')) NOT VALID,
  ADD CONSTRAINT rack_ports_within_budget
    CHECK (dimension <> 'ports' OR used <= capacity) NOT VALID,
  DROP CONSTRAINT rack_budgets_dimension_known;
ALTER TABLE rack_budgets
  RENAME CONSTRAINT rack_budgets_dimension_known_ports TO rack_budgets_dimension_known;

-- 0039's figures, fixed while a booking is active, and its network ports.
CREATE OR REPLACE FUNCTION dcl_bookings_figures_fixed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.released_at IS NULL AND NEW.released_at IS NULL
     AND OLD.kind = NEW.kind AND OLD.device_id IS NOT DISTINCT FROM NEW.device_id
     AND ((OLD.power_watts IS NOT NULL AND NEW.power_watts IS DISTINCT FROM OLD.power_watts)
          OR (OLD.power_ports IS NOT NULL AND NEW.power_ports IS DISTINCT FROM OLD.power_ports)
          OR (OLD.feed_ids IS NOT NULL AND NEW.feed_ids IS DISTINCT FROM OLD.feed_ids)
          OR (OLD.weight_kg IS NOT NULL AND NEW.weight_kg IS DISTINCT FROM OLD.weight_kg)
          OR (OLD.network_ports IS NOT NULL
              AND NEW.network_ports IS DISTINCT FROM OLD.network_ports)) THEN
    RAISE EXCEPTION 'booking %: the figures an active booking counts are fixed when it is made',
      OLD.id
      USING ERRCODE = 'check_violation', CONSTRAINT = 'bookings_figures_fixed';
  END IF;
  RETURN NEW;
END
$$;

DROP TRIGGER bookings_figures_fixed ON bookings;
CREATE TRIGGER bookings_figures_fixed
  BEFORE UPDATE OF power_watts, power_ports, feed_ids, weight_kg, network_ports ON bookings
  FOR EACH ROW EXECUTE FUNCTION dcl_bookings_figures_fixed();

-- 0039's contribution and a booking's ports: one row per speed it needs (a need of 0 adds
-- nothing). On a rack without ports rows they match no row and change nothing.
CREATE FUNCTION dcl_capacity_contribution(p_rack uuid, p_power bigint, p_ports bigint,
                                          p_feed_ids uuid[], p_weight bigint,
                                          p_network_ports jsonb)
RETURNS TABLE (dimension text, key text, amount bigint)
LANGUAGE sql STABLE AS $$
  SELECT c.dimension, c.key, c.amount
    FROM dcl_capacity_contribution(p_rack, p_power, p_ports, p_feed_ids, p_weight) c
  UNION ALL
  SELECT 'ports', n.key, n.value::bigint
    FROM jsonb_each_text(p_network_ports) n
   WHERE n.value::bigint > 0
$$;

-- 0039's, with ports: a reservation's figures never include ports (it has none; the filter on
-- its dimensions says so).
CREATE OR REPLACE FUNCTION dcl_booking_contribution(b bookings)
RETURNS TABLE (dimension text, key text, amount bigint)
LANGUAGE sql STABLE AS $$
  SELECT c.dimension, c.key, c.amount
    FROM dcl_capacity_contribution(b.rack_id, b.power_watts, b.power_ports, b.feed_ids,
                                   b.weight_kg, b.network_ports) c
   WHERE b.released_at IS NULL
     AND ((b.device_id IS NOT NULL AND b.kind IN ('placement', 'move_hold'))
          OR (b.kind = 'reservation' AND c.amount IS NOT NULL
              AND c.dimension IN ('power', 'weight', 'cooling')))
$$;

-- 0039's checks, and: a rack that offers ports needs the device's network ports. The rack is read
-- only when the figure is unknown, so a known figure costs no query.
CREATE FUNCTION dcl_check_booking_figures(p_rack uuid, p_device uuid, p_power bigint,
                                          p_ports bigint, p_feed_ids uuid[], p_weight bigint,
                                          p_network_ports jsonb)
RETURNS void LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF p_network_ports IS NULL THEN
    IF (SELECT switch_ports FROM racks WHERE id = p_rack) IS NOT NULL THEN
      RAISE EXCEPTION 'device % has no network port figure (devices.network_ports)', p_device
        USING ERRCODE = 'check_violation', CONSTRAINT = 'bookings_ports_known';
    END IF;
  END IF;
  PERFORM dcl_check_booking_figures(p_rack, p_device, p_power, p_ports, p_feed_ids, p_weight);
END
$$;

-- BEFORE: 0039's, with the device's network ports fixed on the booking and checked.
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
    NEW.network_ports := NULL;
    RETURN NEW;
  END IF;
  SELECT * INTO v_device FROM devices WHERE id = NEW.device_id;
  NEW.power_watts := v_device.power_draw_watts;
  NEW.power_ports := v_device.power_port_count;
  NEW.weight_kg := v_device.weight_kg;
  NEW.network_ports := v_device.network_ports;
  IF NEW.feed_ids IS NULL AND NEW.power_ports > 0
     AND NEW.power_ports < (SELECT count(*) FROM power_feeds WHERE rack_id = NEW.rack_id) THEN
    NEW.feed_ids := dcl_choose_feeds(NEW.rack_id, NEW.power_ports);
  END IF;
  PERFORM dcl_check_booking_figures(NEW.rack_id, NEW.device_id, NEW.power_watts, NEW.power_ports,
                                    NEW.feed_ids, NEW.weight_kg, NEW.network_ports);
  RETURN NEW;
END
$$;

-- 0039's rows, and one 'ports' row per speed of the vocabulary on a rack that offers ports.
CREATE OR REPLACE FUNCTION dcl_rack_budgets_expected(p_rack uuid)
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
    SELECT 'ports', s.speed, coalesce((r.switch_ports ->> s.speed)::bigint, 0)
      FROM racks r, unnest(dcl_port_speeds()) s (speed)
     WHERE r.id = p_rack AND r.switch_ports IS NOT NULL
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

-- 0039's rebuild, with network ports filled from the device and checked: a rack given ports that
-- its standing devices exceed, or whose devices lack the figure, refuses the change.
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
         weight_kg = coalesce(b.weight_kg, d.weight_kg),
         network_ports = coalesce(b.network_ports, d.network_ports)
    FROM devices d
   WHERE b.rack_id = p_rack AND b.released_at IS NULL AND d.id = b.device_id
     AND b.kind IN ('placement', 'move_hold')
     AND ((b.power_watts IS NULL AND d.power_draw_watts IS NOT NULL)
          OR (b.power_ports IS NULL AND d.power_port_count IS NOT NULL)
          OR (b.weight_kg IS NULL AND d.weight_kg IS NOT NULL)
          OR (b.network_ports IS NULL AND d.network_ports IS NOT NULL));
  FOR v_booking IN
    SELECT * FROM bookings
     WHERE rack_id = p_rack AND released_at IS NULL AND device_id IS NOT NULL
       AND kind IN ('placement', 'move_hold')
  LOOP
    PERFORM dcl_check_booking_figures(p_rack, v_booking.device_id, v_booking.power_watts,
                                      v_booking.power_ports, v_booking.feed_ids,
                                      v_booking.weight_kg, v_booking.network_ports);
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
     OR NEW.weight_budget_kg IS DISTINCT FROM OLD.weight_budget_kg
     OR NEW.switch_ports IS DISTINCT FROM OLD.switch_ports THEN
    PERFORM dcl_rack_budgets_rebuild(NEW.id);
  END IF;
  RETURN NULL;
END
$$;

DROP TRIGGER racks_rebuild_budgets ON racks;
CREATE TRIGGER racks_rebuild_budgets
  AFTER UPDATE OF cooling_budget_watts, airflow, power_budget_watts, weight_budget_kg,
                  switch_ports ON racks
  FOR EACH ROW EXECUTE FUNCTION dcl_racks_rebuild_budgets();

DROP TRIGGER racks_build_budgets ON racks;
CREATE TRIGGER racks_build_budgets
  AFTER INSERT ON racks
  FOR EACH ROW
  WHEN (NEW.cooling_budget_watts IS NOT NULL OR NEW.airflow IS NOT NULL
        OR NEW.power_budget_watts IS NOT NULL OR NEW.weight_budget_kg IS NOT NULL
        OR NEW.switch_ports IS NOT NULL)
  EXECUTE FUNCTION dcl_racks_build_budgets();

-- The audit (0039's) over racks that offer ports too.
CREATE OR REPLACE FUNCTION dcl_rack_budget_drift()
RETURNS TABLE (rack_id uuid, dimension text, key text, used bigint, expected bigint,
               unknown bigint, expected_unknown bigint)
LANGUAGE sql STABLE AS $$
  WITH expected AS (
    SELECT r.id AS rack_id, e.dimension, e.key, e.used, e.unknown
      FROM racks r, dcl_rack_budgets_expected(r.id) e
     WHERE r.cooling_budget_watts IS NOT NULL OR r.power_budget_watts IS NOT NULL
        OR r.weight_budget_kg IS NOT NULL OR r.switch_ports IS NOT NULL
        OR EXISTS (SELECT 1 FROM power_feeds f WHERE f.rack_id = r.id)
  )
  SELECT coalesce(b.rack_id, e.rack_id), coalesce(b.dimension, e.dimension),
         coalesce(b.key, e.key), b.used, e.used, b.unknown, e.unknown
    FROM rack_budgets b FULL JOIN expected e USING (rack_id, dimension, key)
   WHERE b.used IS DISTINCT FROM e.used OR b.unknown IS DISTINCT FROM e.unknown
$$;
