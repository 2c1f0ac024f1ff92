-- The move event log is append-only like location_history (issue 13): WatchMove replays it and
-- it is the record of who moved what when, so the database refuses UPDATE, DELETE and TRUNCATE.
-- A mistake in the past is corrected by what comes after it, never by rewriting it.
CREATE FUNCTION move_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'move_events is append-only: % refused', TG_OP
    USING ERRCODE = 'restrict_violation', CONSTRAINT = 'move_events_append_only';
END
$$;
CREATE TRIGGER move_events_no_update_delete BEFORE UPDATE OR DELETE ON move_events
  FOR EACH ROW EXECUTE FUNCTION move_events_append_only();
CREATE TRIGGER move_events_no_truncate BEFORE TRUNCATE ON move_events
  FOR EACH STATEMENT EXECUTE FUNCTION move_events_append_only();

-- Corrections of location history (CorrectLocation): a correction is the row with event
-- 'correction' and the id of the row it corrects, and only that; it never corrects itself.
-- That it corrects an original row, not another correction, is the code's rule
-- (services/moves: the newest correction of a row is what holds).
ALTER TABLE location_history
  ADD CONSTRAINT location_history_correction_consistent
    CHECK ((event = 'correction') = (corrects_id IS NOT NULL)),
  ADD CONSTRAINT location_history_correction_not_self CHECK (corrects_id <> id);
-- ListLocationHistory reads the corrections of a page of rows.
CREATE INDEX location_history_corrects_idx ON location_history (corrects_id)
  WHERE corrects_id IS NOT NULL;
