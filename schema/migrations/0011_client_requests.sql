-- The client request ledger (services/common/request_ledger.h): one row per client request id
-- that completed a write, so that a retry after a lost reply gets the first answer instead of
-- doing the write twice.
--
-- The row is claimed first thing in the write's own transaction and completed with the
-- serialized response at its end, in the same transaction: a committed row always carries the
-- answer (client_requests_completed, a deferred check at commit), and a write that fails rolls
-- its claim back with it. The primary key is the arbiter: a second call with the same id waits
-- on it until the first commits, then reads the stored answer.
--
-- Enforced here: one row per (organization, request id) — ids are scoped per organization, and
-- an id belongs to one RPC with one set of parameters (compared by code: rpc, params_sha256).
-- Retention: rows older than the sweeper's --request_retention_hours (default 168 = 7 days) are
-- deleted by the sweeper in batches; a retry after that runs the write again.
CREATE TABLE client_requests (
  org_id        uuid NOT NULL CONSTRAINT client_requests_org_fk REFERENCES organizations (id),
  request_id    text NOT NULL CONSTRAINT client_requests_request_id_valid
                  CHECK (request_id <> '' AND octet_length(request_id) <= 36),
  -- The RPC's full name, "/dcl.v1.InventoryService/CreateSite".
  rpc           text NOT NULL CONSTRAINT client_requests_rpc_nonempty CHECK (rpc <> ''),
  -- SHA-256 of the request's deterministic serialization with request_id cleared.
  params_sha256 bytea NOT NULL CONSTRAINT client_requests_digest_length
                  CHECK (length(params_sha256) = 32),
  -- The serialized response message; NULL only between claim and completion, inside the
  -- claiming transaction.
  response      bytea,
  created_at    timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT client_requests_pk PRIMARY KEY (org_id, request_id)
);
-- The sweeper's retention scan.
CREATE INDEX client_requests_created_idx ON client_requests (created_at);

CREATE FUNCTION client_requests_require_response() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM client_requests
             WHERE org_id = NEW.org_id AND request_id = NEW.request_id AND response IS NULL) THEN
    RAISE EXCEPTION 'client request % was claimed but never completed', NEW.request_id
      USING ERRCODE = 'not_null_violation', CONSTRAINT = 'client_requests_completed';
  END IF;
  RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER client_requests_completed AFTER INSERT OR UPDATE ON client_requests
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION client_requests_require_response();
