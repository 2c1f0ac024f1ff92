-- A refused Reserve is one round trip: the refusal's explanation comes back with the outcome.
--
-- Until now a Reserve that found nothing to hold (outcome no_candidate or walk_limit) sent a
-- second statement on the same connection, dcl_exclusion_summary(org, site, max_listed), whose
-- rows the server classifies (Classify, services/reservation/eligibility.h) into NO_CAPACITY
-- with its listed devices or CONTENDED when eligible machines exist. dcl_reserve_call() is
-- dcl_reserve_within_deadline() (migration 0030: the caller's deadline checked and set, then
-- dcl_reserve) plus, for those two outcomes only, dcl_exclusion_summary's rows in the same
-- statement, as the jsonb array `exclusions` (NULL for every other outcome; '[]' for an
-- organization without devices). The server decodes the array in its own query
-- (services/reservation/reservation_store.cc, ReserveInDatabase).
--
-- A function of its own, not a change of dcl_reserve_within_deadline: servers of the previous
-- release call that one, with its signature, until a rolling upgrade has replaced them all.
--
-- What moves: the summary now runs inside the Reserve's transaction, after the walk, instead of
-- in the autocommit statement after it. Its statements take a fresh snapshot (dcl_reserve_call is
-- volatile, the summary stable), so it sees what a second statement right after would have
-- seen. The transaction's locks last until the summary is read: the key's advisory lock (only a
-- retry of the same order waits on it) and the row locks of candidates whose hold lost to
-- another order's (SKIP LOCKED by every other walk, which could not have taken them either).
-- A refusal inserts nothing, so the deadline trigger of migration 0030 has nothing to check.
--
-- The settings are dcl_reserve's and dcl_exclusion_summary's (migration 0031): the statements
-- planned here read only those functions, and stay without JIT and with one generic plan.
CREATE FUNCTION dcl_reserve_call(
  p_org uuid, p_key text, p_site uuid, p_vendor text, p_model text, p_profile text,
  p_walk_start uuid, p_ttl_seconds integer, p_actor text,
  p_max_candidates integer, p_max_attempts integer, p_max_rows integer,
  p_call_deadline timestamptz, p_max_listed integer,
  OUT outcome text, OUT candidates_examined integer, OUT lost_races integer,
  OUT rows_visited integer, OUT reservation reservations, OUT exclusions jsonb)
LANGUAGE plpgsql
SET jit = off
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
DECLARE
  v_result record;
BEGIN
  SELECT * INTO v_result
    FROM dcl_reserve_within_deadline(p_org, p_key, p_site, p_vendor, p_model, p_profile,
                                     p_walk_start, p_ttl_seconds, p_actor, p_max_candidates,
                                     p_max_attempts, p_max_rows, p_call_deadline);
  outcome := v_result.outcome;
  candidates_examined := v_result.candidates_examined;
  lost_races := v_result.lost_races;
  rows_visited := v_result.rows_visited;
  reservation := v_result.reservation;
  IF outcome IN ('no_candidate', 'walk_limit') THEN
    -- In the summary's own order: the server lists excluded devices in it, up to p_max_listed.
    SELECT coalesce(jsonb_agg(to_jsonb(s) ORDER BY s.ordinality), '[]'::jsonb) INTO exclusions
      FROM dcl_exclusion_summary(p_org, p_site, p_max_listed) WITH ORDINALITY AS s;
  END IF;
END
$$;
