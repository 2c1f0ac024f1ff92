-- The current schema of a dcl database: every table, index, constraint, function, trigger and
-- grant as schema/migrations leaves a new database. Read this file to see what the database is
-- now; read the migrations for how it got there. Generated, do not edit:
--   schema/regenerate-structure     (after adding a migration; commit the result with it)
-- //tests/schema:structure_test (in tests/run) fails when a freshly migrated database differs.
--
-- Read, never applied. The migrations stay the history and the only thing applied to a
-- database, each once, while the previous release still serves (expand, migrate, contract:
-- docs/day-two.md); a migration that changes a function decides how both releases share it
-- (0035 keeps dcl_reserve_within_deadline's signature for the previous release's servers).
-- Flyway-style repeatable files (one per function, re-applied whenever its text changes, after
-- every versioned migration) would swap a body under the previous release's servers at the
-- first migrate, in no step of its own; this file gives the one place to read and changes
-- nothing that is applied.
--
-- pg_dump --schema-only --no-owner, as the migrating role sees the database:
--   privileges kept: what dcl_app may do (migration 0009 and later) is part of the schema;
--     ALTER DEFAULT PRIVILEGES names the migrating role (dcl, as deploy/pg-cluster creates it);
--   owners left out: every object belongs to the migrating role, whatever it is called;
--   taken out: pg_dump's \restrict and \unrestrict lines (a random key per dump) and the
--     server's and pg_dump's versions (they change with every minor release).

--
-- PostgreSQL database dump
--

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: client_requests_require_response(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.client_requests_require_response() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM client_requests
             WHERE org_id = NEW.org_id AND request_id = NEW.request_id AND response IS NULL) THEN
    RAISE EXCEPTION 'client request % was claimed but never completed', NEW.request_id
      USING ERRCODE = 'not_null_violation', CONSTRAINT = 'client_requests_completed';
  END IF;
  RETURN NULL;
END
$$;


--
-- Name: dcl_airflow_refusal(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_airflow_refusal(rack_airflow text, device_airflow text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT CASE
    WHEN rack_airflow IS NULL THEN NULL
    WHEN device_airflow IS NULL OR device_airflow = 'mixed' THEN 'bookings_airflow_known'
    WHEN (rack_airflow = 'front-to-rear' AND device_airflow IN ('rear-to-front', 'rear-to-side'))
      OR (rack_airflow = 'rear-to-front' AND device_airflow IN ('front-to-rear', 'side-to-rear'))
      THEN 'bookings_airflow_matches'
  END
$$;


--
-- Name: dcl_port_counts_valid(jsonb, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_port_counts_valid(p jsonb, p_max bigint) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT jsonb_typeof(p) = 'object'
     AND NOT EXISTS (
           SELECT 1 FROM jsonb_each(p) e
            WHERE e.key <> ALL (dcl_port_speeds())
               OR CASE WHEN jsonb_typeof(e.value) <> 'number' THEN true
                       ELSE e.value::numeric <> trunc(e.value::numeric)
                            OR e.value::numeric NOT BETWEEN 0 AND p_max END)
$$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: bookings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.bookings (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    org_id uuid NOT NULL,
    site_id uuid NOT NULL,
    rack_id uuid NOT NULL,
    kind text NOT NULL,
    device_id uuid,
    front boolean NOT NULL,
    rear boolean NOT NULL,
    first_unit integer NOT NULL,
    last_unit integer NOT NULL,
    expires_at timestamp with time zone,
    created_by text NOT NULL,
    reason text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    released_at timestamp with time zone,
    released_by text,
    release_reason text,
    power_watts bigint,
    power_ports bigint,
    feed_ids uuid[],
    weight_kg bigint,
    network_ports jsonb,
    CONSTRAINT bookings_created_by_nonempty CHECK ((created_by <> ''::text)),
    CONSTRAINT bookings_kind_valid CHECK ((kind = ANY (ARRAY['placement'::text, 'blocking'::text, 'move_hold'::text, 'reservation'::text]))),
    CONSTRAINT bookings_network_ports_valid CHECK (public.dcl_port_counts_valid(network_ports, (1024)::bigint)),
    CONSTRAINT bookings_placement_needs_device CHECK (((kind <> 'placement'::text) OR (device_id IS NOT NULL))),
    CONSTRAINT bookings_placement_never_expires CHECK (((kind <> 'placement'::text) OR (expires_at IS NULL))),
    CONSTRAINT bookings_power_ports_nonnegative CHECK ((power_ports >= 0)),
    CONSTRAINT bookings_power_watts_nonnegative CHECK ((power_watts >= 0)),
    CONSTRAINT bookings_range_ordered CHECK ((first_unit <= last_unit)),
    CONSTRAINT bookings_released_consistent CHECK (((released_at IS NULL) = (released_by IS NULL))),
    CONSTRAINT bookings_reservation_expires CHECK (((kind <> 'reservation'::text) OR (expires_at IS NOT NULL))),
    CONSTRAINT bookings_some_side CHECK ((front OR rear)),
    CONSTRAINT bookings_weight_kg_valid CHECK (((weight_kg >= 0) AND (weight_kg <= 1000000)))
);


--
-- Name: dcl_booking_contribution(public.bookings); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_booking_contribution(b public.bookings) RETURNS TABLE(dimension text, key text, amount bigint)
    LANGUAGE sql STABLE
    AS $$
  SELECT c.dimension, c.key, c.amount
    FROM dcl_capacity_contribution(b.rack_id, b.power_watts, b.power_ports, b.feed_ids,
                                   b.weight_kg, b.network_ports) c
   WHERE b.released_at IS NULL
     AND ((b.device_id IS NOT NULL AND b.kind IN ('placement', 'move_hold'))
          OR (b.kind = 'reservation' AND c.amount IS NOT NULL
              AND c.dimension IN ('power', 'weight', 'cooling')))
$$;


--
-- Name: dcl_bookings_apply_budget(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_bookings_apply_budget() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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


--
-- Name: dcl_bookings_figures(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_bookings_figures() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: dcl_bookings_figures_fixed(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_bookings_figures_fixed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: dcl_call_deadline(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_call_deadline() RETURNS timestamp with time zone
    LANGUAGE sql STABLE
    AS $$
  SELECT 'epoch'::timestamptz
         + nullif(current_setting('dcl.call_deadline', true), '')::bigint
           * interval '1 microsecond'
$$;


--
-- Name: dcl_capacity_contribution(uuid, bigint, bigint, uuid[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_capacity_contribution(p_rack uuid, p_power bigint, p_ports bigint, p_feed_ids uuid[]) RETURNS TABLE(dimension text, key text, amount bigint)
    LANGUAGE sql STABLE
    AS $$
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


--
-- Name: dcl_capacity_contribution(uuid, bigint, bigint, uuid[], bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_capacity_contribution(p_rack uuid, p_power bigint, p_ports bigint, p_feed_ids uuid[], p_weight bigint) RETURNS TABLE(dimension text, key text, amount bigint)
    LANGUAGE sql STABLE
    AS $$
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


--
-- Name: dcl_capacity_contribution(uuid, bigint, bigint, uuid[], bigint, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_capacity_contribution(p_rack uuid, p_power bigint, p_ports bigint, p_feed_ids uuid[], p_weight bigint, p_network_ports jsonb) RETURNS TABLE(dimension text, key text, amount bigint)
    LANGUAGE sql STABLE
    AS $$
  SELECT c.dimension, c.key, c.amount
    FROM dcl_capacity_contribution(p_rack, p_power, p_ports, p_feed_ids, p_weight) c
  UNION ALL
  SELECT 'ports', n.key, n.value::bigint
    FROM jsonb_each_text(p_network_ports) n
   WHERE n.value::bigint > 0
$$;


--
-- Name: dcl_check_booking_figures(uuid, uuid, bigint, bigint, uuid[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_check_booking_figures(p_rack uuid, p_device uuid, p_power bigint, p_ports bigint, p_feed_ids uuid[]) RETURNS void
    LANGUAGE plpgsql STABLE
    AS $$
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


--
-- Name: dcl_check_booking_figures(uuid, uuid, bigint, bigint, uuid[], bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_check_booking_figures(p_rack uuid, p_device uuid, p_power bigint, p_ports bigint, p_feed_ids uuid[], p_weight bigint) RETURNS void
    LANGUAGE plpgsql STABLE
    AS $$
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


--
-- Name: dcl_check_booking_figures(uuid, uuid, bigint, bigint, uuid[], bigint, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_check_booking_figures(p_rack uuid, p_device uuid, p_power bigint, p_ports bigint, p_feed_ids uuid[], p_weight bigint, p_network_ports jsonb) RETURNS void
    LANGUAGE plpgsql STABLE
    AS $$
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


--
-- Name: dcl_choose_feeds(uuid, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_choose_feeds(p_rack uuid, p_ports bigint) RETURNS uuid[]
    LANGUAGE sql STABLE
    AS $$
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


--
-- Name: dcl_count_device_moved(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_count_device_moved() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  INSERT INTO site_device_counts AS c (org_id, site_id, stripe, devices)
  VALUES (OLD.org_id, OLD.site_id, txid_current() % 16, -1),
         (NEW.org_id, NEW.site_id, txid_current() % 16, 1)
  ON CONFLICT (org_id, site_id, stripe) DO UPDATE SET devices = c.devices + excluded.devices;
  RETURN NULL;
END
$$;


--
-- Name: dcl_count_devices_deleted(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_count_devices_deleted() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  INSERT INTO site_device_counts AS c (org_id, site_id, stripe, devices)
  SELECT d.org_id, d.site_id, txid_current() % 16, -count(*) FROM old_devices d
   GROUP BY d.org_id, d.site_id ORDER BY d.org_id, d.site_id
  ON CONFLICT (org_id, site_id, stripe) DO UPDATE SET devices = c.devices + excluded.devices;
  RETURN NULL;
END
$$;


--
-- Name: dcl_count_devices_inserted(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_count_devices_inserted() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  INSERT INTO site_device_counts AS c (org_id, site_id, stripe, devices)
  SELECT n.org_id, n.site_id, txid_current() % 16, count(*) FROM new_devices n
   GROUP BY n.org_id, n.site_id ORDER BY n.org_id, n.site_id
  ON CONFLICT (org_id, site_id, stripe) DO UPDATE SET devices = c.devices + excluded.devices;
  RETURN NULL;
END
$$;


--
-- Name: dcl_count_devices_truncated(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_count_devices_truncated() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  DELETE FROM site_device_counts;
  RETURN NULL;
END
$$;


--
-- Name: dcl_devices_fill_booking_figures(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_devices_fill_booking_figures() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: dcl_devices_recheck_airflow(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_devices_recheck_airflow() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_rule text;
  v_rack racks;
BEGIN
  -- The UPDATE holds the device FOR NO KEY UPDATE, which a booking's FOR KEY SHARE on the device
  -- (the write path takes it before reading the device's figures: booking_store.cc, Prepare)
  -- does not wait for. FOR UPDATE does: a booking of this device being written now commits
  -- first and is judged below, or waits for this change and reads the new airflow.
  PERFORM 1 FROM devices WHERE id = NEW.id FOR UPDATE;
  FOR v_rack IN
    SELECT r.* FROM bookings b JOIN racks r ON r.id = b.rack_id
     WHERE b.device_id = NEW.id AND b.released_at IS NULL AND b.kind IN ('placement', 'move_hold')
       AND r.airflow IS NOT NULL
     ORDER BY r.id
  LOOP
    v_rule := dcl_airflow_refusal(v_rack.airflow, NEW.airflow);
    IF v_rule IS NOT NULL THEN
      RAISE EXCEPTION 'device % stands in rack % (airflow %): its airflow cannot become %',
        NEW.id, v_rack.id, v_rack.airflow, coalesce(NEW.airflow, 'unset')
        USING ERRCODE = 'check_violation', CONSTRAINT = v_rule;
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;


--
-- Name: dcl_exclusion_summary(uuid, uuid, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_exclusion_summary(p_org uuid, p_site uuid, p_max_listed integer) RETURNS TABLE(at_asked_site boolean, vendor text, model text, hardware_profile text, process_state text, bound boolean, held boolean, decommissioned boolean, devices bigint, first_ids text)
    LANGUAGE plpgsql STABLE
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
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


--
-- Name: dcl_guarded_exec(text, text[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_guarded_exec(stmt text, args text[], OUT returned text, OUT affected bigint, OUT violated_constraint text, OUT violated_sqlstate text) RETURNS record
    LANGUAGE plpgsql
    AS $$
BEGIN
  EXECUTE stmt INTO returned USING args;
  GET DIAGNOSTICS affected = ROW_COUNT;
EXCEPTION WHEN integrity_constraint_violation THEN
  GET STACKED DIAGNOSTICS violated_constraint = CONSTRAINT_NAME,
                          violated_sqlstate = RETURNED_SQLSTATE;
  affected := 0;
END
$$;


--
-- Name: dcl_insert_booking(uuid, uuid, uuid, text, uuid, boolean, boolean, integer, integer, bigint, text, text, text[], integer[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_insert_booking(p_org uuid, p_site uuid, p_rack uuid, p_kind text, p_device uuid, p_front boolean, p_rear boolean, p_first_unit integer, p_last_unit integer, p_ttl_seconds bigint, p_actor text, p_reason text, p_sides text[], p_units integer[], OUT returned text, OUT violated_constraint text, OUT violated_sqlstate text) RETURNS record
    LANGUAGE sql
    AS $_$
  SELECT regexp_replace(i.returned, '\|[^|]*$', ''), i.violated_constraint, i.violated_sqlstate
    FROM dcl_insert_booking(p_org, p_site, p_rack, p_kind, p_device, p_front, p_rear,
                            p_first_unit, p_last_unit, p_ttl_seconds, p_actor, p_reason,
                            p_sides, p_units, NULL::bigint, NULL::bigint, NULL::text[]) i
$_$;


--
-- Name: dcl_insert_booking(uuid, uuid, uuid, text, uuid, boolean, boolean, integer, integer, bigint, text, text, text[], integer[], bigint, bigint, text[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_insert_booking(p_org uuid, p_site uuid, p_rack uuid, p_kind text, p_device uuid, p_front boolean, p_rear boolean, p_first_unit integer, p_last_unit integer, p_ttl_seconds bigint, p_actor text, p_reason text, p_sides text[], p_units integer[], p_power_watts bigint, p_weight_kg bigint, p_feed_names text[], OUT returned text, OUT violated_constraint text, OUT violated_sqlstate text) RETURNS record
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: dcl_notify_auth_change(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_notify_auth_change() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM pg_notify('dcl_auth_changed', txid_current()::text);
  RETURN NULL;
END
$$;


--
-- Name: dcl_port_speeds(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_port_speeds() RETURNS text[]
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT ARRAY['1g', '10g', '25g', '100g'] $$;


--
-- Name: dcl_power_feeds_judge(uuid); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_power_feeds_judge(p_rack uuid) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
BEGIN
  SET CONSTRAINTS power_feeds_rebuild IMMEDIATE;
  RETURN (SELECT count(*) FROM power_feeds WHERE rack_id = p_rack);
END
$$;


--
-- Name: dcl_power_feeds_rebuild(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_power_feeds_rebuild() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: dcl_rack_budget_drift(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_rack_budget_drift() RETURNS TABLE(rack_id uuid, dimension text, key text, used bigint, expected bigint, unknown bigint, expected_unknown bigint)
    LANGUAGE sql STABLE
    AS $$
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


--
-- Name: dcl_rack_budgets_adopt(uuid); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_rack_budgets_adopt(p_rack uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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


--
-- Name: dcl_rack_budgets_expected(uuid); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_rack_budgets_expected(p_rack uuid) RETURNS TABLE(dimension text, key text, used bigint, unknown bigint, capacity bigint)
    LANGUAGE sql STABLE
    AS $$
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


--
-- Name: dcl_rack_budgets_rebuild(uuid); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_rack_budgets_rebuild(p_rack uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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


--
-- Name: dcl_racks_build_budgets(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_racks_build_budgets() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM dcl_rack_budgets_rebuild(NEW.id);
  RETURN NULL;
END
$$;


--
-- Name: dcl_racks_rebuild_budgets(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_racks_rebuild_budgets() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: dcl_refuse_after_call_deadline(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_refuse_after_call_deadline() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_deadline timestamptz := dcl_call_deadline();
BEGIN
  IF v_deadline IS NOT NULL AND clock_timestamp() > v_deadline THEN
    RAISE EXCEPTION 'the caller''s deadline (%) passed before the commit', v_deadline
      USING ERRCODE = 'DC001', CONSTRAINT = 'dcl_call_deadline';
  END IF;
  RETURN NULL;
END
$$;


--
-- Name: reservations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.reservations (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    org_id uuid NOT NULL,
    idempotency_key text NOT NULL,
    device_id uuid NOT NULL,
    state text DEFAULT 'held'::text NOT NULL,
    criteria_site_id uuid NOT NULL,
    criteria_vendor text DEFAULT ''::text NOT NULL,
    criteria_model text DEFAULT ''::text NOT NULL,
    criteria_hardware_profile text DEFAULT ''::text NOT NULL,
    selection_reason jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    created_by text DEFAULT ''::text NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone,
    end_reason text,
    ended_by text,
    end_note text,
    service_id uuid,
    CONSTRAINT reservations_end_consistent CHECK ((((state = 'held'::text) AND (ended_at IS NULL) AND (end_reason IS NULL)) OR ((state = 'converted'::text) AND (ended_at IS NOT NULL) AND (end_reason = 'converted'::text) AND (service_id IS NOT NULL)) OR ((state = 'cancelled'::text) AND (ended_at IS NOT NULL) AND (end_reason = 'cancelled'::text) AND (ended_by IS NOT NULL)) OR ((state = 'expired'::text) AND (ended_at IS NOT NULL) AND (end_reason = ANY (ARRAY['expired_by_sweeper'::text, 'expired_at_conversion'::text]))))),
    CONSTRAINT reservations_end_reason_valid CHECK ((end_reason = ANY (ARRAY['converted'::text, 'cancelled'::text, 'expired_by_sweeper'::text, 'expired_at_conversion'::text]))),
    CONSTRAINT reservations_expiry_after_creation CHECK ((expires_at > created_at)),
    CONSTRAINT reservations_key_valid CHECK (((idempotency_key <> ''::text) AND (length(idempotency_key) <= 200))),
    CONSTRAINT reservations_state_valid CHECK ((state = ANY (ARRAY['held'::text, 'converted'::text, 'expired'::text, 'cancelled'::text])))
);


--
-- Name: dcl_reserve(uuid, text, uuid, text, text, text, uuid, integer, text, integer, integer, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_reserve(p_org uuid, p_key text, p_site uuid, p_vendor text, p_model text, p_profile text, p_walk_start uuid, p_ttl_seconds integer, p_actor text, p_max_candidates integer, p_max_attempts integer, p_max_rows integer, OUT outcome text, OUT candidates_examined integer, OUT lost_races integer, OUT rows_visited integer, OUT reservation public.reservations) RETURNS record
    LANGUAGE plpgsql
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
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


--
-- Name: dcl_reserve_call(uuid, text, uuid, text, text, text, uuid, integer, text, integer, integer, integer, timestamp with time zone, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_reserve_call(p_org uuid, p_key text, p_site uuid, p_vendor text, p_model text, p_profile text, p_walk_start uuid, p_ttl_seconds integer, p_actor text, p_max_candidates integer, p_max_attempts integer, p_max_rows integer, p_call_deadline timestamp with time zone, p_max_listed integer, OUT outcome text, OUT candidates_examined integer, OUT lost_races integer, OUT rows_visited integer, OUT reservation public.reservations, OUT exclusions jsonb) RETURNS record
    LANGUAGE plpgsql
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    AS $$
DECLARE
  v_result record;
BEGIN
  SELECT * INTO v_result
    FROM dcl_reserve_within_deadline(p_org, p_key, p_site, p_vendor, p_model, p_profile,
                                     p_walk_start, p_ttl_seconds, p_actor, p_max_candidates,
                                     p_max_attempts, p_max_rows, p_call_deadline);
  outcome := v_result.outcome;
  candidates_examined := v_result.candidates_examined;
  lost_races := v_result.lost_races;
  rows_visited := v_result.rows_visited;
  reservation := v_result.reservation;
  IF outcome IN ('no_candidate', 'walk_limit') THEN
    -- In the summary's own order: the server lists excluded devices in it, up to p_max_listed.
    SELECT coalesce(jsonb_agg(to_jsonb(s) ORDER BY s.ordinality), '[]'::jsonb) INTO exclusions
      FROM dcl_exclusion_summary(p_org, p_site, p_max_listed) WITH ORDINALITY AS s;
  END IF;
END
$$;


--
-- Name: dcl_reserve_within_deadline(uuid, text, uuid, text, text, text, uuid, integer, text, integer, integer, integer, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dcl_reserve_within_deadline(p_org uuid, p_key text, p_site uuid, p_vendor text, p_model text, p_profile text, p_walk_start uuid, p_ttl_seconds integer, p_actor text, p_max_candidates integer, p_max_attempts integer, p_max_rows integer, p_call_deadline timestamp with time zone, OUT outcome text, OUT candidates_examined integer, OUT lost_races integer, OUT rows_visited integer, OUT reservation public.reservations) RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_result record;
BEGIN
  IF p_call_deadline IS NOT NULL THEN
    IF clock_timestamp() > p_call_deadline THEN
      RAISE EXCEPTION 'the caller''s deadline (%) passed before the reservation began',
        p_call_deadline
        USING ERRCODE = 'DC001', CONSTRAINT = 'dcl_call_deadline';
    END IF;
    PERFORM set_config('dcl.call_deadline',
                       ((extract(epoch FROM p_call_deadline) * 1000000)::bigint)::text, true);
  END IF;
  SELECT * INTO v_result
    FROM dcl_reserve(p_org, p_key, p_site, p_vendor, p_model, p_profile, p_walk_start,
                     p_ttl_seconds, p_actor, p_max_candidates, p_max_attempts, p_max_rows);
  outcome := v_result.outcome;
  candidates_examined := v_result.candidates_examined;
  lost_races := v_result.lost_races;
  rows_visited := v_result.rows_visited;
  reservation := v_result.reservation;
END
$$;


--
-- Name: location_history_append_only(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.location_history_append_only() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  RAISE EXCEPTION 'location_history is append-only: % refused; record a correction as a new row', TG_OP
    USING ERRCODE = 'restrict_violation', CONSTRAINT = 'location_history_append_only';
END
$$;


--
-- Name: move_events_append_only(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.move_events_append_only() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  RAISE EXCEPTION 'move_events is append-only: % refused', TG_OP
    USING ERRCODE = 'restrict_violation', CONSTRAINT = 'move_events_append_only';
END
$$;


--
-- Name: move_events_notify(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.move_events_notify() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM pg_notify('dcl_move_events', NEW.move_id::text || ':' || NEW.sequence::text);
  RETURN NULL;
END
$$;


--
-- Name: moves_require_move_hold(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.moves_require_move_hold() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM moves WHERE id = NEW.id AND move_hold_booking_id IS NULL) THEN
    RAISE EXCEPTION 'move % has no move hold at its destination', NEW.id
      USING ERRCODE = 'not_null_violation', CONSTRAINT = 'moves_move_hold_required';
  END IF;
  RETURN NULL;
END
$$;


--
-- Name: api_tokens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.api_tokens (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    org_id uuid NOT NULL,
    role text NOT NULL,
    subject text DEFAULT ''::text NOT NULL,
    label text DEFAULT ''::text NOT NULL,
    token_sha256 bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT api_tokens_digest_length CHECK ((length(token_sha256) = 32)),
    CONSTRAINT api_tokens_role_valid CHECK ((role = ANY (ARRAY['commerce'::text, 'dc-operator'::text, 'customer'::text, 'admin'::text])))
);


--
-- Name: booking_slots; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.booking_slots (
    booking_id uuid NOT NULL,
    rack_id uuid NOT NULL,
    side text NOT NULL,
    unit integer NOT NULL,
    released_at timestamp with time zone,
    CONSTRAINT booking_slots_side_valid CHECK ((side = ANY (ARRAY['front'::text, 'rear'::text])))
);


--
-- Name: client_requests; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.client_requests (
    org_id uuid NOT NULL,
    request_id text NOT NULL,
    rpc text NOT NULL,
    params_sha256 bytea NOT NULL,
    response bytea,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT client_requests_digest_length CHECK ((length(params_sha256) = 32)),
    CONSTRAINT client_requests_request_id_valid CHECK (((request_id <> ''::text) AND (octet_length(request_id) <= 36))),
    CONSTRAINT client_requests_rpc_nonempty CHECK ((rpc <> ''::text))
);


--
-- Name: devices; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.devices (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    org_id uuid NOT NULL,
    site_id uuid NOT NULL,
    vendor text NOT NULL,
    model text NOT NULL,
    hardware_profile text DEFAULT ''::text NOT NULL,
    serial text,
    height_units integer NOT NULL,
    depth_class text NOT NULL,
    process_state text DEFAULT 'normal'::text NOT NULL,
    power_draw_watts integer,
    weight_kg integer,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    decommissioned_at timestamp with time zone,
    decommissioned_by text,
    decommission_reason text,
    power_port_count bigint,
    airflow text,
    network_ports jsonb,
    CONSTRAINT devices_airflow_valid CHECK ((airflow = ANY (ARRAY['front-to-rear'::text, 'rear-to-front'::text, 'left-to-right'::text, 'right-to-left'::text, 'side-to-rear'::text, 'rear-to-side'::text, 'bottom-to-top'::text, 'top-to-bottom'::text, 'passive'::text, 'mixed'::text]))),
    CONSTRAINT devices_decommissioned_consistent CHECK (((decommissioned_at IS NULL) = (decommissioned_by IS NULL))),
    CONSTRAINT devices_depth_class_valid CHECK ((depth_class = ANY (ARRAY['full'::text, 'half'::text, 'unknown'::text]))),
    CONSTRAINT devices_height_positive CHECK (((height_units >= 1) AND (height_units <= 20))),
    CONSTRAINT devices_model_nonempty CHECK ((model <> ''::text)),
    CONSTRAINT devices_network_ports_valid CHECK (public.dcl_port_counts_valid(network_ports, (1024)::bigint)),
    CONSTRAINT devices_power_nonnegative CHECK ((power_draw_watts >= 0)),
    CONSTRAINT devices_power_port_count_valid CHECK (((power_port_count >= 0) AND (power_port_count <= 16))),
    CONSTRAINT devices_process_state_valid CHECK ((process_state = ANY (ARRAY['normal'::text, 'staging'::text, 'moving'::text, 'in_transit'::text]))),
    CONSTRAINT devices_serial_nonempty CHECK ((serial <> ''::text)),
    CONSTRAINT devices_vendor_nonempty CHECK ((vendor <> ''::text)),
    CONSTRAINT devices_weight_nonnegative CHECK ((weight_kg >= 0))
);


--
-- Name: feature_settings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.feature_settings (
    feature text NOT NULL,
    enabled boolean DEFAULT false NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: jobs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.jobs (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    org_id uuid NOT NULL,
    kind text NOT NULL,
    status text DEFAULT 'running'::text NOT NULL,
    detail text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    CONSTRAINT jobs_finished_when_done CHECK (((status = 'running'::text) = (finished_at IS NULL))),
    CONSTRAINT jobs_kind_nonempty CHECK ((kind <> ''::text)),
    CONSTRAINT jobs_status_valid CHECK ((status = ANY (ARRAY['running'::text, 'succeeded'::text, 'failed'::text, 'cancelled'::text])))
);


--
-- Name: location_history; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.location_history (
    id bigint NOT NULL,
    org_id uuid NOT NULL,
    device_id uuid NOT NULL,
    site_id uuid,
    rack_id uuid,
    side text,
    first_unit integer,
    last_unit integer,
    event text NOT NULL,
    move_id uuid,
    move_state text,
    booking_id uuid,
    corrects_id bigint,
    note text DEFAULT ''::text NOT NULL,
    actor text NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT location_history_correction_consistent CHECK (((event = 'correction'::text) = (corrects_id IS NOT NULL))),
    CONSTRAINT location_history_correction_not_self CHECK ((corrects_id <> id)),
    CONSTRAINT location_history_event_nonempty CHECK ((event <> ''::text)),
    CONSTRAINT location_history_side_valid CHECK ((side = ANY (ARRAY['front'::text, 'rear'::text])))
);


--
-- Name: location_history_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.location_history_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: location_history_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.location_history_id_seq OWNED BY public.location_history.id;


--
-- Name: move_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.move_events (
    id bigint NOT NULL,
    move_id uuid NOT NULL,
    org_id uuid NOT NULL,
    sequence integer NOT NULL,
    from_state text,
    to_state text NOT NULL,
    observation text DEFAULT ''::text NOT NULL,
    note text DEFAULT ''::text NOT NULL,
    actor text NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT move_events_observation_valid CHECK ((observation = ANY (ARRAY[''::text, 'found_at_destination'::text, 'not_moved'::text]))),
    CONSTRAINT move_events_sequence_positive CHECK ((sequence >= 1))
);


--
-- Name: move_events_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.move_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: move_events_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.move_events_id_seq OWNED BY public.move_events.id;


--
-- Name: moves; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.moves (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    org_id uuid NOT NULL,
    device_id uuid NOT NULL,
    source_site_id uuid NOT NULL,
    source_rack_id uuid NOT NULL,
    source_booking_id uuid NOT NULL,
    destination_site_id uuid NOT NULL,
    destination_rack_id uuid NOT NULL,
    destination_side text NOT NULL,
    destination_unit integer NOT NULL,
    move_hold_booking_id uuid,
    state text NOT NULL,
    preflight jsonb NOT NULL,
    job_id uuid,
    note text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    created_by text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_by text NOT NULL,
    ended_at timestamp with time zone,
    CONSTRAINT moves_destination_side_valid CHECK ((destination_side = ANY (ARRAY['front'::text, 'rear'::text]))),
    CONSTRAINT moves_ended_when_terminal CHECK (((state = ANY (ARRAY['completed'::text, 'cancelled'::text, 'failed'::text])) = (ended_at IS NOT NULL))),
    CONSTRAINT moves_preflight_object CHECK ((jsonb_typeof(preflight) = 'object'::text)),
    CONSTRAINT moves_same_site CHECK ((source_site_id = destination_site_id)),
    CONSTRAINT moves_state_valid CHECK ((state = ANY (ARRAY['draft'::text, 'planned'::text, 'approved'::text, 'in_progress'::text, 'awaiting_verification'::text, 'needs_reconcile'::text, 'completed'::text, 'cancelled'::text, 'failed'::text])))
);


--
-- Name: organization_feature_settings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.organization_feature_settings (
    org_id uuid NOT NULL,
    feature text NOT NULL,
    enabled boolean NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: organizations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.organizations (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    name text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT organizations_name_nonempty CHECK ((name <> ''::text))
);


--
-- Name: power_feeds; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.power_feeds (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    rack_id uuid NOT NULL,
    name text NOT NULL,
    voltage bigint NOT NULL,
    amperage bigint NOT NULL,
    phase text DEFAULT 'single-phase'::text NOT NULL,
    max_utilization bigint DEFAULT 80 NOT NULL,
    available_watts bigint GENERATED ALWAYS AS ((floor((((((voltage)::numeric * (amperage)::numeric) *
CASE phase
    WHEN 'three-phase'::text THEN sqrt((3)::numeric)
    ELSE (1)::numeric
END) * (max_utilization)::numeric) / (100)::numeric)))::bigint) STORED,
    CONSTRAINT power_feeds_amperage_valid CHECK (((amperage >= 1) AND (amperage <= 1000))),
    CONSTRAINT power_feeds_max_utilization_valid CHECK (((max_utilization >= 1) AND (max_utilization <= 100))),
    CONSTRAINT power_feeds_name_nonempty CHECK ((name <> ''::text)),
    CONSTRAINT power_feeds_phase_valid CHECK ((phase = ANY (ARRAY['single-phase'::text, 'three-phase'::text]))),
    CONSTRAINT power_feeds_voltage_valid CHECK (((voltage >= 1) AND (voltage <= 1000)))
);


--
-- Name: rack_budgets; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rack_budgets (
    rack_id uuid NOT NULL,
    dimension text NOT NULL,
    key text DEFAULT ''::text NOT NULL,
    used bigint DEFAULT 0 NOT NULL,
    capacity bigint NOT NULL,
    allowance bigint DEFAULT 0 NOT NULL,
    unknown bigint DEFAULT 0 NOT NULL,
    CONSTRAINT rack_budgets_capacity_nonnegative CHECK ((capacity >= 0)),
    CONSTRAINT rack_budgets_used_nonnegative CHECK ((used >= 0)),
    CONSTRAINT rack_cooling_within_budget CHECK (((dimension <> 'cooling'::text) OR (used <= capacity))),
    CONSTRAINT rack_feed_redundancy CHECK (((dimension <> 'feed_lost'::text) OR (used <= capacity))),
    CONSTRAINT rack_feed_within_rating CHECK (((dimension <> 'feed'::text) OR (used <= capacity)))
);


--
-- Name: racks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.racks (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    org_id uuid NOT NULL,
    site_id uuid NOT NULL,
    name text NOT NULL,
    first_unit integer NOT NULL,
    unit_count integer NOT NULL,
    numbering text NOT NULL,
    has_rear boolean NOT NULL,
    power_budget_watts integer,
    weight_budget_kg integer,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    cooling_budget_watts bigint,
    airflow text,
    switch_ports jsonb,
    CONSTRAINT racks_airflow_valid CHECK ((airflow = ANY (ARRAY['front-to-rear'::text, 'rear-to-front'::text]))),
    CONSTRAINT racks_cooling_budget_positive CHECK ((cooling_budget_watts > 0)),
    CONSTRAINT racks_first_unit_bounded CHECK ((first_unit <= 900)),
    CONSTRAINT racks_first_unit_nonnegative CHECK ((first_unit >= 0)),
    CONSTRAINT racks_name_nonempty CHECK ((name <> ''::text)),
    CONSTRAINT racks_numbering_valid CHECK ((numbering = ANY (ARRAY['ascending'::text, 'descending'::text]))),
    CONSTRAINT racks_power_budget_positive CHECK ((power_budget_watts > 0)),
    CONSTRAINT racks_switch_ports_valid CHECK (public.dcl_port_counts_valid(switch_ports, (100000)::bigint)),
    CONSTRAINT racks_unit_count_positive CHECK (((unit_count >= 1) AND (unit_count <= 100))),
    CONSTRAINT racks_weight_budget_positive CHECK ((weight_budget_kg > 0))
);


--
-- Name: reservation_holding_states; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.reservation_holding_states (
    state text NOT NULL,
    CONSTRAINT reservation_holding_states_state_valid CHECK ((state = ANY (ARRAY['held'::text, 'converted'::text, 'expired'::text, 'cancelled'::text])))
);


--
-- Name: schema_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: service_bindings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.service_bindings (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    org_id uuid NOT NULL,
    service_id uuid NOT NULL,
    device_id uuid NOT NULL,
    reservation_id uuid,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    started_by text DEFAULT ''::text NOT NULL,
    ended_at timestamp with time zone,
    ended_by text,
    CONSTRAINT service_bindings_interval_valid CHECK (((ended_at IS NULL) OR (ended_at >= started_at)))
);


--
-- Name: services; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.services (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    org_id uuid NOT NULL,
    kind text NOT NULL,
    customer text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    created_by text DEFAULT ''::text NOT NULL,
    CONSTRAINT services_customer_nonempty CHECK ((customer <> ''::text)),
    CONSTRAINT services_kind_valid CHECK ((kind = ANY (ARRAY['dedicated'::text, 'vps'::text])))
);


--
-- Name: site_device_counts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.site_device_counts (
    org_id uuid NOT NULL,
    site_id uuid NOT NULL,
    devices bigint NOT NULL,
    stripe bigint DEFAULT 0 NOT NULL
);


--
-- Name: sites; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.sites (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    org_id uuid NOT NULL,
    name text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT sites_name_nonempty CHECK ((name <> ''::text))
);


--
-- Name: sweeper_status; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.sweeper_status (
    name text NOT NULL,
    last_success_at timestamp with time zone,
    last_reservations_expired bigint DEFAULT 0 NOT NULL,
    last_bookings_released bigint DEFAULT 0 NOT NULL,
    last_duration_ms bigint DEFAULT 0 NOT NULL,
    last_failure_at timestamp with time zone,
    last_error text,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT sweeper_status_duration_nonnegative CHECK ((last_duration_ms >= 0)),
    CONSTRAINT sweeper_status_expired_nonnegative CHECK ((last_reservations_expired >= 0)),
    CONSTRAINT sweeper_status_name_nonempty CHECK ((name <> ''::text)),
    CONSTRAINT sweeper_status_released_nonnegative CHECK ((last_bookings_released >= 0))
);


--
-- Name: location_history id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.location_history ALTER COLUMN id SET DEFAULT nextval('public.location_history_id_seq'::regclass);


--
-- Name: move_events id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.move_events ALTER COLUMN id SET DEFAULT nextval('public.move_events_id_seq'::regclass);


--
-- Name: api_tokens api_tokens_digest_uq; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_digest_uq UNIQUE (token_sha256);


--
-- Name: api_tokens api_tokens_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_pkey PRIMARY KEY (id);


--
-- Name: booking_slots booking_slots_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.booking_slots
    ADD CONSTRAINT booking_slots_pk PRIMARY KEY (booking_id, side, unit);


--
-- Name: bookings bookings_id_rack_uq; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bookings
    ADD CONSTRAINT bookings_id_rack_uq UNIQUE (id, rack_id);


--
-- Name: bookings bookings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bookings
    ADD CONSTRAINT bookings_pkey PRIMARY KEY (id);


--
-- Name: client_requests client_requests_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.client_requests
    ADD CONSTRAINT client_requests_pk PRIMARY KEY (org_id, request_id);


--
-- Name: devices devices_id_org_uq; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_id_org_uq UNIQUE (id, org_id);


--
-- Name: devices devices_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_pkey PRIMARY KEY (id);


--
-- Name: feature_settings feature_settings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.feature_settings
    ADD CONSTRAINT feature_settings_pkey PRIMARY KEY (feature);


--
-- Name: jobs jobs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.jobs
    ADD CONSTRAINT jobs_pkey PRIMARY KEY (id);


--
-- Name: location_history location_history_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.location_history
    ADD CONSTRAINT location_history_pkey PRIMARY KEY (id);


--
-- Name: move_events move_events_move_sequence_uq; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.move_events
    ADD CONSTRAINT move_events_move_sequence_uq UNIQUE (move_id, sequence);


--
-- Name: move_events move_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.move_events
    ADD CONSTRAINT move_events_pkey PRIMARY KEY (id);


--
-- Name: moves moves_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.moves
    ADD CONSTRAINT moves_pkey PRIMARY KEY (id);


--
-- Name: organization_feature_settings organization_feature_settings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.organization_feature_settings
    ADD CONSTRAINT organization_feature_settings_pkey PRIMARY KEY (org_id, feature);


--
-- Name: organizations organizations_name_uq; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.organizations
    ADD CONSTRAINT organizations_name_uq UNIQUE (name);


--
-- Name: organizations organizations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.organizations
    ADD CONSTRAINT organizations_pkey PRIMARY KEY (id);


--
-- Name: power_feeds power_feeds_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.power_feeds
    ADD CONSTRAINT power_feeds_pkey PRIMARY KEY (id);


--
-- Name: power_feeds power_feeds_rack_name_uq; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.power_feeds
    ADD CONSTRAINT power_feeds_rack_name_uq UNIQUE (rack_id, name);


--
-- Name: rack_budgets rack_budgets_allowance_nonnegative; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.rack_budgets
    ADD CONSTRAINT rack_budgets_allowance_nonnegative CHECK ((allowance >= 0)) NOT VALID;


--
-- Name: rack_budgets rack_budgets_dimension_known; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.rack_budgets
    ADD CONSTRAINT rack_budgets_dimension_known CHECK ((dimension = ANY (ARRAY['feed'::text, 'feed_lost'::text, 'cooling'::text, 'power'::text, 'weight'::text, 'ports'::text]))) NOT VALID;


--
-- Name: rack_budgets rack_budgets_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rack_budgets
    ADD CONSTRAINT rack_budgets_pkey PRIMARY KEY (rack_id, dimension, key);


--
-- Name: rack_budgets rack_budgets_unknown_nonnegative; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.rack_budgets
    ADD CONSTRAINT rack_budgets_unknown_nonnegative CHECK ((unknown >= 0)) NOT VALID;


--
-- Name: rack_budgets rack_ports_within_budget; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.rack_budgets
    ADD CONSTRAINT rack_ports_within_budget CHECK (((dimension <> 'ports'::text) OR (used <= capacity))) NOT VALID;


--
-- Name: rack_budgets rack_power_within_budget; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.rack_budgets
    ADD CONSTRAINT rack_power_within_budget CHECK (((dimension <> 'power'::text) OR (used <= (capacity + allowance)))) NOT VALID;


--
-- Name: rack_budgets rack_weight_within_budget; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.rack_budgets
    ADD CONSTRAINT rack_weight_within_budget CHECK (((dimension <> 'weight'::text) OR (used <= (capacity + allowance)))) NOT VALID;


--
-- Name: racks racks_id_site_uq; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.racks
    ADD CONSTRAINT racks_id_site_uq UNIQUE (id, site_id);


--
-- Name: racks racks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.racks
    ADD CONSTRAINT racks_pkey PRIMARY KEY (id);


--
-- Name: racks racks_site_name_uq; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.racks
    ADD CONSTRAINT racks_site_name_uq UNIQUE (site_id, name);


--
-- Name: reservation_holding_states reservation_holding_states_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.reservation_holding_states
    ADD CONSTRAINT reservation_holding_states_pkey PRIMARY KEY (state);


--
-- Name: reservations reservations_org_key_uq; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.reservations
    ADD CONSTRAINT reservations_org_key_uq UNIQUE (idempotency_key, org_id);


--
-- Name: reservations reservations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.reservations
    ADD CONSTRAINT reservations_pkey PRIMARY KEY (id);


--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);


--
-- Name: service_bindings service_bindings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.service_bindings
    ADD CONSTRAINT service_bindings_pkey PRIMARY KEY (id);


--
-- Name: services services_id_org_uq; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.services
    ADD CONSTRAINT services_id_org_uq UNIQUE (id, org_id);


--
-- Name: services services_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.services
    ADD CONSTRAINT services_pkey PRIMARY KEY (id);


--
-- Name: sites sites_id_org_uq; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.sites
    ADD CONSTRAINT sites_id_org_uq UNIQUE (id, org_id);


--
-- Name: sites sites_org_name_uq; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.sites
    ADD CONSTRAINT sites_org_name_uq UNIQUE (name, org_id);


--
-- Name: sites sites_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.sites
    ADD CONSTRAINT sites_pkey PRIMARY KEY (id);


--
-- Name: sweeper_status sweeper_status_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.sweeper_status
    ADD CONSTRAINT sweeper_status_pkey PRIMARY KEY (name);


--
-- Name: booking_slots_active_uq; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX booking_slots_active_uq ON public.booking_slots USING btree (rack_id, side, unit) WHERE (released_at IS NULL);


--
-- Name: bookings_device_active_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX bookings_device_active_idx ON public.bookings USING btree (device_id) WHERE (released_at IS NULL);


--
-- Name: bookings_one_active_placement_per_device; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX bookings_one_active_placement_per_device ON public.bookings USING btree (device_id) WHERE ((kind = 'placement'::text) AND (released_at IS NULL));


--
-- Name: bookings_rack_active_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX bookings_rack_active_idx ON public.bookings USING btree (rack_id) WHERE (released_at IS NULL);


--
-- Name: bookings_reservation_expiry_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX bookings_reservation_expiry_idx ON public.bookings USING btree (expires_at) WHERE ((kind = 'reservation'::text) AND (released_at IS NULL));


--
-- Name: bookings_site_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX bookings_site_created_idx ON public.bookings USING btree (site_id, created_at);


--
-- Name: bookings_site_released_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX bookings_site_released_idx ON public.bookings USING btree (site_id, released_at) WHERE (released_at IS NOT NULL);


--
-- Name: client_requests_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX client_requests_created_idx ON public.client_requests USING btree (created_at);


--
-- Name: devices_id_org_site_occupancy_uq; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX devices_id_org_site_occupancy_uq ON public.devices USING btree (id, org_id, site_id);


--
-- Name: devices_org_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX devices_org_created_idx ON public.devices USING btree (org_id, created_at, id) WHERE (created_at IS NOT NULL);


--
-- Name: devices_org_serial_uq; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX devices_org_serial_uq ON public.devices USING btree (org_id, serial) WHERE (serial IS NOT NULL);


--
-- Name: devices_site_id_order_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX devices_site_id_order_idx ON public.devices USING btree (site_id, id);


--
-- Name: jobs_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_created_idx ON public.jobs USING btree (created_at);


--
-- Name: location_history_corrects_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX location_history_corrects_idx ON public.location_history USING btree (corrects_id) WHERE (corrects_id IS NOT NULL);


--
-- Name: location_history_device_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX location_history_device_idx ON public.location_history USING btree (device_id, id);


--
-- Name: moves_job_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX moves_job_idx ON public.moves USING btree (job_id);


--
-- Name: moves_one_open_per_device; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX moves_one_open_per_device ON public.moves USING btree (device_id) WHERE (state <> ALL (ARRAY['completed'::text, 'cancelled'::text, 'failed'::text]));


--
-- Name: moves_org_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX moves_org_created_idx ON public.moves USING btree (org_id, created_at, id) WHERE (created_at IS NOT NULL);


--
-- Name: racks_org_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX racks_org_created_idx ON public.racks USING btree (org_id, created_at, id) WHERE (created_at IS NOT NULL);


--
-- Name: reservations_device_held_uq; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX reservations_device_held_uq ON public.reservations USING btree (device_id) WHERE (state = 'held'::text);


--
-- Name: reservations_held_expiry_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX reservations_held_expiry_idx ON public.reservations USING btree (expires_at) WHERE ((state = 'held'::text) AND (expires_at IS NOT NULL));


--
-- Name: reservations_org_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX reservations_org_created_idx ON public.reservations USING btree (org_id, created_at DESC, id DESC) WHERE (created_at IS NOT NULL);


--
-- Name: service_bindings_device_active_uq; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX service_bindings_device_active_uq ON public.service_bindings USING btree (device_id) WHERE (ended_at IS NULL);


--
-- Name: service_bindings_reservation_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX service_bindings_reservation_idx ON public.service_bindings USING btree (reservation_id);


--
-- Name: service_bindings_service_active_uq; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX service_bindings_service_active_uq ON public.service_bindings USING btree (service_id) WHERE (ended_at IS NULL);


--
-- Name: site_device_counts_stripe_uq; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX site_device_counts_stripe_uq ON public.site_device_counts USING btree (org_id, site_id, stripe);


--
-- Name: sites_org_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX sites_org_created_idx ON public.sites USING btree (org_id, created_at, id) WHERE (created_at IS NOT NULL);


--
-- Name: api_tokens api_tokens_auth_changed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER api_tokens_auth_changed AFTER DELETE OR UPDATE OR TRUNCATE ON public.api_tokens FOR EACH STATEMENT EXECUTE FUNCTION public.dcl_notify_auth_change();


--
-- Name: bookings bookings_apply_budget; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER bookings_apply_budget AFTER INSERT OR UPDATE ON public.bookings FOR EACH ROW EXECUTE FUNCTION public.dcl_bookings_apply_budget();


--
-- Name: bookings bookings_figures; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER bookings_figures BEFORE INSERT OR UPDATE OF kind, device_id ON public.bookings FOR EACH ROW EXECUTE FUNCTION public.dcl_bookings_figures();


--
-- Name: bookings bookings_figures_fixed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER bookings_figures_fixed BEFORE UPDATE OF power_watts, power_ports, feed_ids, weight_kg, network_ports ON public.bookings FOR EACH ROW EXECUTE FUNCTION public.dcl_bookings_figures_fixed();


--
-- Name: client_requests client_requests_call_deadline; Type: TRIGGER; Schema: public; Owner: -
--

CREATE CONSTRAINT TRIGGER client_requests_call_deadline AFTER INSERT ON public.client_requests DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.dcl_refuse_after_call_deadline();


--
-- Name: client_requests client_requests_completed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE CONSTRAINT TRIGGER client_requests_completed AFTER INSERT OR UPDATE ON public.client_requests DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.client_requests_require_response();


--
-- Name: devices devices_count_deleted; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER devices_count_deleted AFTER DELETE ON public.devices REFERENCING OLD TABLE AS old_devices FOR EACH STATEMENT EXECUTE FUNCTION public.dcl_count_devices_deleted();


--
-- Name: devices devices_count_inserted; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER devices_count_inserted AFTER INSERT ON public.devices REFERENCING NEW TABLE AS new_devices FOR EACH STATEMENT EXECUTE FUNCTION public.dcl_count_devices_inserted();


--
-- Name: devices devices_count_moved; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER devices_count_moved AFTER UPDATE OF org_id, site_id ON public.devices FOR EACH ROW WHEN (((old.org_id IS DISTINCT FROM new.org_id) OR (old.site_id IS DISTINCT FROM new.site_id))) EXECUTE FUNCTION public.dcl_count_device_moved();


--
-- Name: devices devices_count_truncated; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER devices_count_truncated AFTER TRUNCATE ON public.devices FOR EACH STATEMENT EXECUTE FUNCTION public.dcl_count_devices_truncated();


--
-- Name: devices devices_fill_booking_figures; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER devices_fill_booking_figures AFTER UPDATE OF power_draw_watts, power_port_count, weight_kg ON public.devices FOR EACH ROW EXECUTE FUNCTION public.dcl_devices_fill_booking_figures();


--
-- Name: devices devices_recheck_airflow; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER devices_recheck_airflow AFTER UPDATE OF airflow ON public.devices FOR EACH ROW WHEN ((new.airflow IS DISTINCT FROM old.airflow)) EXECUTE FUNCTION public.dcl_devices_recheck_airflow();


--
-- Name: feature_settings feature_settings_auth_changed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER feature_settings_auth_changed AFTER INSERT OR DELETE OR UPDATE OR TRUNCATE ON public.feature_settings FOR EACH STATEMENT EXECUTE FUNCTION public.dcl_notify_auth_change();


--
-- Name: location_history location_history_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER location_history_no_truncate BEFORE TRUNCATE ON public.location_history FOR EACH STATEMENT EXECUTE FUNCTION public.location_history_append_only();


--
-- Name: location_history location_history_no_update_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER location_history_no_update_delete BEFORE DELETE OR UPDATE ON public.location_history FOR EACH ROW EXECUTE FUNCTION public.location_history_append_only();


--
-- Name: move_events move_events_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER move_events_no_truncate BEFORE TRUNCATE ON public.move_events FOR EACH STATEMENT EXECUTE FUNCTION public.move_events_append_only();


--
-- Name: move_events move_events_no_update_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER move_events_no_update_delete BEFORE DELETE OR UPDATE ON public.move_events FOR EACH ROW EXECUTE FUNCTION public.move_events_append_only();


--
-- Name: move_events move_events_notify; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER move_events_notify AFTER INSERT ON public.move_events FOR EACH ROW EXECUTE FUNCTION public.move_events_notify();


--
-- Name: moves moves_move_hold_required; Type: TRIGGER; Schema: public; Owner: -
--

CREATE CONSTRAINT TRIGGER moves_move_hold_required AFTER INSERT OR UPDATE ON public.moves DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.moves_require_move_hold();


--
-- Name: organization_feature_settings organization_feature_settings_auth_changed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER organization_feature_settings_auth_changed AFTER INSERT OR DELETE OR UPDATE OR TRUNCATE ON public.organization_feature_settings FOR EACH STATEMENT EXECUTE FUNCTION public.dcl_notify_auth_change();


--
-- Name: power_feeds power_feeds_rebuild; Type: TRIGGER; Schema: public; Owner: -
--

CREATE CONSTRAINT TRIGGER power_feeds_rebuild AFTER INSERT OR DELETE OR UPDATE ON public.power_feeds DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.dcl_power_feeds_rebuild();


--
-- Name: racks racks_build_budgets; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER racks_build_budgets AFTER INSERT ON public.racks FOR EACH ROW WHEN (((new.cooling_budget_watts IS NOT NULL) OR (new.airflow IS NOT NULL) OR (new.power_budget_watts IS NOT NULL) OR (new.weight_budget_kg IS NOT NULL) OR (new.switch_ports IS NOT NULL))) EXECUTE FUNCTION public.dcl_racks_build_budgets();


--
-- Name: racks racks_rebuild_budgets; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER racks_rebuild_budgets AFTER UPDATE OF cooling_budget_watts, airflow, power_budget_watts, weight_budget_kg, switch_ports ON public.racks FOR EACH ROW EXECUTE FUNCTION public.dcl_racks_rebuild_budgets();


--
-- Name: reservations reservations_call_deadline; Type: TRIGGER; Schema: public; Owner: -
--

CREATE CONSTRAINT TRIGGER reservations_call_deadline AFTER INSERT ON public.reservations DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.dcl_refuse_after_call_deadline();


--
-- Name: api_tokens api_tokens_org_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_org_fk FOREIGN KEY (org_id) REFERENCES public.organizations(id);


--
-- Name: booking_slots booking_slots_booking_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.booking_slots
    ADD CONSTRAINT booking_slots_booking_fk FOREIGN KEY (booking_id, rack_id) REFERENCES public.bookings(id, rack_id);


--
-- Name: bookings bookings_device_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bookings
    ADD CONSTRAINT bookings_device_fk FOREIGN KEY (device_id, org_id, site_id) REFERENCES public.devices(id, org_id, site_id);


--
-- Name: bookings bookings_rack_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bookings
    ADD CONSTRAINT bookings_rack_fk FOREIGN KEY (rack_id, site_id) REFERENCES public.racks(id, site_id);


--
-- Name: bookings bookings_site_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bookings
    ADD CONSTRAINT bookings_site_fk FOREIGN KEY (site_id, org_id) REFERENCES public.sites(id, org_id);


--
-- Name: client_requests client_requests_org_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.client_requests
    ADD CONSTRAINT client_requests_org_fk FOREIGN KEY (org_id) REFERENCES public.organizations(id);


--
-- Name: devices devices_site_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_site_fk FOREIGN KEY (site_id, org_id) REFERENCES public.sites(id, org_id);


--
-- Name: jobs jobs_org_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.jobs
    ADD CONSTRAINT jobs_org_fk FOREIGN KEY (org_id) REFERENCES public.organizations(id);


--
-- Name: location_history location_history_corrects_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.location_history
    ADD CONSTRAINT location_history_corrects_fk FOREIGN KEY (corrects_id) REFERENCES public.location_history(id);


--
-- Name: move_events move_events_move_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.move_events
    ADD CONSTRAINT move_events_move_fk FOREIGN KEY (move_id) REFERENCES public.moves(id);


--
-- Name: moves moves_destination_rack_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.moves
    ADD CONSTRAINT moves_destination_rack_fk FOREIGN KEY (destination_rack_id, destination_site_id) REFERENCES public.racks(id, site_id);


--
-- Name: moves moves_device_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.moves
    ADD CONSTRAINT moves_device_fk FOREIGN KEY (device_id) REFERENCES public.devices(id);


--
-- Name: moves moves_job_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.moves
    ADD CONSTRAINT moves_job_fk FOREIGN KEY (job_id) REFERENCES public.jobs(id) ON DELETE SET NULL;


--
-- Name: moves moves_move_hold_booking_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.moves
    ADD CONSTRAINT moves_move_hold_booking_fk FOREIGN KEY (move_hold_booking_id) REFERENCES public.bookings(id);


--
-- Name: moves moves_site_org_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.moves
    ADD CONSTRAINT moves_site_org_fk FOREIGN KEY (source_site_id, org_id) REFERENCES public.sites(id, org_id);


--
-- Name: moves moves_source_booking_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.moves
    ADD CONSTRAINT moves_source_booking_fk FOREIGN KEY (source_booking_id) REFERENCES public.bookings(id);


--
-- Name: moves moves_source_rack_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.moves
    ADD CONSTRAINT moves_source_rack_fk FOREIGN KEY (source_rack_id, source_site_id) REFERENCES public.racks(id, site_id);


--
-- Name: organization_feature_settings org_features_feature_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.organization_feature_settings
    ADD CONSTRAINT org_features_feature_fk FOREIGN KEY (feature) REFERENCES public.feature_settings(feature);


--
-- Name: organization_feature_settings org_features_org_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.organization_feature_settings
    ADD CONSTRAINT org_features_org_fk FOREIGN KEY (org_id) REFERENCES public.organizations(id);


--
-- Name: power_feeds power_feeds_rack_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.power_feeds
    ADD CONSTRAINT power_feeds_rack_fk FOREIGN KEY (rack_id) REFERENCES public.racks(id);


--
-- Name: rack_budgets rack_budgets_rack_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rack_budgets
    ADD CONSTRAINT rack_budgets_rack_fk FOREIGN KEY (rack_id) REFERENCES public.racks(id);


--
-- Name: racks racks_site_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.racks
    ADD CONSTRAINT racks_site_fk FOREIGN KEY (site_id, org_id) REFERENCES public.sites(id, org_id);


--
-- Name: reservations reservations_device_org_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.reservations
    ADD CONSTRAINT reservations_device_org_fk FOREIGN KEY (device_id, org_id) REFERENCES public.devices(id, org_id);


--
-- Name: reservations reservations_service_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.reservations
    ADD CONSTRAINT reservations_service_fk FOREIGN KEY (service_id, org_id) REFERENCES public.services(id, org_id);


--
-- Name: service_bindings service_bindings_device_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.service_bindings
    ADD CONSTRAINT service_bindings_device_fk FOREIGN KEY (device_id) REFERENCES public.devices(id);


--
-- Name: service_bindings service_bindings_reservation_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.service_bindings
    ADD CONSTRAINT service_bindings_reservation_fk FOREIGN KEY (reservation_id) REFERENCES public.reservations(id);


--
-- Name: service_bindings service_bindings_service_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.service_bindings
    ADD CONSTRAINT service_bindings_service_fk FOREIGN KEY (service_id, org_id) REFERENCES public.services(id, org_id);


--
-- Name: services services_org_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.services
    ADD CONSTRAINT services_org_fk FOREIGN KEY (org_id) REFERENCES public.organizations(id);


--
-- Name: site_device_counts site_device_counts_site_id_org_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.site_device_counts
    ADD CONSTRAINT site_device_counts_site_id_org_id_fkey FOREIGN KEY (site_id, org_id) REFERENCES public.sites(id, org_id) ON DELETE CASCADE;


--
-- Name: sites sites_org_fk; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.sites
    ADD CONSTRAINT sites_org_fk FOREIGN KEY (org_id) REFERENCES public.organizations(id);


--
-- Name: SCHEMA public; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA public TO dcl_app;


--
-- Name: TABLE bookings; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.bookings TO dcl_app;


--
-- Name: FUNCTION dcl_guarded_exec(stmt text, args text[], OUT returned text, OUT affected bigint, OUT violated_constraint text, OUT violated_sqlstate text); Type: ACL; Schema: public; Owner: -
--

GRANT ALL ON FUNCTION public.dcl_guarded_exec(stmt text, args text[], OUT returned text, OUT affected bigint, OUT violated_constraint text, OUT violated_sqlstate text) TO dcl_app;


--
-- Name: FUNCTION dcl_power_feeds_judge(p_rack uuid); Type: ACL; Schema: public; Owner: -
--

GRANT ALL ON FUNCTION public.dcl_power_feeds_judge(p_rack uuid) TO dcl_app;


--
-- Name: TABLE reservations; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.reservations TO dcl_app;


--
-- Name: FUNCTION location_history_append_only(); Type: ACL; Schema: public; Owner: -
--

GRANT ALL ON FUNCTION public.location_history_append_only() TO dcl_app;


--
-- Name: FUNCTION move_events_append_only(); Type: ACL; Schema: public; Owner: -
--

GRANT ALL ON FUNCTION public.move_events_append_only() TO dcl_app;


--
-- Name: FUNCTION move_events_notify(); Type: ACL; Schema: public; Owner: -
--

GRANT ALL ON FUNCTION public.move_events_notify() TO dcl_app;


--
-- Name: FUNCTION moves_require_move_hold(); Type: ACL; Schema: public; Owner: -
--

GRANT ALL ON FUNCTION public.moves_require_move_hold() TO dcl_app;


--
-- Name: TABLE api_tokens; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.api_tokens TO dcl_app;


--
-- Name: TABLE booking_slots; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.booking_slots TO dcl_app;


--
-- Name: TABLE client_requests; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.client_requests TO dcl_app;


--
-- Name: TABLE devices; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.devices TO dcl_app;


--
-- Name: TABLE feature_settings; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.feature_settings TO dcl_app;


--
-- Name: TABLE jobs; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.jobs TO dcl_app;


--
-- Name: TABLE location_history; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.location_history TO dcl_app;


--
-- Name: SEQUENCE location_history_id_seq; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,USAGE ON SEQUENCE public.location_history_id_seq TO dcl_app;


--
-- Name: TABLE move_events; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.move_events TO dcl_app;


--
-- Name: SEQUENCE move_events_id_seq; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,USAGE ON SEQUENCE public.move_events_id_seq TO dcl_app;


--
-- Name: TABLE moves; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.moves TO dcl_app;


--
-- Name: TABLE organization_feature_settings; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.organization_feature_settings TO dcl_app;


--
-- Name: TABLE organizations; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.organizations TO dcl_app;


--
-- Name: TABLE power_feeds; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.power_feeds TO dcl_app;


--
-- Name: TABLE rack_budgets; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.rack_budgets TO dcl_app;


--
-- Name: TABLE racks; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.racks TO dcl_app;


--
-- Name: TABLE reservation_holding_states; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.reservation_holding_states TO dcl_app;


--
-- Name: TABLE schema_migrations; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.schema_migrations TO dcl_app;


--
-- Name: TABLE service_bindings; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.service_bindings TO dcl_app;


--
-- Name: TABLE services; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.services TO dcl_app;


--
-- Name: TABLE site_device_counts; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.site_device_counts TO dcl_app;


--
-- Name: TABLE sites; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.sites TO dcl_app;


--
-- Name: TABLE sweeper_status; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.sweeper_status TO dcl_app;


--
-- Name: DEFAULT PRIVILEGES FOR SEQUENCES; Type: DEFAULT ACL; Schema: public; Owner: -
--

ALTER DEFAULT PRIVILEGES FOR ROLE dcl IN SCHEMA public GRANT SELECT,USAGE ON SEQUENCES  TO dcl_app;


--
-- Name: DEFAULT PRIVILEGES FOR TABLES; Type: DEFAULT ACL; Schema: public; Owner: -
--

ALTER DEFAULT PRIVILEGES FOR ROLE dcl IN SCHEMA public GRANT SELECT,INSERT,DELETE,UPDATE ON TABLES  TO dcl_app;


--
-- PostgreSQL database dump complete
--

