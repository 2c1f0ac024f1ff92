-- dcl:no-transaction
-- Migrate: the key is validated in a step of its own (SHARE UPDATE EXCLUSIVE: writes go on),
-- and the indexes the new ones replace are dropped CONCURRENTLY.
-- VALIDATE CONSTRAINT is safe to run again (a valid constraint is left as it is).
-- squawk-ignore prefer-robust-stmts
ALTER TABLE reservations VALIDATE CONSTRAINT reservations_device_org_fk;
DROP INDEX CONCURRENTLY IF EXISTS devices_org_site_idx;
DROP INDEX CONCURRENTLY IF EXISTS reservations_org_created_idx;
DROP INDEX CONCURRENTLY IF EXISTS moves_org_created_idx;
DROP INDEX CONCURRENTLY IF EXISTS sites_org_created_idx;
DROP INDEX CONCURRENTLY IF EXISTS racks_org_created_idx;
DROP INDEX CONCURRENTLY IF EXISTS devices_org_created_idx;
