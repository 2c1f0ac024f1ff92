-- The caller's deadline, enforced where a write commits: inside PostgreSQL, at COMMIT.
--
-- The 30-minute fault history found a Reserve committed after its caller had given up: the
-- server replica was SIGSTOPped for 6 s, the caller's 5 s deadline passed, its retry with the
-- same key was answered NO_CAPACITY, and the resumed replica then made the hold of the first
-- call (docs/operations.md, order-15-633). A pause stops the dcl server, not PostgreSQL, and a
-- check in the server before COMMIT leaves a window between the check and the commit; the
-- database is the arbiter, so it refuses the commit itself.
--
-- The deadline of the call a transaction serves travels as the transaction-local setting
-- dcl.call_deadline: microseconds since the Unix epoch in decimal, absent or '' for no deadline.
-- It is set with set_config(..., true), so it ends with the transaction (and stays with it
-- behind a transaction-pooling PgBouncer); a transaction that never sets it behaves exactly as
-- before. Set by:
--   * dcl_reserve_within_deadline(), the Reserve path (below);
--   * the request ledger's claim (services/common/request_ledger.cc), the first statement of
--     every write that carries a client request id.
--
-- Enforced here (schema): a hold (reservations) and a ledger claim (client_requests) inserted
-- under a deadline commit only while clock_timestamp() is not past it. The constraint triggers
-- are DEFERRABLE INITIALLY DEFERRED, so they run at COMMIT, after every lock wait of the
-- transaction; a pause of the dcl server between its last statement and COMMIT only makes the
-- check later. The refusal is SQLSTATE DC001 with constraint name dcl_call_deadline, mapped by
-- its SQLSTATE (services/common/db_errors.cc) to DEADLINE_EXCEEDED CALLER_DEADLINE_PASSED, and
-- the transaction rolls back: no hold, no ledger row, so a same-key retry runs afresh.
--
-- Clocks: the deadline is computed on the dcl server's clock (gRPC's deadline as the server
-- received it) and compared with the database's clock, so the two are assumed in step (NTP),
-- as they already are for a hold's expiry, which Convert and the sweeper judge by the database
-- clock. A server clock ahead of the database's only makes the check late by the difference.
CREATE FUNCTION dcl_call_deadline() RETURNS timestamptz
LANGUAGE sql STABLE
AS $$
  SELECT 'epoch'::timestamptz
         + nullif(current_setting('dcl.call_deadline', true), '')::bigint
           * interval '1 microsecond'
$$;

CREATE FUNCTION dcl_refuse_after_call_deadline() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
  v_deadline timestamptz := dcl_call_deadline();
BEGIN
  IF v_deadline IS NOT NULL AND clock_timestamp() > v_deadline THEN
    RAISE EXCEPTION 'the caller''s deadline (%) passed before the commit', v_deadline
      USING ERRCODE = 'DC001', CONSTRAINT = 'dcl_call_deadline';
  END IF;
  RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER reservations_call_deadline AFTER INSERT ON reservations
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION dcl_refuse_after_call_deadline();

CREATE CONSTRAINT TRIGGER client_requests_call_deadline AFTER INSERT ON client_requests
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION dcl_refuse_after_call_deadline();

-- Reserve under its caller's deadline: dcl_reserve() of migration 0020 (unchanged, and still
-- what a caller without a deadline may call) behind two checks. A name of its own rather than an
-- overload, so that dcl_reserve names one function (the plan tests read its source by name). A call that reaches the
-- database after its deadline does no work at all: refused before the key's advisory lock and
-- the walk. Otherwise the deadline is set for the statement's transaction, and a hold that is
-- ready only after it (a wait on the key's lock, a slow walk) is refused at COMMIT by
-- reservations_call_deadline. p_call_deadline NULL: no deadline, exactly dcl_reserve().
CREATE FUNCTION dcl_reserve_within_deadline(
  p_org uuid, p_key text, p_site uuid, p_vendor text, p_model text, p_profile text,
  p_walk_start uuid, p_ttl_seconds integer, p_actor text,
  p_max_candidates integer, p_max_attempts integer, p_max_rows integer,
  p_call_deadline timestamptz,
  OUT outcome text, OUT candidates_examined integer, OUT lost_races integer,
  OUT rows_visited integer, OUT reservation reservations)
LANGUAGE plpgsql
AS $$
DECLARE
  v_result record;
BEGIN
  IF p_call_deadline IS NOT NULL THEN
    IF clock_timestamp() > p_call_deadline THEN
      RAISE EXCEPTION 'the caller''s deadline (%) passed before the reservation began',
        p_call_deadline
        USING ERRCODE = 'DC001', CONSTRAINT = 'dcl_call_deadline';
    END IF;
    PERFORM set_config('dcl.call_deadline',
                       ((extract(epoch FROM p_call_deadline) * 1000000)::bigint)::text, true);
  END IF;
  SELECT * INTO v_result
    FROM dcl_reserve(p_org, p_key, p_site, p_vendor, p_model, p_profile, p_walk_start,
                     p_ttl_seconds, p_actor, p_max_candidates, p_max_attempts, p_max_rows);
  outcome := v_result.outcome;
  candidates_examined := v_result.candidates_examined;
  lost_races := v_result.lost_races;
  rows_visited := v_result.rows_visited;
  reservation := v_result.reservation;
END
$$;
