-- site_device_counts in stripes, step 3 of 3: the triggers write a stripe of their own
-- (migration 0032 says why). A transaction's stripe is its transaction id modulo 16.
--
-- A stripe is a partial count: a delete or a move out of a site counts down in the deleting
-- transaction's stripe, which may then be below zero while the site's sum is exact, so the
-- check (devices >= 0) moves from the row to the sum, where no constraint can hold it; the
-- triggers are the only writers (tests/reservation/reservation_schema_test compares every
-- site's sum with the devices table after inserts, bulk inserts, deletes and moves).
-- Readers sum the stripes: dcl_exclusion_summary's count of the other sites (migrations 0024,
-- 0031) already does, `sum(c.devices) ... WHERE c.org_id = p_org AND c.site_id <> p_site`.
ALTER TABLE site_device_counts DROP CONSTRAINT site_device_counts_pkey;
ALTER TABLE site_device_counts DROP CONSTRAINT site_device_counts_devices_check;

-- Per statement, from the transition table, in (org, site) order so that two statements lock
-- their stripes in the same order.
CREATE OR REPLACE FUNCTION dcl_count_devices_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO site_device_counts AS c (org_id, site_id, stripe, devices)
  SELECT n.org_id, n.site_id, txid_current() % 16, count(*) FROM new_devices n
   GROUP BY n.org_id, n.site_id ORDER BY n.org_id, n.site_id
  ON CONFLICT (org_id, site_id, stripe) DO UPDATE SET devices = c.devices + excluded.devices;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION dcl_count_devices_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO site_device_counts AS c (org_id, site_id, stripe, devices)
  SELECT d.org_id, d.site_id, txid_current() % 16, -count(*) FROM old_devices d
   GROUP BY d.org_id, d.site_id ORDER BY d.org_id, d.site_id
  ON CONFLICT (org_id, site_id, stripe) DO UPDATE SET devices = c.devices + excluded.devices;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION dcl_count_device_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO site_device_counts AS c (org_id, site_id, stripe, devices)
  VALUES (OLD.org_id, OLD.site_id, txid_current() % 16, -1),
         (NEW.org_id, NEW.site_id, txid_current() % 16, 1)
  ON CONFLICT (org_id, site_id, stripe) DO UPDATE SET devices = c.devices + excluded.devices;
  RETURN NULL;
END
$$;
