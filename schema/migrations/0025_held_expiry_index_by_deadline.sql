-- The sweeper's index of held reservations by deadline serves only statements that bound the
-- deadline: its predicate now also says `expires_at IS NOT NULL`, which a statement implies only
-- through a condition on expires_at (the sweeper's `expires_at < now()` does; nothing else
-- changes for it, expires_at is NOT NULL anyway).
--
-- Why: "is this device held?" (dcl_reserve's candidate step, `h.device_id = d.id AND h.state =
-- 'held'`) matched this index's old predicate `state = 'held'` as well as the arbiter's
-- reservations_device_held_uq. dcl_reserve plans its statements once per connection (generic
-- plans), and with statistics from before the first hold (a fresh installation until
-- autovacuum's first ANALYZE of reservations) and a few hundred holds, the two indexes cost the
-- same to the planner and the deadline index won: every candidate then read every held
-- reservation and filtered by device. The plan stayed for the connection's life, so each
-- Reserve cost more than the one before (benchmark, auto_explain: one candidate step 2 ms and
-- 1,700 buffers with 900 holds, against 13 buffers by device). Now the probe has one index.
-- tests/reservation/reserve_function_test holds the plan to it.
DROP INDEX reservations_held_expiry_idx;
CREATE INDEX reservations_held_expiry_idx ON reservations (expires_at)
  WHERE state = 'held' AND expires_at IS NOT NULL;
