-- The services connect as a role that owns nothing: members of the group role dcl_app. The
-- migrating role owns every table, so only it (or a superuser) can switch off a trigger — the
-- append-only rule of location_history and move_events is out of the services' reach. What
-- dcl_app may do:
--   every table: SELECT, INSERT, UPDATE, DELETE (tables created by later migrations too);
--   location_history, move_events: SELECT and INSERT only (the triggers refuse the rest anyway);
--   schema_migrations: SELECT only (the migrator writes it).
-- Creating dcl_app needs CREATEROLE; where the migrating role lacks it, an administrator
-- creates the role (CREATE ROLE dcl_app NOLOGIN) before the first migration. The services' own
-- login role is a member: CREATE ROLE dcl_service LOGIN IN ROLE dcl_app (deploy/local/up and
-- tests/run do this; README "Operating dcl" says how elsewhere).
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'dcl_app') THEN
    CREATE ROLE dcl_app NOLOGIN;
  END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO dcl_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO dcl_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO dcl_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO dcl_app;
REVOKE UPDATE, DELETE, TRUNCATE ON location_history, move_events FROM dcl_app;
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON schema_migrations FROM dcl_app;

-- Objects the migrating role creates from now on.
ALTER DEFAULT PRIVILEGES IN SCHEMA public
  GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO dcl_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO dcl_app;
