-- A device is 'moving' from the moment its move holds a destination until the move ends (issue
-- 13): a machine whose new place is already held is not for sale. Moves opened before this rule
-- made the device 'moving' only at in_progress; their devices get the state they would have had.
-- The state before the move stays frozen in each move's preflight and returns when it ends.
UPDATE devices d SET process_state = 'moving'
  FROM moves m
 WHERE m.device_id = d.id
   AND m.state NOT IN ('completed', 'cancelled', 'failed')
   AND d.process_state IN ('normal', 'staging');
