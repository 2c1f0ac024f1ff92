-- Inventory written through the API (InventoryService, services/inventory): serials unique per
-- organization, devices retired for good (decommissioned), and the indexes its lists page on.
--
-- Enforced here: one device per serial in an organization (devices_org_serial_uq; a NULL serial
-- is "none recorded" and never collides); a decommissioned device records when and by whom
-- (devices_decommissioned_consistent). Enforced by code (services/inventory/inventory_logic.cc),
-- each under the device's row lock: a device is decommissioned only while it is not held,
-- bound, placed or moving; the booking write path and Reserve's eligibility refuse a
-- decommissioned device (services/occupancy/booking_store.cc, services/reservation/eligibility.h).

-- A serial is a physical machine's label: two rows with one serial in one organization are one
-- machine counted twice. An empty serial is not a serial.
ALTER TABLE devices ADD CONSTRAINT devices_serial_nonempty CHECK (serial <> '');
CREATE UNIQUE INDEX devices_org_serial_uq ON devices (org_id, serial) WHERE serial IS NOT NULL;

-- Retired: the row stays (reservations, bindings, history and moves point at it), the machine
-- is no longer anyone's stock. NULL = in inventory.
ALTER TABLE devices ADD COLUMN decommissioned_at timestamptz;
ALTER TABLE devices ADD COLUMN decommissioned_by text;
ALTER TABLE devices ADD COLUMN decommission_reason text;
ALTER TABLE devices ADD CONSTRAINT devices_decommissioned_consistent
  CHECK ((decommissioned_at IS NULL) = (decommissioned_by IS NULL));

-- The lists page in creation order per organization: (created_at, id) is the page token.
CREATE INDEX sites_org_created_idx ON sites (org_id, created_at, id);
CREATE INDEX racks_org_created_idx ON racks (org_id, created_at, id);
CREATE INDEX devices_org_created_idx ON devices (org_id, created_at, id);
