-- Bookings of rack units, materialised per slot (occupancy service, issue 5).
--
-- A booking is a header (what someone created) plus one slot row per occupied (side, unit).
-- The partial unique index on booking_slots (rack, side, unit) WHERE released_at IS NULL is the
-- only real occupancy boundary in the system: a range on the header cannot be unique against
-- another range, one row per slot can, and a unique index cannot join, so rack and side are
-- copied onto the slot row. Everything the planner checks before writing only turns the common
-- case into a readable sentence; this index decides races.
--
-- Enforced here: kind, placement needs a device, a placement never expires, a reservation
-- always expires, one active placement per device (global, across organizations), one active
-- booking per slot, org/site/rack/device consistency through composite foreign keys.
-- Enforced by the write path (services/occupancy/booking_store.cc): units inside the rack's
-- geometry, rear only on racks that have one, header and slots released together.

-- Lets a booking prove with one composite foreign key that its device belongs to the booking's
-- organization and stands at the rack's site.
CREATE UNIQUE INDEX devices_id_org_site_occupancy_uq ON devices (id, org_id, site_id);

CREATE TABLE bookings (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id         uuid NOT NULL,
  site_id        uuid NOT NULL,
  rack_id        uuid NOT NULL,
  kind           text NOT NULL CONSTRAINT bookings_kind_valid
                   CHECK (kind IN ('placement', 'blocking', 'move_hold', 'reservation')),
  device_id      uuid,
  -- The side(s) claimed; a full-depth or unknown-depth device claims both.
  front          boolean NOT NULL,
  rear           boolean NOT NULL,
  -- The unit numbers claimed, lowest number first (whatever the rack's numbering direction).
  first_unit     integer NOT NULL,
  last_unit      integer NOT NULL,
  expires_at     timestamptz,
  created_by     text NOT NULL CONSTRAINT bookings_created_by_nonempty CHECK (created_by <> ''),
  reason         text NOT NULL DEFAULT '',
  created_at     timestamptz NOT NULL DEFAULT now(),
  released_at    timestamptz,
  released_by    text,
  release_reason text,
  CONSTRAINT bookings_some_side CHECK (front OR rear),
  CONSTRAINT bookings_range_ordered CHECK (first_unit <= last_unit),
  -- A machine physically there is a machine: no placement without one.
  CONSTRAINT bookings_placement_needs_device CHECK (kind <> 'placement' OR device_id IS NOT NULL),
  -- A placement never expires: one that silently stops counting while the machine is still
  -- bolted in would be a lie with a timer.
  CONSTRAINT bookings_placement_never_expires CHECK (kind <> 'placement' OR expires_at IS NULL),
  -- A rack reservation waits for a person with a trolley, not forever.
  CONSTRAINT bookings_reservation_expires CHECK (kind <> 'reservation' OR expires_at IS NOT NULL),
  CONSTRAINT bookings_released_consistent
    CHECK ((released_at IS NULL) = (released_by IS NULL)),
  CONSTRAINT bookings_site_fk FOREIGN KEY (site_id, org_id) REFERENCES sites (id, org_id),
  CONSTRAINT bookings_rack_fk FOREIGN KEY (rack_id, site_id) REFERENCES racks (id, site_id),
  CONSTRAINT bookings_device_fk FOREIGN KEY (device_id, org_id, site_id)
    REFERENCES devices (id, org_id, site_id),
  -- Target of the slots' composite foreign key: a slot's rack is its booking's rack.
  CONSTRAINT bookings_id_rack_uq UNIQUE (id, rack_id)
);

-- At most one active placement per device. Global, not per organization: a device that is
-- already placed collides here before any ownership check (the device foreign key is checked
-- at the end of the statement, after the unique index).
CREATE UNIQUE INDEX bookings_one_active_placement_per_device
  ON bookings (device_id) WHERE kind = 'placement' AND released_at IS NULL;

CREATE INDEX bookings_rack_active_idx ON bookings (rack_id) WHERE released_at IS NULL;
CREATE INDEX bookings_device_active_idx ON bookings (device_id) WHERE released_at IS NULL;
-- The sweeper's work list: active reservations by expiry.
CREATE INDEX bookings_reservation_expiry_idx
  ON bookings (expires_at) WHERE kind = 'reservation' AND released_at IS NULL;

CREATE TABLE booking_slots (
  booking_id  uuid NOT NULL,
  rack_id     uuid NOT NULL,
  side        text NOT NULL CONSTRAINT booking_slots_side_valid CHECK (side IN ('front', 'rear')),
  unit        integer NOT NULL,
  released_at timestamptz,
  CONSTRAINT booking_slots_pk PRIMARY KEY (booking_id, side, unit),
  CONSTRAINT booking_slots_booking_fk FOREIGN KEY (booking_id, rack_id)
    REFERENCES bookings (id, rack_id)
);

-- THE occupancy boundary: one active booking per (rack, side, unit).
CREATE UNIQUE INDEX booking_slots_active_uq
  ON booking_slots (rack_id, side, unit) WHERE released_at IS NULL;
