-- A lookup by key or id must be answered by its unique index whatever the statistics say; the
-- listing indexes (org_id, created_at, id) had become a second answer.
--
-- Why: on a table autovacuum has not analysed yet (every table of a fresh installation, until
-- about 50 rows have changed and the next autovacuum round), the planner takes "org_id = $1" to
-- match 1 row of 200 and a table of under ten pages to hold under 200 rows, so the listing
-- index and the unique index both promise one row, and the planner took the listing index:
-- `SELECT … FROM reservations WHERE org_id = $1 AND idempotency_key = $2` planned as
-- `Index Scan using reservations_org_created_idx … Index Cond: (org_id = $1) Filter:
-- (idempotency_key = $2)`, reading every reservation of the organization. Generic plans are made
-- once per connection, so a plan made in that state stayed until the table's first ANALYZE:
-- dcl_reserve's key lookup in the reservation benchmark's gRPC runs (10,000-machine site,
-- 8 clients, the main organization's reservations growing by 1,000 a second) cost PostgreSQL
-- 1.28 ms of CPU per Reserve, against 0.76 ms with the listing index gone (2.40 against 0.79 ms
-- at 32 clients). Lookups by (org_id, id) of devices, moves and reservations planned the same
-- way (devices through devices_org_site_idx).
--
-- The rule from here on: an index whose first column is org_id serves only the statements that
-- name all of its columns.
--   * Each listing index is partial, `WHERE created_at IS NOT NULL`: always true (the column is
--     NOT NULL), but the planner uses a partial index only for a statement whose own conditions
--     imply its predicate, and only the listings state it (services/common/page_token.h,
--     CreationListingCondition).
--   * A key unique within an organization leads with the key: reservations_org_key_uq becomes
--     (idempotency_key, org_id) and sites_org_name_uq (name, org_id), same names, same
--     uniqueness. As (org_id, …) they were the next index a lookup by (org_id, id) took once the
--     listing index was out of reach (`Index Scan using reservations_org_key_uq … Index Cond:
--     (org_id = $1) Filter: (id = $2)`).
-- A lookup by key or id then has one index that matches it. tests/common/lookup_plans_test
-- checks the lookups in a never-analysed database and the listings in an analysed one.
--
-- The indexes are rebuilt inside this migration's transaction (not CONCURRENTLY): on large
-- tables, writes to them wait for each build.
--
-- devices_org_site_idx (org_id, site_id) goes: since migration 0023 no statement reads it
-- (dcl_exclusion_summary counts other sites from site_device_counts; devices by site are read
-- through devices_site_id_order_idx), and it was the index the device lookups took.
DROP INDEX devices_org_site_idx;

DROP INDEX reservations_org_created_idx;
CREATE INDEX reservations_org_created_idx ON reservations (org_id, created_at DESC, id DESC)
  WHERE created_at IS NOT NULL;

DROP INDEX moves_org_created_idx;
CREATE INDEX moves_org_created_idx ON moves (org_id, created_at, id) WHERE created_at IS NOT NULL;

DROP INDEX sites_org_created_idx;
CREATE INDEX sites_org_created_idx ON sites (org_id, created_at, id) WHERE created_at IS NOT NULL;

DROP INDEX racks_org_created_idx;
CREATE INDEX racks_org_created_idx ON racks (org_id, created_at, id) WHERE created_at IS NOT NULL;

DROP INDEX devices_org_created_idx;
CREATE INDEX devices_org_created_idx ON devices (org_id, created_at, id)
  WHERE created_at IS NOT NULL;

ALTER TABLE reservations DROP CONSTRAINT reservations_org_key_uq,
  ADD CONSTRAINT reservations_org_key_uq UNIQUE (idempotency_key, org_id);

ALTER TABLE sites DROP CONSTRAINT sites_org_name_uq,
  ADD CONSTRAINT sites_org_name_uq UNIQUE (name, org_id);
