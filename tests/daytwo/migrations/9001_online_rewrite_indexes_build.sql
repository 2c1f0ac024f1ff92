-- dcl:no-transaction
-- schema/migrations 0028 and 0029 rewritten by the online rules, as migration_under_load
-- applies them to a database at 0027 (they are a demonstration, not part of the schema: 0028
-- and 0029 are applied everywhere). Numbered 9001-9004 so that no real migration's number is
-- theirs: the migrator only needs NNNN_name.sql above the base's 0027, in order. Expand: every
-- index is built CONCURRENTLY under a new name while the old ones keep serving; nothing waits
-- for a build.
CREATE INDEX CONCURRENTLY IF NOT EXISTS reservations_org_created_v2_idx
  ON reservations (org_id, created_at DESC, id DESC) WHERE created_at IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS moves_org_created_v2_idx
  ON moves (org_id, created_at, id) WHERE created_at IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS sites_org_created_v2_idx
  ON sites (org_id, created_at, id) WHERE created_at IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS racks_org_created_v2_idx
  ON racks (org_id, created_at, id) WHERE created_at IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS devices_org_created_v2_idx
  ON devices (org_id, created_at, id) WHERE created_at IS NOT NULL;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS reservations_org_key_v2_uq
  ON reservations (idempotency_key, org_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS sites_org_name_v2_uq ON sites (name, org_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS devices_id_org_uq ON devices (id, org_id);
