-- The swap, in one transaction of catalog changes only (no scan, no build): each takes its
-- table's lock for a moment, under the migrator's lock_timeout. The unique constraints move to
-- the indexes built in 9001; the new key is added NOT VALID (no scan now; 9003 validates it).
ALTER TABLE reservations DROP CONSTRAINT reservations_org_key_uq,
  ADD CONSTRAINT reservations_org_key_uq UNIQUE USING INDEX reservations_org_key_v2_uq;
ALTER TABLE sites DROP CONSTRAINT sites_org_name_uq,
  ADD CONSTRAINT sites_org_name_uq UNIQUE USING INDEX sites_org_name_v2_uq;
ALTER TABLE devices ADD CONSTRAINT devices_id_org_uq UNIQUE USING INDEX devices_id_org_uq;
ALTER TABLE reservations ADD CONSTRAINT reservations_device_org_fk
  FOREIGN KEY (device_id, org_id) REFERENCES devices (id, org_id) NOT VALID;
