-- Reservations of dedicated machines, services, and the bindings of services to machines.
--
-- Enforced here (no code path can get around it):
--   * a device has at most one hold: reservations_device_held_uq, a partial unique index on the
--     device limited to state = 'held' (the arbiter between concurrent orders);
--   * an order's key is unique per organization: reservations_org_key_uq;
--   * a reservation's end is consistent with its state: reservations_end_consistent;
--   * a service is on at most one machine, a machine serves at most one service (active rows):
--     service_bindings_service_active_uq, service_bindings_device_active_uq.
-- Enforced by code (a CHECK cannot read another table): a binding points to a dedicated service
-- (the one function that writes bindings, services/reservation/reservation_store.cc); a
-- reservation's device belongs to the reservation's organization (the candidate queries are
-- scoped by organization).

-- Which reservation states hold a device. Only 'held'. This is the documentation of the
-- arbiter's predicate in data form, checked against the index predicate by a test
-- (tests/reservation/reservation_schema_test.cc); it is deliberately not a boolean column next
-- to the state, which would be a second truth that is right only while every writer remembers.
CREATE TABLE reservation_holding_states (
  state text PRIMARY KEY CONSTRAINT reservation_holding_states_state_valid
    CHECK (state IN ('held', 'converted', 'expired', 'cancelled'))
);
INSERT INTO reservation_holding_states (state) VALUES ('held');

CREATE TABLE services (
  id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id     uuid NOT NULL CONSTRAINT services_org_fk REFERENCES organizations (id),
  kind       text NOT NULL CONSTRAINT services_kind_valid CHECK (kind IN ('dedicated', 'vps')),
  customer   text NOT NULL CONSTRAINT services_customer_nonempty CHECK (customer <> ''),
  created_at timestamptz NOT NULL DEFAULT now(),
  created_by text NOT NULL DEFAULT '',
  CONSTRAINT services_id_org_uq UNIQUE (id, org_id)
);

CREATE TABLE reservations (
  id                        uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id                    uuid NOT NULL CONSTRAINT reservations_org_fk REFERENCES organizations (id),
  idempotency_key           text NOT NULL CONSTRAINT reservations_key_valid
                              CHECK (idempotency_key <> '' AND length(idempotency_key) <= 200),
  device_id                 uuid NOT NULL CONSTRAINT reservations_device_fk REFERENCES devices (id),
  state                     text NOT NULL DEFAULT 'held' CONSTRAINT reservations_state_valid
                              CHECK (state IN ('held', 'converted', 'expired', 'cancelled')),
  -- The criteria of the request, as asked ('' = any).
  criteria_site_id          uuid NOT NULL,
  criteria_vendor           text NOT NULL DEFAULT '',
  criteria_model            text NOT NULL DEFAULT '',
  criteria_hardware_profile text NOT NULL DEFAULT '',
  -- Why this device was chosen, frozen at the moment of the choice: the criteria and the
  -- device's facts then. A month later every device looks different; this row explains itself.
  selection_reason          jsonb NOT NULL,
  created_at                timestamptz NOT NULL DEFAULT now(),
  created_by                text NOT NULL DEFAULT '',
  expires_at                timestamptz NOT NULL,
  ended_at                  timestamptz,
  -- converted | cancelled (by a caller, never automatically) | expired_by_sweeper |
  -- expired_at_conversion (Convert found the deadline passed).
  end_reason                text CONSTRAINT reservations_end_reason_valid
                              CHECK (end_reason IN ('converted', 'cancelled', 'expired_by_sweeper',
                                                    'expired_at_conversion')),
  ended_by                  text,
  end_note                  text,
  service_id                uuid,
  CONSTRAINT reservations_org_key_uq UNIQUE (org_id, idempotency_key),
  CONSTRAINT reservations_expiry_after_creation CHECK (expires_at > created_at),
  CONSTRAINT reservations_service_fk FOREIGN KEY (service_id, org_id) REFERENCES services (id, org_id),
  CONSTRAINT reservations_end_consistent CHECK (
    (state = 'held' AND ended_at IS NULL AND end_reason IS NULL) OR
    (state = 'converted' AND ended_at IS NOT NULL AND end_reason = 'converted'
       AND service_id IS NOT NULL) OR
    (state = 'cancelled' AND ended_at IS NOT NULL AND end_reason = 'cancelled'
       AND ended_by IS NOT NULL) OR
    (state = 'expired' AND ended_at IS NOT NULL
       AND end_reason IN ('expired_by_sweeper', 'expired_at_conversion')))
);

-- The arbiter: two orders never hold the same machine. The predicate must name exactly the
-- states in reservation_holding_states (a test checks it).
CREATE UNIQUE INDEX reservations_device_held_uq ON reservations (device_id) WHERE state = 'held';
-- Listing and paging per organization, newest first.
CREATE INDEX reservations_org_created_idx ON reservations (org_id, created_at DESC, id DESC);
-- The sweeper's scan of lapsed holds.
CREATE INDEX reservations_held_expiry_idx ON reservations (expires_at) WHERE state = 'held';
-- Lookups of a device's history.
CREATE INDEX reservations_device_idx ON reservations (device_id);

-- Rows are history: ended_at NULL = active.
CREATE TABLE service_bindings (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id         uuid NOT NULL,
  service_id     uuid NOT NULL,
  device_id      uuid NOT NULL CONSTRAINT service_bindings_device_fk REFERENCES devices (id),
  reservation_id uuid CONSTRAINT service_bindings_reservation_fk REFERENCES reservations (id),
  started_at     timestamptz NOT NULL DEFAULT now(),
  started_by     text NOT NULL DEFAULT '',
  ended_at       timestamptz,
  ended_by       text,
  CONSTRAINT service_bindings_service_fk FOREIGN KEY (service_id, org_id)
    REFERENCES services (id, org_id),
  CONSTRAINT service_bindings_interval_valid CHECK (ended_at IS NULL OR ended_at >= started_at)
);
-- A service is on at most one machine; a machine is given to at most one service.
CREATE UNIQUE INDEX service_bindings_service_active_uq ON service_bindings (service_id)
  WHERE ended_at IS NULL;
CREATE UNIQUE INDEX service_bindings_device_active_uq ON service_bindings (device_id)
  WHERE ended_at IS NULL;
CREATE INDEX service_bindings_reservation_idx ON service_bindings (reservation_id);

-- Reserve walks a site's devices in id order from a random start (so concurrent orders spread
-- and the walk does not scan sold machines from the beginning each time).
CREATE INDEX devices_site_id_order_idx ON devices (site_id, id);
