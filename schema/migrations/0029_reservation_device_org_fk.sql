-- A reservation's organization is its device's organization, and the schema says so: one
-- foreign key (device_id, org_id) → devices (id, org_id) replaces reservations_device_fk
-- (device_id → devices) and reservations_org_fk (org_id → organizations). The organization still
-- exists through the device (devices_site_fk → sites → organizations); what was a code path's
-- promise (dcl_reserve picks devices with d.org_id = p_org) is now the schema's rule, as
-- services_id_org_uq already makes it for services.
--
-- And one check per hold instead of two. The organization check locked the organization's row
-- (FOR KEY SHARE) in every Reserve, so concurrent Reserves of one organization shared one row
-- lock: a MultiXact per overlap and one contended tuple. pgbench calling dcl_reserve, 100,000-
-- machine site, 5 s per run, three rounds alternating after a CHECKPOINT each: 32 connections
-- 4,955 / 4,901 / 4,687 → 5,403 / 5,293 / 5,016 holds/s (+8 %); 8 connections 5,240 / 5,499 /
-- 5,451 → 5,596 / 4,986 / 5,084 (within noise).
--
-- Validating the new key reads every reservation once (under SHARE ROW EXCLUSIVE locks on
-- reservations and devices, for the migration's transaction).
CREATE UNIQUE INDEX devices_id_org_uq ON devices (id, org_id);
ALTER TABLE devices ADD CONSTRAINT devices_id_org_uq UNIQUE USING INDEX devices_id_org_uq;

ALTER TABLE reservations
  ADD CONSTRAINT reservations_device_org_fk FOREIGN KEY (device_id, org_id)
    REFERENCES devices (id, org_id),
  DROP CONSTRAINT reservations_device_fk,
  DROP CONSTRAINT reservations_org_fk;
