-- dcl:no-transaction
-- site_device_counts in stripes, step 2 of 3: the key (organization, site, stripe), built
-- without blocking the writers of devices (migration 0032 says why).
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS site_device_counts_stripe_uq
  ON site_device_counts (org_id, site_id, stripe);
