-- Moves of a server from one rack position to another inside one site, the background jobs
-- they report progress through, the append-only location history, and the event log that
-- WatchMove streams (announced with NOTIFY in the transaction that records the change).
--
-- Enforced here: one site per move (CHECK), at most one open move per device (partial unique
-- index), the nine state names, a job purge never erasing a move (ON DELETE SET NULL), and an
-- append-only location history (trigger). Enforced by code (services/moves): which transitions
-- are valid (move_state.h), and that slot rows are written only through the occupancy booking
-- write path (a move hold at the destination, promoted into the placement on completion).

-- Background operations with a progress bar; purged after 90 days by retention.
CREATE TABLE jobs (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id      uuid NOT NULL CONSTRAINT jobs_org_fk REFERENCES organizations (id),
  kind        text NOT NULL CONSTRAINT jobs_kind_nonempty CHECK (kind <> ''),
  status      text NOT NULL DEFAULT 'running'
                CONSTRAINT jobs_status_valid CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled')),
  detail      text NOT NULL DEFAULT '',
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  CONSTRAINT jobs_finished_when_done CHECK ((status = 'running') = (finished_at IS NULL))
);
-- The retention purge: DELETE FROM jobs WHERE created_at < now() - interval '90 days'.
CREATE INDEX jobs_created_idx ON jobs (created_at);

CREATE TABLE moves (
  id                     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id                 uuid NOT NULL,
  device_id              uuid NOT NULL CONSTRAINT moves_device_fk REFERENCES devices (id),
  -- Both sites are stored so that the CHECK below can compare them: a move happens inside one
  -- building; travelling between sites is another process (device process state in_transit).
  source_site_id         uuid NOT NULL,
  source_rack_id         uuid NOT NULL,
  source_booking_id      uuid NOT NULL CONSTRAINT moves_source_booking_fk REFERENCES bookings (id),
  destination_site_id    uuid NOT NULL,
  destination_rack_id    uuid NOT NULL,
  destination_side       text NOT NULL
                           CONSTRAINT moves_destination_side_valid CHECK (destination_side IN ('front', 'rear')),
  -- The device's lowest rack unit at the destination, as PlaceDevice takes it; the exact slots
  -- are the move hold's slot rows.
  destination_unit       integer NOT NULL,
  -- The move hold at the destination; on completion the same booking becomes the placement.
  -- Written right after the move row (the move is inserted first so that its own constraints,
  -- the site CHECK and the open-move index, decide before any slot is claimed); the deferred
  -- constraint trigger moves_move_hold_required refuses a commit that leaves it NULL.
  move_hold_booking_id   uuid CONSTRAINT moves_move_hold_booking_fk REFERENCES bookings (id),
  state                  text NOT NULL CONSTRAINT moves_state_valid CHECK (state IN (
                           'draft', 'planned', 'approved', 'in_progress', 'awaiting_verification',
                           'needs_reconcile', 'completed', 'cancelled', 'failed')),
  -- Frozen at start: the device's process state before the move (restored on failed/cancelled),
  -- the source placement, and the checks that passed.
  preflight              jsonb NOT NULL CONSTRAINT moves_preflight_object CHECK (jsonb_typeof(preflight) = 'object'),
  -- A retention policy for progress bars must not erase where a machine went: SET NULL.
  job_id                 uuid CONSTRAINT moves_job_fk REFERENCES jobs (id) ON DELETE SET NULL,
  note                   text NOT NULL DEFAULT '',
  created_at             timestamptz NOT NULL DEFAULT now(),
  created_by             text NOT NULL,
  updated_at             timestamptz NOT NULL DEFAULT now(),
  updated_by             text NOT NULL,
  ended_at               timestamptz,
  CONSTRAINT moves_same_site CHECK (source_site_id = destination_site_id),
  CONSTRAINT moves_site_org_fk FOREIGN KEY (source_site_id, org_id) REFERENCES sites (id, org_id),
  CONSTRAINT moves_source_rack_fk FOREIGN KEY (source_rack_id, source_site_id)
    REFERENCES racks (id, site_id),
  CONSTRAINT moves_destination_rack_fk FOREIGN KEY (destination_rack_id, destination_site_id)
    REFERENCES racks (id, site_id),
  CONSTRAINT moves_ended_when_terminal
    CHECK ((state IN ('completed', 'cancelled', 'failed')) = (ended_at IS NOT NULL))
);
-- At most one open move per device: without it two people plan two destinations for one
-- machine and both screens look right.
CREATE UNIQUE INDEX moves_one_open_per_device ON moves (device_id)
  WHERE state NOT IN ('completed', 'cancelled', 'failed');

CREATE FUNCTION moves_require_move_hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM moves WHERE id = NEW.id AND move_hold_booking_id IS NULL) THEN
    RAISE EXCEPTION 'move % has no move hold at its destination', NEW.id
      USING ERRCODE = 'not_null_violation', CONSTRAINT = 'moves_move_hold_required';
  END IF;
  RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER moves_move_hold_required AFTER INSERT OR UPDATE ON moves
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION moves_require_move_hold();

CREATE INDEX moves_org_created_idx ON moves (org_id, created_at, id);
CREATE INDEX moves_job_idx ON moves (job_id);

-- Every state change of a move, numbered per move: what WatchMove streams and replays.
CREATE TABLE move_events (
  id          bigserial PRIMARY KEY,
  move_id     uuid NOT NULL CONSTRAINT move_events_move_fk REFERENCES moves (id),
  org_id      uuid NOT NULL,
  sequence    integer NOT NULL CONSTRAINT move_events_sequence_positive CHECK (sequence >= 1),
  from_state  text,  -- NULL for the event that creates the move
  to_state    text NOT NULL,
  observation text NOT NULL DEFAULT ''
                CONSTRAINT move_events_observation_valid
                CHECK (observation IN ('', 'found_at_destination', 'not_moved')),
  note        text NOT NULL DEFAULT '',
  actor       text NOT NULL,
  at          timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT move_events_move_sequence_uq UNIQUE (move_id, sequence)
);

-- Announces each event to listeners (LISTEN dcl_move_events) on commit of the very transaction
-- that recorded the change; a rolled-back change announces nothing. The payload is only a
-- pointer: watchers read the events table, so a missed or merged notification loses nothing.
CREATE FUNCTION move_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('dcl_move_events', NEW.move_id::text || ':' || NEW.sequence::text);
  RETURN NULL;
END
$$;
CREATE TRIGGER move_events_notify AFTER INSERT ON move_events
  FOR EACH ROW EXECUTE FUNCTION move_events_notify();

-- Where a device stood, over time. Append-only: the database refuses UPDATE, DELETE and
-- TRUNCATE; a correction is a new row pointing at the row it corrects. Site and rack ids carry
-- no foreign keys on purpose: a rack retired next year changes nothing about what stood in it
-- last March.
CREATE TABLE location_history (
  id           bigserial PRIMARY KEY,
  org_id       uuid NOT NULL,
  device_id    uuid NOT NULL,
  -- The device's recorded position after this event; all NULL = unknown (needs_reconcile).
  site_id      uuid,
  rack_id      uuid,
  side         text CONSTRAINT location_history_side_valid CHECK (side IN ('front', 'rear')),
  first_unit   integer,
  last_unit    integer,
  event        text NOT NULL CONSTRAINT location_history_event_nonempty CHECK (event <> ''),
  move_id      uuid,
  move_state   text,
  booking_id   uuid,
  corrects_id  bigint CONSTRAINT location_history_corrects_fk REFERENCES location_history (id),
  note         text NOT NULL DEFAULT '',
  actor        text NOT NULL,
  recorded_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX location_history_device_idx ON location_history (device_id, id);

CREATE FUNCTION location_history_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'location_history is append-only: % refused; record a correction as a new row', TG_OP
    USING ERRCODE = 'restrict_violation', CONSTRAINT = 'location_history_append_only';
END
$$;
CREATE TRIGGER location_history_no_update_delete BEFORE UPDATE OR DELETE ON location_history
  FOR EACH ROW EXECUTE FUNCTION location_history_append_only();
CREATE TRIGGER location_history_no_truncate BEFORE TRUNCATE ON location_history
  FOR EACH STATEMENT EXECUTE FUNCTION location_history_append_only();
