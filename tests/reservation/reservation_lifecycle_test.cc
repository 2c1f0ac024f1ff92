// Convert, Cancel, EndBinding, reads and input validation against a real PostgreSQL.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cctype>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/reservation/reservation_test_util.h"

namespace dcl::reservation {
namespace {

v1::Reservation MustReserve(ReservationEnv& env, const std::string& key, int ttl = 0) {
  v1::ReserveResponse response;
  absl::Status status =
      env.logic.Reserve(env.commerce, ReserveRequest(key, env.site, "", ttl), &response);
  if (!status.ok()) FAIL("Reserve failed: " << status.ToString());
  return response.reservation();
}

absl::Status Convert(ReservationEnv& env, const std::string& reservation_id,
                     const std::string& service_id, v1::ConvertResponse* response) {
  v1::ConvertRequest request;
  *request.mutable_reservation() = ById(reservation_id);
  request.set_service_id(service_id);
  return env.logic.Convert(env.commerce, request, response);
}

// Moves a hold's deadline into the past, as time passing would (no sweeper runs in tests).
void Lapse(ReservationEnv& env, const std::string& reservation_id) {
  env.db.Exec(
      absl::StrCat("UPDATE reservations SET created_at = now() - interval '1 hour', "
                   "expires_at = now() - interval '1 second' WHERE id = '",
                   reservation_id, "'"));
}

TEST_CASE("Reserve records the criteria and a frozen selection reason with the device's facts") {
  ReservationEnv env;
  testing::DeviceSpec spec;
  spec.hardware_profile = "gpu";
  const std::string device = env.Device(spec);
  const v1::Reservation r = MustReserve(env, "order-1", 120);
  CHECK(r.device_id() == device);
  CHECK(r.state() == v1::RESERVATION_HELD);
  CHECK(r.expires_at().seconds() - r.created_at().seconds() == 120);
  const std::string where = absl::StrCat(" FROM reservations WHERE id = '", r.id(), "'");
  CHECK(env.db.Scalar("SELECT selection_reason->'device'->>'model'" + where) == "R650");
  CHECK(env.db.Scalar("SELECT selection_reason->'device'->>'hardware_profile'" + where) == "gpu");
  CHECK(env.db.Scalar("SELECT selection_reason->'criteria'->>'site_id'" + where) == env.site);
  CHECK(env.db.Scalar("SELECT selection_reason->>'eligibility'" + where) == "eligible");
  CHECK(env.db.Scalar("SELECT selection_reason ? 'chosen_at'" + where) == "t");
  CHECK(env.db.Scalar("SELECT created_by" + where) == env.commerce.Actor());
}

TEST_CASE("a site id in upper case is the same site (ids compare in the database's spelling)") {
  ReservationEnv env;
  const std::string device = env.Device();
  std::string upper = env.site;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  v1::ReserveResponse response;
  REQUIRE(env.logic.Reserve(env.commerce, ReserveRequest("order-1", upper), &response).ok());
  CHECK(response.reservation().device_id() == device);
  REQUIRE(env.logic.Reserve(env.commerce, ReserveRequest("order-1", env.site), &response).ok());
  CHECK(response.replay());
}

TEST_CASE("the default TTL is 15 minutes") {
  ReservationEnv env;
  env.Device();
  const v1::Reservation r = MustReserve(env, "order-1");
  CHECK(r.expires_at().seconds() - r.created_at().seconds() == 15 * 60);
}

TEST_CASE(
    "the same key replays the hold; the same key with other criteria is refused, nothing "
    "written") {
  ReservationEnv env;
  env.Device();
  env.Device();
  const v1::Reservation first = MustReserve(env, "order-1");
  v1::ReserveResponse again;
  REQUIRE(env.logic.Reserve(env.commerce, ReserveRequest("order-1", env.site), &again).ok());
  CHECK(again.replay());
  CHECK(again.reservation().id() == first.id());
  v1::ReserveResponse other;
  absl::Status status =
      env.logic.Reserve(env.commerce, ReserveRequest("order-1", env.site, "R750"), &other);
  CHECK(status.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(ReasonOf(status) == v1::IDEMPOTENCY_KEY_REUSED);
  CHECK(env.db.Count("SELECT count(*) FROM reservations") == 1);
}

TEST_CASE("NO_CAPACITY counts every exclusion reason and lists a bounded set of devices") {
  ReservationOptions options;
  options.max_listed_devices = 3;
  ReservationEnv env(4, options);
  const std::string other_site = testing::CreateSite(env.db, env.org, "AMS1");
  env.DeviceAt(other_site);
  testing::DeviceSpec spec;
  spec.process_state = "moving";
  env.Device(spec);
  spec.process_state = "in_transit";
  env.Device(spec);
  spec.process_state = "staging";
  env.Device(spec);
  env.Device(spec);
  testing::DeviceSpec vendor;
  vendor.vendor = "HPE";
  const std::string hpe = env.Device(vendor);
  v1::ReserveResponse response;
  v1::ReserveRequest dell = ReserveRequest("o", env.site);
  dell.mutable_criteria()->set_vendor("Dell");
  absl::Status status = env.logic.Reserve(env.commerce, dell, &response);
  REQUIRE(IsNoCapacity(status));
  CHECK(ExclusionCountOf(status, "wrong_site") == 1);
  CHECK(ExclusionCountOf(status, "moving") == 1);
  CHECK(ExclusionCountOf(status, "in_transit") == 1);
  CHECK(ExclusionCountOf(status, "not_ready_staging") == 2);
  CHECK(ExclusionCountOf(status, "wrong_vendor") == 1);
  CHECK(ExclusionCountOf(status, "eligible") == 0);
  CHECK(GetErrorDetail(status)->excluded_devices_size() == 3);  // bounded: 5 excluded here
  CHECK(env.db.Count("SELECT count(*) FROM reservations") == 0);
  // Any vendor: the HPE machine is the one eligible device.
  REQUIRE(env.logic.Reserve(env.commerce, ReserveRequest("o2", env.site), &response).ok());
  CHECK(response.reservation().device_id() == hpe);
}

TEST_CASE(
    "NO_CAPACITY's wrong_site is every device of the organization at other sites, whatever "
    "else it is, and only the organization's") {
  ReservationEnv env;
  const std::string ams = testing::CreateSite(env.db, env.org, "AMS1");
  const std::string cdg = testing::CreateSite(env.db, env.org, "CDG1");
  env.DeviceAt(ams);
  testing::DeviceSpec staging;
  staging.process_state = "staging";
  env.DeviceAt(ams, staging);
  const std::string retired = env.DeviceAt(cdg);
  env.db.Exec(
      "UPDATE devices SET decommissioned_at = now(), decommissioned_by = 'test' "
      "WHERE id = '" +
      retired + "'");
  // Held elsewhere: a hold on another site's machine does not make it held_by_another_order here.
  v1::ReserveResponse held_elsewhere;
  const std::string cdg_ready = env.DeviceAt(cdg);
  REQUIRE(env.logic.Reserve(env.commerce, ReserveRequest("cdg", cdg), &held_elsewhere).ok());
  CHECK(held_elsewhere.reservation().device_id() == cdg_ready);
  // Another organization's machines at its own site are not counted at all.
  const std::string other_org = testing::CreateOrg(env.db, "globex");
  const std::string other_site = testing::CreateSite(env.db, other_org, "LHR1");
  testing::CreateDevice(env.db, other_org, other_site);
  testing::CreateDevice(env.db, other_org, other_site);
  env.Device(staging);
  v1::ReserveResponse response;
  absl::Status status =
      env.logic.Reserve(env.commerce, ReserveRequest("here", env.site), &response);
  REQUIRE(IsNoCapacity(status));
  CHECK(ExclusionCountOf(status, "wrong_site") == 4);
  CHECK(ExclusionCountOf(status, "not_ready_staging") == 1);
  CHECK(ExclusionCountOf(status, "decommissioned") == 0);
  CHECK(ExclusionCountOf(status, "held_by_another_order") == 0);
  CHECK(ExclusionCountOf(status, "eligible") == 0);
  // Every listed device is at the asked site: the other sites are counted, not listed.
  CHECK(GetErrorDetail(status)->excluded_devices_size() == 1);
}

// A walk stopped by its bound on rows (dcl_reserve's outcome walk_limit) is explained like one
// that went round the site, from the same statement: eligible machines beyond the bound mean
// CONTENDED (retry now), none mean NO_CAPACITY with the machines listed.
TEST_CASE(
    "a walk stopped by its row bound: CONTENDED with a machine beyond it, NO_CAPACITY without") {
  ReservationOptions options;
  options.max_rows_walked = 1;  // one batch of the walk (16 devices), then walk_limit
  ReservationEnv env(4, options);
  env.logic.SetWalkStartForTest("00000000-0000-0000-0000-000000000000");
  std::vector<std::string> devices;
  for (int i = 0; i < 17; ++i) devices.push_back(env.Device());
  std::sort(devices.begin(), devices.end());
  auto hold_for_another_order = [&](const std::string& device) {
    env.db.Exec(absl::StrCat(
        "INSERT INTO reservations (org_id, idempotency_key, device_id, criteria_site_id, "
        "selection_reason, expires_at) VALUES ('",
        env.org, "', 'other-", device, "', '", device, "', '", env.site,
        "', '{}', now() + interval '15 minutes')"));
  };
  // The first batch, the 16 lowest ids, is held; the 17th, beyond the bound, is free.
  for (int i = 0; i < 16; ++i) hold_for_another_order(devices[i]);
  v1::ReserveResponse response;
  absl::Status status =
      env.logic.Reserve(env.commerce, ReserveRequest("mine", env.site), &response);
  INFO(status.ToString());
  CHECK(IsContended(status));
  CHECK(env.db.Count("SELECT count(*) FROM reservations WHERE idempotency_key = 'mine'") == 0);

  hold_for_another_order(devices[16]);
  status = env.logic.Reserve(env.commerce, ReserveRequest("mine", env.site), &response);
  INFO(status.ToString());
  REQUIRE(IsNoCapacity(status));
  CHECK(ExclusionCountOf(status, "held_by_another_order") == 17);
  CHECK(ExclusionCountOf(status, "eligible") == 0);
  const auto detail = GetErrorDetail(status);
  REQUIRE(detail.has_value());
  REQUIRE(detail->excluded_devices_size() == 17);
  for (int i = 0; i < 17; ++i) {
    CHECK(detail->excluded_devices(i).device_id() == devices[i]);
    CHECK(detail->excluded_devices(i).reason() == "held_by_another_order");
  }
}

TEST_CASE(
    "Convert writes the binding and converts the hold in one transaction; again is a replay") {
  ReservationEnv env;
  const std::string device = env.Device();
  const std::string service = env.Service();
  const v1::Reservation r = MustReserve(env, "order-1");
  v1::ConvertResponse response;
  REQUIRE(Convert(env, r.id(), service, &response).ok());
  CHECK_FALSE(response.replay());
  CHECK(response.reservation().state() == v1::RESERVATION_CONVERTED);
  CHECK(response.reservation().end_reason() == "converted");
  CHECK(response.reservation().service_id() == service);
  CHECK(response.binding().device_id() == device);
  CHECK(response.binding().service_id() == service);
  v1::ConvertResponse again;
  REQUIRE(Convert(env, r.id(), service, &again).ok());
  CHECK(again.replay());
  CHECK(again.binding().id() == response.binding().id());
  CHECK(env.db.Count("SELECT count(*) FROM service_bindings") == 1);
  // A different service for a converted reservation is refused, naming the state.
  const std::string other = env.Service();
  absl::Status status = Convert(env, r.id(), other, &again);
  CHECK(status.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(ReasonOf(status) == v1::WRONG_STATE);
  CHECK(GetErrorDetail(status)->metadata().at("state") == "converted");
  // The machine is sold: the next order finds nothing.
  v1::ReserveResponse next;
  status = env.logic.Reserve(env.commerce, ReserveRequest("order-2", env.site), &next);
  CHECK(IsNoCapacity(status));
  CHECK(ExclusionCountOf(status, "bound_to_service") == 1);
}

TEST_CASE("Convert by idempotency key works like Convert by id") {
  ReservationEnv env;
  env.Device();
  const std::string service = env.Service();
  MustReserve(env, "order-1");
  v1::ConvertRequest request;
  request.mutable_reservation()->set_idempotency_key("order-1");
  request.set_service_id(service);
  v1::ConvertResponse response;
  REQUIRE(env.logic.Convert(env.commerce, request, &response).ok());
  CHECK(response.reservation().idempotency_key() == "order-1");
}

TEST_CASE(
    "Convert after the deadline is refused without any sweeper and recorded as expired at "
    "conversion") {
  ReservationEnv env;
  const std::string device = env.Device();
  const std::string service = env.Service();
  const v1::Reservation r = MustReserve(env, "order-1");
  Lapse(env, r.id());
  // Still 'held' in the table: nothing swept it.
  REQUIRE(env.db.Scalar(absl::StrCat("SELECT state FROM reservations WHERE id = '", r.id(), "'")) ==
          "held");
  v1::ConvertResponse response;
  absl::Status status = Convert(env, r.id(), service, &response);
  CHECK(status.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(ReasonOf(status) == v1::HOLD_EXPIRED);
  CHECK(env.db.Scalar(absl::StrCat(
            "SELECT state || '/' || end_reason FROM reservations WHERE id = '", r.id(), "'")) ==
        "expired/expired_at_conversion");
  CHECK(env.db.Count("SELECT count(*) FROM service_bindings") == 0);
  // Converting again still answers HOLD_EXPIRED; the machine is sellable again.
  status = Convert(env, r.id(), service, &response);
  CHECK(ReasonOf(status) == v1::HOLD_EXPIRED);
  const v1::Reservation next = MustReserve(env, "order-2");
  CHECK(next.device_id() == device);
}

TEST_CASE("a Convert racing Reserves for the same machine: the machine is never free in between") {
  ReservationEnv env(12);
  for (int round = 0; round < 8; ++round) {
    const std::string site = testing::CreateSite(env.db, env.org, absl::StrCat("S", round));
    const std::string device = env.DeviceAt(site);
    const std::string service = env.Service();
    v1::ReserveResponse held;
    REQUIRE(
        env.logic.Reserve(env.commerce, ReserveRequest(absl::StrCat("hold-", round), site), &held)
            .ok());
    std::atomic<bool> converted{false};
    auto results = RunTogether(7, [&](int i) {
      CallResult r;
      if (i == 0) {
        v1::ConvertResponse response;
        r.status = Convert(env, held.reservation().id(), service, &response);
        converted = r.status.ok();
      } else {
        r.status = env.logic.Reserve(
            env.commerce, ReserveRequest(absl::StrCat("rival-", round, "-", i), site), &r.response);
      }
      return r;
    });
    CHECK(converted);
    for (int i = 1; i < 7; ++i) {
      INFO("round " << round << ": " << results[i].status.ToString());
      CHECK((IsNoCapacity(results[i].status) || IsContended(results[i].status)));
    }
    CHECK(env.db.Count(absl::StrCat("SELECT count(*) FROM reservations WHERE device_id = '", device,
                                    "'")) == 1);
  }
}

TEST_CASE(
    "a service on two machines and a machine for two services are refused by the indexes "
    "with distinct reasons") {
  ReservationEnv env;
  env.Device();
  env.Device();
  const std::string service = env.Service();
  const v1::Reservation first = MustReserve(env, "order-1");
  const v1::Reservation second = MustReserve(env, "order-2");
  v1::ConvertResponse response;
  REQUIRE(Convert(env, first.id(), service, &response).ok());

  // The same service for a second machine.
  absl::Status status = Convert(env, second.id(), service, &response);
  CHECK(status.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(ReasonOf(status) == v1::SERVICE_ALREADY_BOUND);
  CHECK(env.db.Scalar(absl::StrCat("SELECT state FROM reservations WHERE id = '", second.id(),
                                   "'")) == "held");

  // A machine already given to another service (bound outside the reservation path) cannot be
  // given to a second one, even with a hold on it.
  const std::string taken = env.Device();
  const std::string owner = env.Service();
  env.db.Exec(absl::StrCat("INSERT INTO service_bindings (org_id, service_id, device_id) VALUES ('",
                           env.org, "', '", owner, "', '", taken, "')"));
  const std::string stale_hold = env.db.Scalar(absl::StrCat(
      "INSERT INTO reservations (org_id, idempotency_key, device_id, criteria_site_id, "
      "selection_reason, expires_at) VALUES ('",
      env.org, "', 'order-3', '", taken, "', '", env.site,
      "', '{}', now() + interval '15 minutes') RETURNING id"));
  status = Convert(env, stale_hold, env.Service(), &response);
  CHECK(status.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(ReasonOf(status) == v1::DEVICE_ALREADY_BOUND);
  CHECK(env.db.Count("SELECT count(*) FROM service_bindings WHERE ended_at IS NULL") == 2);
}

TEST_CASE("a binding must point to a dedicated service") {
  ReservationEnv env;
  env.Device();
  const v1::Reservation r = MustReserve(env, "order-1");
  v1::ConvertResponse response;
  absl::Status status = Convert(env, r.id(), env.Service("vps"), &response);
  CHECK(ReasonOf(status) == v1::SERVICE_NOT_DEDICATED);
  CHECK(env.db.Count("SELECT count(*) FROM service_bindings") == 0);
}

TEST_CASE("Cancel ends a hold, records who, is harmless to repeat, and refuses other states") {
  ReservationEnv env;
  const std::string device = env.Device();
  const v1::Reservation r = MustReserve(env, "order-1");
  v1::CancelRequest request;
  *request.mutable_reservation() = ById(r.id());
  request.set_reason("buyer left");
  v1::CancelResponse response;
  REQUIRE(env.logic.Cancel(env.commerce, request, &response).ok());
  CHECK(response.reservation().state() == v1::RESERVATION_CANCELLED);
  CHECK(response.reservation().ended_by() == env.commerce.Actor());
  CHECK_FALSE(response.replay());
  REQUIRE(env.logic.Cancel(env.commerce, request, &response).ok());
  CHECK(response.replay());
  // Converting a cancelled hold names the state.
  v1::ConvertResponse converted;
  absl::Status status = Convert(env, r.id(), env.Service(), &converted);
  CHECK(ReasonOf(status) == v1::WRONG_STATE);
  CHECK(GetErrorDetail(status)->metadata().at("state") == "cancelled");
  // The machine is free again; converting it and then cancelling is refused.
  const v1::Reservation next = MustReserve(env, "order-2");
  CHECK(next.device_id() == device);
  REQUIRE(Convert(env, next.id(), env.Service(), &converted).ok());
  *request.mutable_reservation() = ById(next.id());
  status = env.logic.Cancel(env.commerce, request, &response);
  CHECK(status.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(GetErrorDetail(status)->metadata().at("state") == "converted");
}

TEST_CASE("EndBinding makes the machine sellable again; ending twice is harmless") {
  ReservationEnv env;
  const std::string device = env.Device();
  const v1::Reservation r = MustReserve(env, "order-1");
  v1::ConvertResponse converted;
  REQUIRE(Convert(env, r.id(), env.Service(), &converted).ok());
  v1::EndBindingRequest request;
  request.set_binding_id(converted.binding().id());
  v1::ServiceBinding ended;
  REQUIRE(env.logic.EndBinding(env.commerce, request, &ended).ok());
  CHECK(ended.has_ended_at());
  REQUIRE(env.logic.EndBinding(env.commerce, request, &ended).ok());
  CHECK(MustReserve(env, "order-2").device_id() == device);
}

TEST_CASE("ListReservations filters by state and pages without gaps or repeats") {
  ReservationEnv env;
  for (int i = 0; i < 5; ++i) env.Device();
  std::set<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.insert(MustReserve(env, absl::StrCat("o", i)).id());
  v1::CancelRequest cancel;
  *cancel.mutable_reservation() = ById(*ids.begin());
  v1::CancelResponse cancelled;
  REQUIRE(env.logic.Cancel(env.commerce, cancel, &cancelled).ok());

  v1::ListReservationsRequest request;
  request.set_page_size(2);
  std::set<std::string> seen;
  int pages = 0;
  do {
    v1::ListReservationsResponse page;
    REQUIRE(env.logic.ListReservations(env.commerce, request, &page).ok());
    ++pages;
    for (const auto& r : page.reservations()) CHECK(seen.insert(r.id()).second);
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  CHECK(pages == 3);
  CHECK(seen == ids);

  v1::ListReservationsRequest held;
  held.set_state(v1::RESERVATION_HELD);
  v1::ListReservationsResponse page;
  REQUIRE(env.logic.ListReservations(env.commerce, held, &page).ok());
  CHECK(page.reservations_size() == 4);
  held.set_page_token("garbage");
  CHECK(env.logic.ListReservations(env.commerce, held, &page).code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("bad input is INVALID_ARGUMENT or NOT_FOUND and writes nothing") {
  ReservationEnv env;
  env.Device();
  const std::string other_org = testing::CreateOrg(env.db, "globex");
  const std::string foreign_site = testing::CreateSite(env.db, other_org, "X");
  v1::ReserveResponse response;
  auto reserve = [&](const v1::ReserveRequest& request) {
    return env.logic.Reserve(env.commerce, request, &response).code();
  };
  CHECK(reserve(ReserveRequest("", env.site)) == absl::StatusCode::kInvalidArgument);
  CHECK(reserve(ReserveRequest(std::string(201, 'k'), env.site)) ==
        absl::StatusCode::kInvalidArgument);
  CHECK(reserve(ReserveRequest("k", "not-a-uuid")) == absl::StatusCode::kInvalidArgument);
  CHECK(reserve(ReserveRequest("k", "")) == absl::StatusCode::kInvalidArgument);
  CHECK(reserve(ReserveRequest("k", "00000000-0000-0000-0000-000000000001")) ==
        absl::StatusCode::kNotFound);
  CHECK(reserve(ReserveRequest("k", foreign_site)) == absl::StatusCode::kNotFound);
  CHECK(reserve(ReserveRequest("k", env.site, "", -1)) == absl::StatusCode::kInvalidArgument);
  v1::ReserveRequest zero_ttl = ReserveRequest("k", env.site);
  zero_ttl.set_ttl_seconds(0);  // explicit 0 is not "the default"
  CHECK(reserve(zero_ttl) == absl::StatusCode::kInvalidArgument);
  CHECK(reserve(ReserveRequest("k", env.site, "", 24 * 3600 + 1)) ==
        absl::StatusCode::kInvalidArgument);
  CHECK(reserve(ReserveRequest("k", env.site, std::string("R6\0", 3))) ==
        absl::StatusCode::kInvalidArgument);

  v1::ConvertResponse converted;
  CHECK(Convert(env, "00000000-0000-0000-0000-000000000002", env.Service(), &converted).code() ==
        absl::StatusCode::kNotFound);
  CHECK(Convert(env, "nope", env.Service(), &converted).code() ==
        absl::StatusCode::kInvalidArgument);
  v1::ConvertRequest no_ref;
  no_ref.set_service_id("00000000-0000-0000-0000-000000000003");
  CHECK(env.logic.Convert(env.commerce, no_ref, &converted).code() ==
        absl::StatusCode::kInvalidArgument);

  // Another organization's reservation does not exist for this caller.
  const v1::Reservation mine = MustReserve(env, "order-1");
  ReservationEnv* e = &env;
  Principal stranger = testing::PrincipalFor(other_org, Role::kCommerce);
  v1::GetReservationRequest get;
  *get.mutable_reservation() = ById(mine.id());
  v1::Reservation got;
  CHECK(e->logic.GetReservation(stranger, get, &got).code() == absl::StatusCode::kNotFound);
  REQUIRE(e->logic.GetReservation(env.commerce, get, &got).ok());
  CHECK(got.id() == mine.id());
  v1::CancelRequest cancel;
  *cancel.mutable_reservation() = ById(mine.id());
  v1::CancelResponse cancelled;
  CHECK(env.logic.Cancel(stranger, cancel, &cancelled).code() == absl::StatusCode::kNotFound);
  // A converting stranger may not use our service either.
  const std::string our_service = env.Service();
  v1::ConvertRequest steal;
  *steal.mutable_reservation() = ById(mine.id());
  steal.set_service_id(our_service);
  CHECK(env.logic.Convert(stranger, steal, &converted).code() == absl::StatusCode::kNotFound);

  v1::CreateServiceRequest bad_service;
  bad_service.set_kind("cloud");
  bad_service.set_customer("c");
  v1::Service service;
  CHECK(env.logic.CreateService(env.commerce, bad_service, &service).code() ==
        absl::StatusCode::kInvalidArgument);
  v1::EndBindingRequest end;
  end.set_binding_id("00000000-0000-0000-0000-000000000004");
  v1::ServiceBinding binding;
  CHECK(env.logic.EndBinding(env.commerce, end, &binding).code() == absl::StatusCode::kNotFound);

  // Only the one good reservation and the services made for the checks exist.
  CHECK(env.db.Count("SELECT count(*) FROM reservations") == 1);
  CHECK(env.db.Count("SELECT count(*) FROM service_bindings") == 0);
  CHECK(env.db.Scalar(
            absl::StrCat("SELECT state FROM reservations WHERE id = '", mine.id(), "'")) == "held");
}

}  // namespace
}  // namespace dcl::reservation
