-- Contract: the new indexes take the old names, and the keys the new one replaces go. In a
-- real upgrade this is the next release's migration, once no server of the previous release
-- relies on them (docs/day-two.md); here it follows at once, to measure every step.
ALTER INDEX reservations_org_created_v2_idx RENAME TO reservations_org_created_idx;
ALTER INDEX moves_org_created_v2_idx RENAME TO moves_org_created_idx;
ALTER INDEX sites_org_created_v2_idx RENAME TO sites_org_created_idx;
ALTER INDEX racks_org_created_v2_idx RENAME TO racks_org_created_idx;
ALTER INDEX devices_org_created_v2_idx RENAME TO devices_org_created_idx;
ALTER TABLE reservations DROP CONSTRAINT reservations_device_fk,
  DROP CONSTRAINT reservations_org_fk;
