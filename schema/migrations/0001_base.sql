-- Base tables: organizations, sites, racks, devices, feature settings, API tokens.
-- Every rule that can be a constraint is one, and named, so code can refer to it by name.

CREATE TABLE organizations (
  id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name       text NOT NULL CONSTRAINT organizations_name_nonempty CHECK (name <> ''),
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT organizations_name_uq UNIQUE (name)
);

CREATE TABLE sites (
  id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id     uuid NOT NULL CONSTRAINT sites_org_fk REFERENCES organizations (id),
  name       text NOT NULL CONSTRAINT sites_name_nonempty CHECK (name <> ''),
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT sites_org_name_uq UNIQUE (org_id, name),
  -- Lets child tables prove with a composite FK that they belong to the site's organization.
  CONSTRAINT sites_id_org_uq UNIQUE (id, org_id)
);

-- Geometry is per rack: racks do not all start at unit 1, do not all count upward, and an
-- open frame has no rear.
CREATE TABLE racks (
  id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id             uuid NOT NULL,
  site_id            uuid NOT NULL,
  name               text NOT NULL CONSTRAINT racks_name_nonempty CHECK (name <> ''),
  first_unit         integer NOT NULL CONSTRAINT racks_first_unit_nonnegative CHECK (first_unit >= 0),
  unit_count         integer NOT NULL CONSTRAINT racks_unit_count_positive CHECK (unit_count BETWEEN 1 AND 100),
  numbering          text NOT NULL CONSTRAINT racks_numbering_valid
                       CHECK (numbering IN ('ascending', 'descending')),
  has_rear           boolean NOT NULL,
  -- NULL = no budget known; never read as "unlimited".
  power_budget_watts integer CONSTRAINT racks_power_budget_positive CHECK (power_budget_watts > 0),
  weight_budget_kg   integer CONSTRAINT racks_weight_budget_positive CHECK (weight_budget_kg > 0),
  created_at         timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT racks_site_fk FOREIGN KEY (site_id, org_id) REFERENCES sites (id, org_id),
  CONSTRAINT racks_site_name_uq UNIQUE (site_id, name),
  CONSTRAINT racks_id_site_uq UNIQUE (id, site_id)
);

CREATE TABLE devices (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id           uuid NOT NULL,
  site_id          uuid NOT NULL,
  vendor           text NOT NULL CONSTRAINT devices_vendor_nonempty CHECK (vendor <> ''),
  model            text NOT NULL CONSTRAINT devices_model_nonempty CHECK (model <> ''),
  hardware_profile text NOT NULL DEFAULT '',
  serial           text,
  height_units     integer NOT NULL CONSTRAINT devices_height_positive CHECK (height_units BETWEEN 1 AND 20),
  depth_class      text NOT NULL CONSTRAINT devices_depth_class_valid
                     CHECK (depth_class IN ('full', 'half', 'unknown')),
  -- normal: in service or ready; staging: not ready yet; moving: being moved inside this
  -- datacenter with space held at the destination; in_transit: between sites, nowhere.
  process_state    text NOT NULL DEFAULT 'normal' CONSTRAINT devices_process_state_valid
                     CHECK (process_state IN ('normal', 'staging', 'moving', 'in_transit')),
  -- NULL = unknown, and unknown is treated like the expensive case by every capacity reader.
  power_draw_watts integer CONSTRAINT devices_power_nonnegative CHECK (power_draw_watts >= 0),
  weight_kg        integer CONSTRAINT devices_weight_nonnegative CHECK (weight_kg >= 0),
  created_at       timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT devices_site_fk FOREIGN KEY (site_id, org_id) REFERENCES sites (id, org_id)
);
CREATE INDEX devices_site_idx ON devices (site_id, vendor, model);

-- The rollout switch of the datacenter module: a global row, and a per-organization setting on
-- top. The module is on for an organization only when both are on.
CREATE TABLE feature_settings (
  feature    text PRIMARY KEY,
  enabled    boolean NOT NULL DEFAULT false,
  updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO feature_settings (feature, enabled) VALUES ('datacenter', false);

CREATE TABLE organization_feature_settings (
  org_id     uuid NOT NULL CONSTRAINT org_features_org_fk REFERENCES organizations (id),
  feature    text NOT NULL CONSTRAINT org_features_feature_fk REFERENCES feature_settings (feature),
  enabled    boolean NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, feature)
);

-- API tokens, stored only as SHA-256 digests. A token belongs to one organization and one role.
CREATE TABLE api_tokens (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id       uuid NOT NULL CONSTRAINT api_tokens_org_fk REFERENCES organizations (id),
  role         text NOT NULL CONSTRAINT api_tokens_role_valid
                 CHECK (role IN ('commerce', 'dc-operator', 'customer', 'admin')),
  -- For role customer: the customer the token speaks for (services.customer).
  subject      text NOT NULL DEFAULT '',
  label        text NOT NULL DEFAULT '',
  token_sha256 bytea NOT NULL CONSTRAINT api_tokens_digest_length CHECK (length(token_sha256) = 32),
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz,
  CONSTRAINT api_tokens_digest_uq UNIQUE (token_sha256)
);

-- Runs one statement inside its own subtransaction (a plpgsql exception block is a savepoint)
-- and reports an integrity violation by the *name* of the violated constraint, read from the
-- error's CONSTRAINT_NAME field. The client library exposes only SQLSTATE and message text, and
-- message text is translated by lc_messages; the field is not. The outer transaction survives.
-- The statement receives its arguments as one text array ($1[1], $1[2], ...) and returns one
-- column (INSERT/UPDATE ... RETURNING x): EXECUTE ... INTO refuses a statement returning nothing.
CREATE FUNCTION dcl_guarded_exec(
  stmt text, args text[],
  OUT returned text, OUT affected bigint, OUT violated_constraint text, OUT violated_sqlstate text)
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE stmt INTO returned USING args;
  GET DIAGNOSTICS affected = ROW_COUNT;
EXCEPTION WHEN integrity_constraint_violation THEN
  GET STACKED DIAGNOSTICS violated_constraint = CONSTRAINT_NAME,
                          violated_sqlstate = RETURNED_SQLSTATE;
  affected := 0;
END
$$;
