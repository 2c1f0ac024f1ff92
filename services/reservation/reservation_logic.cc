#include "services/reservation/reservation_logic.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/common/call_deadline.h"
#include "services/common/logging.h"
#include "services/common/page_token.h"
#include "services/common/request_ledger.h"
#include "services/common/status.h"
#include "services/common/validation.h"
#include "services/reservation/eligibility.h"
#include "services/reservation/reservation_store.h"
#include "services/reservation/service_location.h"

namespace dcl::reservation {

namespace {

// Ids compared as text (Classify, replays) in the database's spelling: lower case.
Criteria CriteriaOf(const v1::ReservationCriteria& c) {
  return Criteria{absl::AsciiStrToLower(c.site_id()), c.vendor(), c.model(), c.hardware_profile()};
}

absl::Status CheckCriteria(const v1::ReservationCriteria& c) {
  DCL_RETURN_IF_ERROR(CheckId("criteria.site_id", c.site_id()));
  DCL_RETURN_IF_ERROR(CheckText("criteria.vendor", c.vendor(), kMaxNameLength, false));
  DCL_RETURN_IF_ERROR(CheckText("criteria.model", c.model(), kMaxNameLength, false));
  return CheckText("criteria.hardware_profile", c.hardware_profile(), kMaxNameLength, false);
}

// How a request names a reservation.
struct Ref {
  bool by_id = true;
  std::string value;
  std::string Describe() const { return value; }
};

absl::StatusOr<Ref> ParseRef(const v1::ReservationRef& ref) {
  switch (ref.ref_case()) {
    case v1::ReservationRef::kReservationId: {
      DCL_RETURN_IF_ERROR(CheckId("reservation.reservation_id", ref.reservation_id()));
      return Ref{true, ref.reservation_id()};
    }
    case v1::ReservationRef::kIdempotencyKey: {
      DCL_RETURN_IF_ERROR(
          CheckText("reservation.idempotency_key", ref.idempotency_key(), kMaxKeyLength, true));
      return Ref{false, ref.idempotency_key()};
    }
    default:
      return InvalidInput("reservation", "is required (reservation_id or idempotency_key)");
  }
}

std::optional<ReservationRecord> Find(pqxx::work& tx, const std::string& org, const Ref& ref,
                                      bool lock) {
  return ref.by_id ? FindReservationById(tx, org, ref.value, lock)
                   : FindReservationByKey(tx, org, ref.value, lock);
}

absl::Status WrongState(const v1::Reservation& r, const std::string& wanted) {
  const std::string state = StateName(r.state());
  return Error(absl::StatusCode::kFailedPrecondition, v1::WRONG_STATE,
               absl::StrCat("the reservation is ", state, "; ", wanted))
      .Meta("reservation_id", r.id())
      .Meta("state", state);
}

absl::Status Contended(int examined, int attempts) {
  return Error(absl::StatusCode::kAborted, v1::CONTENDED,
               "eligible machines exist but other orders were faster; retry now")
      .Meta("candidates_examined", absl::StrCat(examined))
      .Meta("attempts", absl::StrCat(attempts));
}

absl::Status NoCapacity(const ExclusionSummary& summary) {
  Error error(absl::StatusCode::kFailedPrecondition, v1::NO_CAPACITY,
              "no machine matches the criteria and is free");
  for (size_t i = 0; i < kExclusionCount; ++i) {
    const auto exclusion = static_cast<Exclusion>(i);
    if (exclusion == Exclusion::kEligible || summary.counts[i] == 0) continue;
    v1::ExclusionCount* count = error.detail().add_exclusion_counts();
    count->set_reason(ExclusionName(exclusion));
    count->set_count(summary.counts[i]);
  }
  for (const auto& [device_id, exclusion] : summary.listed) {
    v1::ExcludedDevice* device = error.detail().add_excluded_devices();
    device->set_device_id(device_id);
    device->set_reason(ExclusionName(exclusion));
  }
  return error;
}

}  // namespace

absl::Status ValidateOptions(const ReservationOptions& o) {
  if (o.max_ttl_seconds <= 0) return absl::InvalidArgumentError("max TTL must be positive");
  if (o.default_ttl_seconds <= 0 || o.default_ttl_seconds > o.max_ttl_seconds) {
    return absl::InvalidArgumentError("default TTL must be positive and at most the max TTL");
  }
  if (o.max_attempts <= 0 || o.max_candidates <= 0 || o.max_rows_walked <= 0 ||
      o.max_listed_devices < 0) {
    return absl::InvalidArgumentError("attempt and candidate limits must be positive");
  }
  return absl::OkStatus();
}

ReservationLogic::ReservationLogic(DbPool& pool, ReservationOptions options)
    : pool_(pool), options_(options) {}

namespace {

// One Reserve call, validated, with its defaults applied (the walk's start is set by Reserve).
struct ReserveCall {
  std::string org;
  std::string key;
  std::string actor;
  Criteria criteria;
  int ttl_seconds = 0;
  std::string walk_start;
  WalkLimits limits;
  // The caller's deadline, enforced by the database (call_deadline.h); none outside an RPC.
  absl::Time deadline = absl::InfiniteFuture();
};

// Everything is checked before the database is asked, so a bad request writes nothing and names
// its field. The TTL's upper bound is the configured one, tighter than the gate's table.
absl::StatusOr<ReserveCall> ReadReserveRequest(const Principal& principal,
                                               const v1::ReserveRequest& request,
                                               const ReservationOptions& options) {
  DCL_RETURN_IF_ERROR(CheckText("idempotency_key", request.idempotency_key(), kMaxKeyLength, true));
  DCL_RETURN_IF_ERROR(CheckCriteria(request.criteria()));
  if (request.has_ttl_seconds() &&
      (request.ttl_seconds() <= 0 || request.ttl_seconds() > options.max_ttl_seconds)) {
    return InvalidInput(
        "ttl_seconds",
        absl::StrCat("must be between 1 and ", options.max_ttl_seconds, " (unset: the default)"));
  }
  ReserveCall call;
  call.org = principal.org_id;
  call.key = request.idempotency_key();
  call.actor = principal.Actor();
  call.criteria = CriteriaOf(request.criteria());
  call.ttl_seconds =
      request.has_ttl_seconds() ? request.ttl_seconds() : options.default_ttl_seconds;
  call.limits = WalkLimits{options.max_candidates, options.max_attempts, options.max_rows_walked};
  call.deadline = CallDeadlineOnThisThread();
  return call;
}

// One statement in autocommit: the key, the site, the walk, the lock and the hold, all inside
// dcl_reserve, and for a refusal its explanation (see reservation_store.h), so a refusal costs
// one round trip and one lease of the pool, like a hold. Calling it again after a broken
// connection is safe: the key replays a hold that did commit.
absl::StatusOr<ReserveOutcome> DecideInDatabase(DbPool& pool, const ReserveCall& call,
                                                int max_listed_devices) {
  return pool.AutocommitIdempotent([&](pqxx::nontransaction& tx) -> absl::StatusOr<ReserveOutcome> {
    return ReserveInDatabase(tx, call.org, call.key, call.criteria, call.walk_start,
                             call.ttl_seconds, call.actor, call.limits, max_listed_devices,
                             call.deadline);
  });
}

// A new hold, or the order's existing reservation whatever its state. The same key with other
// criteria is a client error, and nothing is written.
absl::Status AnswerWithReservation(const ReserveOutcome& outcome, const Criteria& criteria,
                                   v1::ReserveResponse* response) {
  if (!outcome.reservation) return Internal("reserve answered without a reservation");
  const v1::Reservation& reservation = outcome.reservation->proto;
  const bool replay = outcome.kind == ReserveOutcome::Kind::kReplay;
  if (replay && CriteriaOf(reservation.criteria()) != criteria) {
    return Error(absl::StatusCode::kFailedPrecondition, v1::IDEMPOTENCY_KEY_REUSED,
                 "this idempotency key was used with different criteria")
        .Meta("reservation_id", reservation.id());
  }
  *response->mutable_reservation() = reservation;
  response->set_replay(replay);
  if (!replay) {
    response->set_candidates_examined(outcome.candidates_examined);
    response->set_attempts(outcome.lost_races);
  }
  return absl::OkStatus();
}

// A refusal, explained by the classification of every device of the organization (read only
// for a refusal). Eligible machines that the walk could not take (locked by other orders, or
// beyond the walk's bound on a nearly sold-out site) mean "retry now"; none mean "buy more iron".
absl::Status ExplainRefusal(const ReserveOutcome& outcome) {
  if (!outcome.exclusions) return Internal("a refusal without its exclusion summary");
  if (outcome.exclusions->eligible > 0) {
    return Contended(outcome.candidates_examined, outcome.lost_races);
  }
  return NoCapacity(*outcome.exclusions);
}

// dcl_reserve's outcome → the caller's answer.
absl::Status AnswerReserve(const ReserveCall& call, const ReserveOutcome& outcome,
                           v1::ReserveResponse* response) {
  switch (outcome.kind) {
    case ReserveOutcome::Kind::kHeld:
    case ReserveOutcome::Kind::kReplay:
      return AnswerWithReservation(outcome, call.criteria, response);
    case ReserveOutcome::Kind::kNoSite:
      return NotFound("site", call.criteria.site_id);
    case ReserveOutcome::Kind::kContended:
      return Contended(outcome.candidates_examined, outcome.lost_races);
    case ReserveOutcome::Kind::kNoCandidate:
    case ReserveOutcome::Kind::kWalkLimit:
      return ExplainRefusal(outcome);
  }
  return Internal("reserve answered an unknown outcome");
}

}  // namespace

absl::Status ReservationLogic::Reserve(const Principal& principal,
                                       const v1::ReserveRequest& request,
                                       v1::ReserveResponse* response) {
  absl::StatusOr<ReserveCall> call = ReadReserveRequest(principal, request, options_);
  if (!call.ok()) return call.status();
  call->walk_start = walk_start_for_test_.empty() ? RandomWalkStart() : walk_start_for_test_;
  absl::StatusOr<ReserveOutcome> outcome =
      DecideInDatabase(pool_, *call, options_.max_listed_devices);
  if (!outcome.ok()) return outcome.status();
  return AnswerReserve(*call, *outcome, response);
}

absl::Status ReservationLogic::Convert(const Principal& principal,
                                       const v1::ConvertRequest& request,
                                       v1::ConvertResponse* response, bool* replayed) {
  absl::StatusOr<Ref> ref = ParseRef(request.reservation());
  if (!ref.ok()) return ref.status();
  DCL_RETURN_IF_ERROR(CheckId("service_id", request.service_id()));
  const std::string& org = principal.org_id;

  // A refusal that must still commit (recording expired-at-conversion) travels beside the
  // response, so the transaction commits and the caller still hears HOLD_EXPIRED.
  struct Outcome {
    v1::ConvertResponse response;
    absl::Status refusal;
  };
  absl::StatusOr<Outcome> result = pool_.Transact([&](pqxx::work& tx) -> absl::StatusOr<Outcome> {
    Outcome outcome;
    absl::StatusOr<request_ledger::Claim> claim =
        request_ledger::Begin(tx, org, Rpc::kConvert, request.request_id(), request);
    if (!claim.ok()) return claim.status();
    if (claim->replay) {
      DCL_RETURN_IF_ERROR(claim->Replay(&outcome.response, replayed));
      return outcome;
    }
    std::optional<ReservationRecord> locked = Find(tx, org, *ref, /*lock=*/true);
    if (!locked) return NotFound("reservation", ref->Describe());
    const v1::Reservation& r = locked->proto;
    if (r.state() == v1::RESERVATION_CONVERTED) {
      if (!absl::EqualsIgnoreCase(r.service_id(), request.service_id())) {
        return WrongState(r, "it was converted for another service");
      }
      *outcome.response.mutable_reservation() = r;
      if (auto binding = FindBindingOfReservation(tx, org, r.id())) {
        *outcome.response.mutable_binding() = *binding;
      }
      outcome.response.set_replay(true);
      DCL_RETURN_IF_ERROR(request_ledger::Finish(tx, *claim, outcome.response));
      return outcome;
    }
    if (r.state() == v1::RESERVATION_EXPIRED) {
      return Error(absl::StatusCode::kFailedPrecondition, v1::HOLD_EXPIRED,
                   "the hold has expired; reserve again")
          .Meta("reservation_id", r.id())
          .Meta("state", "expired");
    }
    if (r.state() != v1::RESERVATION_HELD) return WrongState(r, "only a held one converts");

    // The deadline, by the database clock, read after the row lock was granted: a hold that
    // lapsed between two sweeps does not convert, sweeper or not.
    std::optional<ReservationRecord> now = FindReservationById(tx, org, r.id(), false);
    if (!now) return Internal("locked reservation vanished");
    if (now->lapsed) {
      MarkExpiredAtConversion(tx, r.id(), principal.Actor());
      outcome.refusal = Error(absl::StatusCode::kFailedPrecondition, v1::HOLD_EXPIRED,
                              "the hold expired before conversion; reserve again")
                            .Meta("reservation_id", r.id())
                            .Meta("state", "expired");
      // This refusal commits (the expiry is recorded) but, like every refusal, keeps no claim.
      request_ledger::Abandon(tx, *claim);
      return outcome;
    }

    // The binding first, then the state: the row stays held until the binding exists, so a
    // concurrent order sees the hold or the binding at every instant (one commit).
    absl::StatusOr<v1::ServiceBinding> binding =
        WriteBinding(tx, org, request.service_id(), r.device_id(), r.id(), principal.Actor());
    if (!binding.ok()) return binding.status();
    MarkConverted(tx, r.id(), request.service_id(), principal.Actor());
    std::optional<ReservationRecord> converted = FindReservationById(tx, org, r.id(), false);
    if (!converted) return Internal("converted reservation vanished");
    *outcome.response.mutable_reservation() = converted->proto;
    *outcome.response.mutable_binding() = *binding;
    DCL_RETURN_IF_ERROR(request_ledger::Finish(tx, *claim, outcome.response));
    return outcome;
  });
  if (!result.ok()) return result.status();
  if (!result->refusal.ok()) return result->refusal;
  *response = std::move(result->response);
  return absl::OkStatus();
}

absl::Status ReservationLogic::Cancel(const Principal& principal, const v1::CancelRequest& request,
                                      v1::CancelResponse* response, bool* replayed) {
  absl::StatusOr<Ref> ref = ParseRef(request.reservation());
  if (!ref.ok()) return ref.status();
  DCL_RETURN_IF_ERROR(CheckText("reason", request.reason(), kMaxNoteLength, false));
  const std::string& org = principal.org_id;
  return request_ledger::TransactOnce(
      pool_, org, Rpc::kCancel, request.request_id(), request, response, replayed,
      [&](pqxx::work& tx) -> absl::Status {
        std::optional<ReservationRecord> locked = Find(tx, org, *ref, /*lock=*/true);
        if (!locked) return NotFound("reservation", ref->Describe());
        if (locked->proto.state() == v1::RESERVATION_CANCELLED) {
          *response->mutable_reservation() = locked->proto;
          response->set_replay(true);
          return absl::OkStatus();
        }
        if (locked->proto.state() != v1::RESERVATION_HELD) {
          return WrongState(locked->proto, "only a held reservation can be cancelled");
        }
        // Only a caller writes 'cancelled', and the row records who.
        MarkCancelled(tx, locked->proto.id(), principal.Actor(), request.reason());
        std::optional<ReservationRecord> cancelled =
            FindReservationById(tx, org, locked->proto.id(), false);
        if (!cancelled) return Internal("cancelled reservation vanished");
        *response->mutable_reservation() = cancelled->proto;
        return absl::OkStatus();
      });
}

absl::Status ReservationLogic::GetReservation(const Principal& principal,
                                              const v1::GetReservationRequest& request,
                                              v1::Reservation* response) {
  absl::StatusOr<Ref> ref = ParseRef(request.reservation());
  if (!ref.ok()) return ref.status();
  absl::StatusOr<v1::Reservation> result =
      pool_.Transact([&](pqxx::work& tx) -> absl::StatusOr<v1::Reservation> {
        std::optional<ReservationRecord> found = Find(tx, principal.org_id, *ref, false);
        if (!found) return NotFound("reservation", ref->Describe());
        return found->proto;
      });
  if (!result.ok()) return result.status();
  *response = std::move(*result);
  return absl::OkStatus();
}

absl::Status ReservationLogic::ListReservations(const Principal& principal,
                                                const v1::ListReservationsRequest& request,
                                                v1::ListReservationsResponse* response) {
  std::string state;
  if (request.state() != v1::RESERVATION_STATE_UNSPECIFIED) {
    state = StateName(request.state());
    if (state.empty()) return InvalidInput("state", "is not a reservation state");
  }
  const int page_size = PageSize(request.page_size());
  absl::StatusOr<std::optional<PageCursor>> after =
      DecodePageToken(request.page_token(), PageOrder::kCreation);
  if (!after.ok()) return after.status();
  absl::StatusOr<v1::ListReservationsResponse> result =
      pool_.Transact([&](pqxx::work& tx) -> absl::StatusOr<v1::ListReservationsResponse> {
        v1::ListReservationsResponse out;
        out.set_next_page_token(
            TakePage(ReservationPage(tx, principal.org_id, state, *after, page_size + 1), page_size,
                     out.mutable_reservations()));
        return out;
      });
  if (!result.ok()) return result.status();
  *response = std::move(*result);
  return absl::OkStatus();
}

absl::Status ReservationLogic::CreateService(const Principal& principal,
                                             const v1::CreateServiceRequest& request,
                                             v1::Service* response, bool* replayed) {
  if (request.kind() != "dedicated" && request.kind() != "vps") {
    return InvalidInput("kind", "must be \"dedicated\" or \"vps\"");
  }
  DCL_RETURN_IF_ERROR(CheckText("customer", request.customer(), kMaxNameLength, true));
  return request_ledger::TransactOnce(
      pool_, principal.org_id, Rpc::kCreateService, request.request_id(), request, response,
      replayed, [&](pqxx::work& tx) -> absl::Status {
        *response = InsertService(tx, principal.org_id, request.kind(), request.customer(),
                                  principal.Actor());
        return absl::OkStatus();
      });
}

absl::Status ReservationLogic::EndBinding(const Principal& principal,
                                          const v1::EndBindingRequest& request,
                                          v1::ServiceBinding* response, bool* replayed) {
  DCL_RETURN_IF_ERROR(CheckId("binding_id", request.binding_id()));
  return request_ledger::TransactOnce(
      pool_, principal.org_id, Rpc::kEndBinding, request.request_id(), request, response, replayed,
      [&](pqxx::work& tx) -> absl::Status {
        bool replay = false;
        absl::StatusOr<v1::ServiceBinding> ended = EndServiceBinding(
            tx, principal.org_id, request.binding_id(), principal.Actor(), &replay);
        if (!ended.ok()) return ended.status();
        *response = *std::move(ended);
        return absl::OkStatus();
      });
}

absl::Status ReservationLogic::GetServiceLocation(const Principal& principal,
                                                  const v1::GetServiceLocationRequest& request,
                                                  v1::ServiceLocation* response) {
  absl::StatusOr<v1::ServiceLocation> location =
      FindServiceLocation(pool_, principal, request.service_id());
  if (!location.ok()) return location.status();
  *response = std::move(*location);
  return absl::OkStatus();
}

}  // namespace dcl::reservation
