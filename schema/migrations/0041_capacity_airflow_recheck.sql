-- A device's airflow is a rule of every rack with an airflow it stands in (0038: a device booking
-- whose device opposes the rack's airflow, or has no single airflow, is refused), but a booking
-- does not fix the airflow as it fixes its power and weight figures (0039): until now the airflow
-- of a placed device could be changed to one that opposes its rack, or forgotten, and nothing
-- said no. Now the change is judged as the device's active bookings (placement, move hold) would
-- be judged if they were made now, under the same constraint names, so the inventory's refusal
-- reads like the booking's (AIRFLOW_MISMATCH, AIRFLOW_UNKNOWN).
--
-- Enforced here (schema), whatever path writes the device: devices_recheck_airflow. Against a
-- booking written at the same instant it relies on the booking's writer holding the device FOR
-- KEY SHARE before it reads the device, as the booking write path does (a writer that goes around
-- it and reads the device unlocked may judge the old airflow). Enforced by the code path
-- (services/inventory/inventory_store.cc): the readable refusal naming the device and the rack. The power port count is not rechecked: a booking counts the ports it was made
-- with (bookings.power_ports, fixed by 0039), so a changed count applies at the device's next
-- booking and no budget row goes wrong meanwhile.

-- Whether `device_airflow` may stand in a rack whose airflow is `rack_airflow`: NULL when it may,
-- else the name of the rule that refuses it (0038's words: unknown or mixed is never a match;
-- only a flow against the rack's is a mismatch, a sideways one is not).
CREATE FUNCTION dcl_airflow_refusal(rack_airflow text, device_airflow text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN rack_airflow IS NULL THEN NULL
    WHEN device_airflow IS NULL OR device_airflow = 'mixed' THEN 'bookings_airflow_known'
    WHEN (rack_airflow = 'front-to-rear' AND device_airflow IN ('rear-to-front', 'rear-to-side'))
      OR (rack_airflow = 'rear-to-front' AND device_airflow IN ('front-to-rear', 'side-to-rear'))
      THEN 'bookings_airflow_matches'
  END
$$;

CREATE FUNCTION dcl_devices_recheck_airflow() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_rule text;
  v_rack racks;
BEGIN
  -- The UPDATE holds the device FOR NO KEY UPDATE, which a booking's FOR KEY SHARE on the device
  -- (the write path takes it before reading the device's figures: booking_store.cc, Prepare)
  -- does not wait for. FOR UPDATE does: a booking of this device being written now commits
  -- first and is judged below, or waits for this change and reads the new airflow.
  PERFORM 1 FROM devices WHERE id = NEW.id FOR UPDATE;
  FOR v_rack IN
    SELECT r.* FROM bookings b JOIN racks r ON r.id = b.rack_id
     WHERE b.device_id = NEW.id AND b.released_at IS NULL AND b.kind IN ('placement', 'move_hold')
       AND r.airflow IS NOT NULL
     ORDER BY r.id
  LOOP
    v_rule := dcl_airflow_refusal(v_rack.airflow, NEW.airflow);
    IF v_rule IS NOT NULL THEN
      RAISE EXCEPTION 'device % stands in rack % (airflow %): its airflow cannot become %',
        NEW.id, v_rack.id, v_rack.airflow, coalesce(NEW.airflow, 'unset')
        USING ERRCODE = 'check_violation', CONSTRAINT = v_rule;
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;

CREATE TRIGGER devices_recheck_airflow
  AFTER UPDATE OF airflow ON devices
  FOR EACH ROW WHEN (NEW.airflow IS DISTINCT FROM OLD.airflow)
  EXECUTE FUNCTION dcl_devices_recheck_airflow();
