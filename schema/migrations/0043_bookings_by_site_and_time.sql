-- dcl:no-transaction
-- The site's bookings made or released in a window, for GetSiteCapacity's forecast and the
-- sweeper's capacity gauges (services/occupancy/site_capacity_store.cc): without these every
-- read scanned the whole booking history, which only grows. Built without blocking the writers
-- of bookings.
CREATE INDEX CONCURRENTLY IF NOT EXISTS bookings_site_created_idx
  ON bookings (site_id, created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS bookings_site_released_idx
  ON bookings (site_id, released_at) WHERE released_at IS NOT NULL;
