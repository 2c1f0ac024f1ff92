-- Tells the servers' token caches that a fact of authentication changed, as part of its commit.
--
-- A server may keep the principals of the tokens it has seen in memory (services/common/
-- token_cache.h), sparing every call the token's SELECT. A revocation must still be refused on
-- the very next call, so every statement that can change what a token resolves to (its
-- revocation, role or subject, its deletion; the datacenter module's switch, globally or for an
-- organization) notifies the channel dcl_auth_changed. PostgreSQL delivers a notification only
-- when its transaction commits, and to every session listening at that moment.
--
-- The payload is the changing transaction's id, the same for all its statements (PostgreSQL
-- folds identical notifications of one transaction into one). A cache drops everything it holds
-- and answers on dcl_auth_ack with that payload; the writer (ChangeAuthFacts, token_cache.h)
-- waits after its commit until every listening cache has answered, so that when the writer
-- returns, no server still holds the old fact.
--
-- Enforced here (schema): no change to these three tables commits without the notification.
-- Enforced by the code path: the caches' dropping and answering, the writer's wait.

CREATE FUNCTION dcl_notify_auth_change() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM pg_notify('dcl_auth_changed', txid_current()::text);
  RETURN NULL;
END
$$;

-- Statement triggers: one notification per statement however many rows it touched (none
-- included: a notification too many costs a cache refill, one too few a stale principal).
-- INSERT into api_tokens is left out: a new token was in no cache.
CREATE TRIGGER api_tokens_auth_changed
  AFTER UPDATE OR DELETE OR TRUNCATE ON api_tokens
  FOR EACH STATEMENT EXECUTE FUNCTION dcl_notify_auth_change();

CREATE TRIGGER feature_settings_auth_changed
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON feature_settings
  FOR EACH STATEMENT EXECUTE FUNCTION dcl_notify_auth_change();

CREATE TRIGGER organization_feature_settings_auth_changed
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON organization_feature_settings
  FOR EACH STATEMENT EXECUTE FUNCTION dcl_notify_auth_change();
