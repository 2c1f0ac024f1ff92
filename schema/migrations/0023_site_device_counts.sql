-- The number of devices per site, kept by triggers on devices, so that a refusal's explanation
-- counts the organization's devices at other sites from one row per site instead of one index
-- entry per device.
--
-- Why: dcl_exclusion_summary() (migration 0022) answered the devices at the organization's other
-- sites as one exact wrong_site count read from devices_org_site_idx. That count read every
-- index entry of the organization's other sites on every refusal, and, on a table autovacuum had
-- not yet visited, every heap row too (index-only scans need the visibility map): 5.5-7 ms per
-- refusal for an organization with a 10,000-machine site (pg_stat_statements, 246 refusals of
-- the benchmark's 256 clients on a 10-machine site), so the refusal path cost grew with the
-- organization's other sites and 256 callers got 380-650 decisions/s. Read from this table the
-- count costs one index probe per site of the organization.
--
-- Exact, not an estimate: the triggers run in the transaction that inserts or deletes the
-- devices, so a statement's snapshot sees the count and the devices it counts together.
-- The price: transactions that add or remove devices at the same site take that site's row
-- lock in turn (until commit); device writes are inventory operations (imports, decommission
-- is an UPDATE and does not count here), never on Reserve's path.
CREATE TABLE site_device_counts (
  org_id  uuid   NOT NULL,
  site_id uuid   NOT NULL,
  devices bigint NOT NULL CHECK (devices >= 0),
  PRIMARY KEY (org_id, site_id),
  FOREIGN KEY (site_id, org_id) REFERENCES sites (id, org_id) ON DELETE CASCADE
);

INSERT INTO site_device_counts (org_id, site_id, devices)
SELECT org_id, site_id, count(*) FROM devices GROUP BY org_id, site_id;

-- Per statement, from the transition tables: a bulk import of 100,000 devices adds one row per
-- site, in (org, site) order so that two statements lock the counts in the same order.
CREATE FUNCTION dcl_count_devices_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO site_device_counts AS c (org_id, site_id, devices)
  SELECT n.org_id, n.site_id, count(*) FROM new_devices n
   GROUP BY n.org_id, n.site_id ORDER BY n.org_id, n.site_id
  ON CONFLICT (org_id, site_id) DO UPDATE SET devices = c.devices + excluded.devices;
  RETURN NULL;
END
$$;

CREATE FUNCTION dcl_count_devices_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE site_device_counts c SET devices = c.devices - o.devices
    FROM (SELECT d.org_id, d.site_id, count(*) AS devices FROM old_devices d
           GROUP BY d.org_id, d.site_id) o
   WHERE c.org_id = o.org_id AND c.site_id = o.site_id;
  RETURN NULL;
END
$$;

-- dcl never moves a device to another site or organization (a move changes its rack); this
-- keeps the count right if an operator does.
CREATE FUNCTION dcl_count_device_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE site_device_counts SET devices = devices - 1
   WHERE org_id = OLD.org_id AND site_id = OLD.site_id;
  INSERT INTO site_device_counts AS c (org_id, site_id, devices)
  VALUES (NEW.org_id, NEW.site_id, 1)
  ON CONFLICT (org_id, site_id) DO UPDATE SET devices = c.devices + 1;
  RETURN NULL;
END
$$;

CREATE FUNCTION dcl_count_devices_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM site_device_counts;
  RETURN NULL;
END
$$;

CREATE TRIGGER devices_count_inserted AFTER INSERT ON devices
  REFERENCING NEW TABLE AS new_devices FOR EACH STATEMENT
  EXECUTE FUNCTION dcl_count_devices_inserted();
CREATE TRIGGER devices_count_deleted AFTER DELETE ON devices
  REFERENCING OLD TABLE AS old_devices FOR EACH STATEMENT
  EXECUTE FUNCTION dcl_count_devices_deleted();
CREATE TRIGGER devices_count_moved AFTER UPDATE OF org_id, site_id ON devices
  FOR EACH ROW WHEN (OLD.org_id IS DISTINCT FROM NEW.org_id
                     OR OLD.site_id IS DISTINCT FROM NEW.site_id)
  EXECUTE FUNCTION dcl_count_device_moved();
CREATE TRIGGER devices_count_truncated AFTER TRUNCATE ON devices
  FOR EACH STATEMENT EXECUTE FUNCTION dcl_count_devices_truncated();

-- The summary of migration 0022 with the other sites' count read from site_device_counts; the
-- asked site's part is unchanged.
CREATE OR REPLACE FUNCTION dcl_exclusion_summary(p_org uuid, p_site uuid, p_max_listed integer)
RETURNS TABLE (at_asked_site boolean, vendor text, model text, hardware_profile text,
               process_state text, bound boolean, held boolean, decommissioned boolean,
               devices bigint, first_ids text)
LANGUAGE plpgsql STABLE
SET jit = off
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
BEGIN
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
  SELECT false, '', '', '', '', false, false, false, o.devices::bigint, ''
    FROM (SELECT sum(c.devices) AS devices FROM site_device_counts c
           WHERE c.org_id = p_org AND c.site_id <> p_site) o
   WHERE o.devices > 0;
END
$$;
