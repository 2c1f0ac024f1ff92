-- What the sweeper reports to operators: one row per sweeper instance with the time of its last
-- complete sweep (every due row handled, as the database's clock saw it) and of its last failure.
-- A monitor alarms when max(last_success_at) is older than a few intervals: the sweeper is a
-- cleaner, not a guard (deadlines are enforced where they are used), so a stalled sweeper
-- shows as stock that stays unsellable, not as a wrong sale.
--   SELECT name, last_success_at, now() - last_success_at AS age FROM sweeper_status;
CREATE TABLE sweeper_status (
  name                       text PRIMARY KEY CONSTRAINT sweeper_status_name_nonempty CHECK (name <> ''),
  last_success_at            timestamptz,
  -- Figures of the last complete sweep.
  last_reservations_expired  bigint NOT NULL DEFAULT 0
                               CONSTRAINT sweeper_status_expired_nonnegative CHECK (last_reservations_expired >= 0),
  last_bookings_released     bigint NOT NULL DEFAULT 0
                               CONSTRAINT sweeper_status_released_nonnegative CHECK (last_bookings_released >= 0),
  last_duration_ms           bigint NOT NULL DEFAULT 0
                               CONSTRAINT sweeper_status_duration_nonnegative CHECK (last_duration_ms >= 0),
  -- The last failed sweep (no driver text: a status code and a generic message).
  last_failure_at            timestamptz,
  last_error                 text,
  updated_at                 timestamptz NOT NULL DEFAULT now()
);
