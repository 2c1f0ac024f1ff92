// Every RPC of the four services, called raw over gRPC the way no UI would: without a token,
// with an unknown token, with a token of the wrong role, with a token of another organization
// (naming ids that exist there), and with the module switched off. Each gets its own status and
// reason, and none of these calls writes anything.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "dcl/v1/inventory.grpc.pb.h"
#include "dcl/v1/moves.grpc.pb.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "dcl/v1/reservation.grpc.pb.h"
#include "services/common/grpc_status.h"
#include "tests/support/fixtures.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/suite.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

// The ids one organization's objects have; requests are built from them.
struct Ids {
  std::string site, rack, rack_free, device, device_to_move, reservation, reservation_key,
      service, binding, booking, move;
  int64_t location_record = 0;  // a row of the moved device's location history
};

// All four services behind one in-process server, as their binaries would run them.
using Suite = testing::InProcessSuite;

using Call = std::function<grpc::Status(Suite&, const std::string& token, const Ids&)>;

template <typename Request, typename Response, typename Stub, typename Method>
grpc::Status Unary(Stub& stub, Method method, const std::string& token, const Request& request) {
  Response response;
  return (stub.*method)(testing::ContextWithToken(token).get(), request, &response);
}

v1::ReservationRef RefById(const std::string& id) {
  v1::ReservationRef ref;
  ref.set_reservation_id(id);
  return ref;
}

// One way to call each RPC, naming the objects of `ids`.
std::map<Rpc, Call> Calls() {
  using RS = v1::ReservationService::Stub;
  using OS = v1::OccupancyService::Stub;
  using MS = v1::MoveService::Stub;
  using IS = v1::InventoryService::Stub;
  // Writes carry a client request id: a refused call must not leave its claim behind either.
  const std::string request_id = "6f1c2a1e-0000-4000-8000-00000000a11d";
  std::map<Rpc, Call> calls;
  calls[Rpc::kReserve] = [](Suite& s, const std::string& t, const Ids& ids) {
    v1::ReserveRequest r;
    r.set_idempotency_key("order-from-elsewhere");
    r.mutable_criteria()->set_site_id(ids.site);
    return Unary<v1::ReserveRequest, v1::ReserveResponse>(*s.reservations, &RS::Reserve, t, r);
  };
  calls[Rpc::kConvert] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::ConvertRequest r;
    r.set_request_id(request_id);
    *r.mutable_reservation() = RefById(ids.reservation);
    r.set_service_id(ids.service);
    return Unary<v1::ConvertRequest, v1::ConvertResponse>(*s.reservations, &RS::Convert, t, r);
  };
  calls[Rpc::kCancel] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::CancelRequest r;
    r.set_request_id(request_id);
    *r.mutable_reservation() = RefById(ids.reservation);
    return Unary<v1::CancelRequest, v1::CancelResponse>(*s.reservations, &RS::Cancel, t, r);
  };
  calls[Rpc::kGetReservation] = [](Suite& s, const std::string& t, const Ids& ids) {
    v1::GetReservationRequest r;
    r.mutable_reservation()->set_idempotency_key(ids.reservation_key);
    return Unary<v1::GetReservationRequest, v1::Reservation>(*s.reservations,
                                                             &RS::GetReservation, t, r);
  };
  calls[Rpc::kListReservations] = [](Suite& s, const std::string& t, const Ids&) {
    v1::ListReservationsRequest r;
    return Unary<v1::ListReservationsRequest, v1::ListReservationsResponse>(
        *s.reservations, &RS::ListReservations, t, r);
  };
  calls[Rpc::kCreateService] = [request_id](Suite& s, const std::string& t, const Ids&) {
    v1::CreateServiceRequest r;
    r.set_request_id(request_id);
    r.set_kind("dedicated");
    r.set_customer("mallory");
    return Unary<v1::CreateServiceRequest, v1::Service>(*s.reservations, &RS::CreateService, t,
                                                        r);
  };
  calls[Rpc::kEndBinding] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::EndBindingRequest r;
    r.set_request_id(request_id);
    r.set_binding_id(ids.binding);
    return Unary<v1::EndBindingRequest, v1::ServiceBinding>(*s.reservations, &RS::EndBinding, t,
                                                            r);
  };
  calls[Rpc::kGetServiceLocation] = [](Suite& s, const std::string& t, const Ids& ids) {
    v1::GetServiceLocationRequest r;
    r.set_service_id(ids.service);
    return Unary<v1::GetServiceLocationRequest, v1::ServiceLocation>(
        *s.reservations, &RS::GetServiceLocation, t, r);
  };
  calls[Rpc::kGetRack] = [](Suite& s, const std::string& t, const Ids& ids) {
    v1::GetRackRequest r;
    r.set_rack_id(ids.rack);
    return Unary<v1::GetRackRequest, v1::Rack>(*s.occupancy, &OS::GetRack, t, r);
  };
  calls[Rpc::kGetRackCapacity] = [](Suite& s, const std::string& t, const Ids& ids) {
    v1::GetRackCapacityRequest r;
    r.set_rack_id(ids.rack);
    return Unary<v1::GetRackCapacityRequest, v1::RackCapacity>(*s.occupancy,
                                                               &OS::GetRackCapacity, t, r);
  };
  calls[Rpc::kPlanBooking] = [](Suite& s, const std::string& t, const Ids& ids) {
    v1::PlanBookingRequest r;
    r.mutable_booking()->set_rack_id(ids.rack_free);
    r.mutable_booking()->set_kind(v1::BOOKING_BLOCKING);
    r.mutable_booking()->set_side(v1::SIDE_FRONT);
    r.mutable_booking()->set_first_unit(30);
    r.mutable_booking()->set_last_unit(31);
    return Unary<v1::PlanBookingRequest, v1::PlanBookingResponse>(*s.occupancy,
                                                                  &OS::PlanBooking, t, r);
  };
  calls[Rpc::kPlaceDevice] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::PlaceDeviceRequest r;
    r.set_request_id(request_id);
    r.set_rack_id(ids.rack_free);
    r.set_device_id(ids.device_to_move);
    r.set_side(v1::SIDE_FRONT);
    r.set_unit(20);
    return Unary<v1::PlaceDeviceRequest, v1::Booking>(*s.occupancy, &OS::PlaceDevice, t, r);
  };
  calls[Rpc::kPlaceDevices] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::PlaceDevicesRequest r;
    v1::PlaceDeviceRequest* item = r.add_requests();
    item->set_request_id(request_id);
    item->set_rack_id(ids.rack_free);
    item->set_device_id(ids.device_to_move);
    item->set_side(v1::SIDE_FRONT);
    item->set_unit(20);
    return Unary<v1::PlaceDevicesRequest, v1::PlaceDevicesResponse>(*s.occupancy,
                                                                     &OS::PlaceDevices, t, r);
  };
  calls[Rpc::kBlockUnits] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::BlockUnitsRequest r;
    r.set_request_id(request_id);
    r.set_rack_id(ids.rack_free);
    r.set_side(v1::SIDE_FRONT);
    r.set_first_unit(30);
    r.set_last_unit(31);
    r.set_reason("cabling");
    return Unary<v1::BlockUnitsRequest, v1::Booking>(*s.occupancy, &OS::BlockUnits, t, r);
  };
  calls[Rpc::kReserveUnits] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::ReserveUnitsRequest r;
    r.set_request_id(request_id);
    r.set_rack_id(ids.rack_free);
    r.set_side(v1::SIDE_FRONT);
    r.set_first_unit(32);
    r.set_last_unit(33);
    r.set_reason("delivery");
    return Unary<v1::ReserveUnitsRequest, v1::Booking>(*s.occupancy, &OS::ReserveUnits, t, r);
  };
  calls[Rpc::kReleaseBooking] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::ReleaseBookingRequest r;
    r.set_request_id(request_id);
    r.set_booking_id(ids.booking);
    return Unary<v1::ReleaseBookingRequest, v1::Booking>(*s.occupancy, &OS::ReleaseBooking, t,
                                                         r);
  };
  calls[Rpc::kPlanDelivery] = [](Suite& s, const std::string& t, const Ids& ids) {
    v1::PlanDeliveryRequest r;
    r.set_site_id(ids.site);
    r.add_items()->set_device_id(ids.device_to_move);
    return Unary<v1::PlanDeliveryRequest, v1::DeliveryPlan>(*s.occupancy, &OS::PlanDelivery, t,
                                                            r);
  };
  calls[Rpc::kReserveDelivery] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::ReserveDeliveryRequest r;
    r.set_request_id(request_id);
    r.mutable_plan_request()->set_site_id(ids.site);
    r.mutable_plan_request()->add_items()->set_device_id(ids.device_to_move);
    return Unary<v1::ReserveDeliveryRequest, v1::DeliveryReservation>(
        *s.occupancy, &OS::ReserveDelivery, t, r);
  };
  calls[Rpc::kGetSiteCapacity] = [](Suite& s, const std::string& t, const Ids& ids) {
    v1::GetSiteCapacityRequest r;
    r.set_site_id(ids.site);
    return Unary<v1::GetSiteCapacityRequest, v1::SiteCapacity>(*s.occupancy,
                                                               &OS::GetSiteCapacity, t, r);
  };
  calls[Rpc::kStartMove] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::StartMoveRequest r;
    r.set_request_id(request_id);
    r.set_device_id(ids.device);
    r.set_destination_rack_id(ids.rack_free);
    r.set_destination_side(v1::SIDE_FRONT);
    r.set_destination_unit(10);
    return Unary<v1::StartMoveRequest, v1::Move>(*s.moves, &MS::StartMove, t, r);
  };
  calls[Rpc::kAdvanceMove] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::AdvanceMoveRequest r;
    r.set_request_id(request_id);
    r.set_move_id(ids.move);
    r.set_target(v1::MOVE_APPROVED);
    return Unary<v1::AdvanceMoveRequest, v1::Move>(*s.moves, &MS::AdvanceMove, t, r);
  };
  calls[Rpc::kCancelMove] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::CancelMoveRequest r;
    r.set_request_id(request_id);
    r.set_move_id(ids.move);
    return Unary<v1::CancelMoveRequest, v1::Move>(*s.moves, &MS::CancelMove, t, r);
  };
  calls[Rpc::kGetMove] = [](Suite& s, const std::string& t, const Ids& ids) {
    v1::GetMoveRequest r;
    r.set_move_id(ids.move);
    return Unary<v1::GetMoveRequest, v1::Move>(*s.moves, &MS::GetMove, t, r);
  };
  calls[Rpc::kListMoves] = [](Suite& s, const std::string& t, const Ids&) {
    v1::ListMovesRequest r;
    return Unary<v1::ListMovesRequest, v1::ListMovesResponse>(*s.moves, &MS::ListMoves, t, r);
  };
  calls[Rpc::kWatchMove] = [](Suite& s, const std::string& t, const Ids& ids) {
    v1::WatchMoveRequest r;
    r.set_move_id(ids.move);
    auto context = testing::ContextWithToken(t);
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto reader = s.moves->WatchMove(context.get(), r);
    v1::MoveEvent event;
    while (reader->Read(&event)) {
      context->TryCancel();  // admitted: one event is enough to know
    }
    return reader->Finish();
  };
  calls[Rpc::kListLocationHistory] = [](Suite& s, const std::string& t, const Ids& ids) {
    v1::ListLocationHistoryRequest r;
    r.set_device_id(ids.device);
    return Unary<v1::ListLocationHistoryRequest, v1::ListLocationHistoryResponse>(
        *s.moves, &MS::ListLocationHistory, t, r);
  };
  calls[Rpc::kCorrectLocation] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::CorrectLocationRequest r;
    r.set_request_id(request_id);
    r.set_corrects_id(ids.location_record);
    r.set_reason("the rack label was misread");
    r.set_rack_id(ids.rack_free);
    r.set_side(v1::SIDE_FRONT);
    r.set_first_unit(1);
    r.set_last_unit(1);
    return Unary<v1::CorrectLocationRequest, v1::LocationRecord>(*s.moves,
                                                                 &MS::CorrectLocation, t, r);
  };
  calls[Rpc::kCreateSite] = [request_id](Suite& s, const std::string& t, const Ids&) {
    v1::CreateSiteRequest r;
    r.set_request_id(request_id);
    r.set_name("MAL1");
    return Unary<v1::CreateSiteRequest, v1::Site>(*s.inventory, &IS::CreateSite, t, r);
  };
  calls[Rpc::kGetSite] = [](Suite& s, const std::string& t, const Ids& ids) {
    v1::GetSiteRequest r;
    r.set_site_id(ids.site);
    return Unary<v1::GetSiteRequest, v1::Site>(*s.inventory, &IS::GetSite, t, r);
  };
  calls[Rpc::kListSites] = [](Suite& s, const std::string& t, const Ids&) {
    return Unary<v1::ListSitesRequest, v1::ListSitesResponse>(*s.inventory, &IS::ListSites, t,
                                                              v1::ListSitesRequest());
  };
  calls[Rpc::kCreateRack] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::CreateRackRequest r;
    r.set_request_id(request_id);
    r.set_site_id(ids.site);
    r.set_name("MAL-R1");
    r.mutable_geometry()->set_first_unit(1);
    r.mutable_geometry()->set_unit_count(42);
    r.mutable_geometry()->set_numbering(v1::NUMBERING_ASCENDING);
    return Unary<v1::CreateRackRequest, v1::RackRecord>(*s.inventory, &IS::CreateRack, t, r);
  };
  calls[Rpc::kInventoryGetRack] = [](Suite& s, const std::string& t, const Ids& ids) {
    v1::GetRackRequest r;
    r.set_rack_id(ids.rack);
    return Unary<v1::GetRackRequest, v1::RackRecord>(*s.inventory, &IS::GetRack, t, r);
  };
  calls[Rpc::kListRacks] = [](Suite& s, const std::string& t, const Ids&) {
    return Unary<v1::ListRacksRequest, v1::ListRacksResponse>(*s.inventory, &IS::ListRacks, t,
                                                              v1::ListRacksRequest());
  };
  calls[Rpc::kUpdateRack] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::UpdateRackRequest r;
    r.set_request_id(request_id);
    r.set_rack_id(ids.rack);
    r.set_name("renamed");
    return Unary<v1::UpdateRackRequest, v1::RackRecord>(*s.inventory, &IS::UpdateRack, t, r);
  };
  calls[Rpc::kSetPowerFeeds] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::SetPowerFeedsRequest r;
    r.set_request_id(request_id);
    r.set_rack_id(ids.rack);
    return Unary<v1::SetPowerFeedsRequest, v1::RackRecord>(*s.inventory, &IS::SetPowerFeeds, t, r);
  };
  calls[Rpc::kRegisterDevice] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::RegisterDeviceRequest r;
    r.set_request_id(request_id);
    r.set_site_id(ids.site);
    r.set_vendor("Dell");
    r.set_model("R650");
    r.set_height_units(1);
    return Unary<v1::RegisterDeviceRequest, v1::Device>(*s.inventory, &IS::RegisterDevice, t, r);
  };
  calls[Rpc::kRegisterDevices] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::RegisterDevicesRequest r;
    v1::RegisterDeviceRequest* item = r.add_requests();
    item->set_request_id(request_id);
    item->set_site_id(ids.site);
    item->set_vendor("Dell");
    item->set_model("R650");
    item->set_height_units(1);
    return Unary<v1::RegisterDevicesRequest, v1::RegisterDevicesResponse>(
        *s.inventory, &IS::RegisterDevices, t, r);
  };
  calls[Rpc::kGetDevice] = [](Suite& s, const std::string& t, const Ids& ids) {
    v1::GetDeviceRequest r;
    r.set_device_id(ids.device_to_move);
    return Unary<v1::GetDeviceRequest, v1::Device>(*s.inventory, &IS::GetDevice, t, r);
  };
  calls[Rpc::kListDevices] = [](Suite& s, const std::string& t, const Ids&) {
    return Unary<v1::ListDevicesRequest, v1::ListDevicesResponse>(
        *s.inventory, &IS::ListDevices, t, v1::ListDevicesRequest());
  };
  calls[Rpc::kUpdateDevice] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::UpdateDeviceRequest r;
    r.set_request_id(request_id);
    r.set_device_id(ids.device_to_move);
    r.set_height_units(2);
    return Unary<v1::UpdateDeviceRequest, v1::Device>(*s.inventory, &IS::UpdateDevice, t, r);
  };
  calls[Rpc::kSetDeviceState] = [request_id](Suite& s, const std::string& t, const Ids& ids) {
    v1::SetDeviceStateRequest r;
    r.set_request_id(request_id);
    r.set_device_id(ids.device_to_move);
    r.set_state(v1::PROCESS_STAGING);
    return Unary<v1::SetDeviceStateRequest, v1::Device>(*s.inventory, &IS::SetDeviceState, t, r);
  };
  calls[Rpc::kDecommissionDevice] = [request_id](Suite& s, const std::string& t,
                                                 const Ids& ids) {
    v1::DecommissionDeviceRequest r;
    r.set_request_id(request_id);
    r.set_device_id(ids.device_to_move);
    return Unary<v1::DecommissionDeviceRequest, v1::Device>(*s.inventory,
                                                            &IS::DecommissionDevice, t, r);
  };
  return calls;
}

// Every row of every dcl table, hashed in one query: equal before and after means nothing was
// written.
class Fingerprint {
 public:
  explicit Fingerprint(const testing::TestDatabase& db) : conn_(db.Connect()) {
    pqxx::nontransaction tx(*conn_);
    std::string sql = "SELECT ''";
    for (const auto& row : tx.exec("SELECT tablename FROM pg_tables "
                                   "WHERE schemaname = 'public' ORDER BY tablename")) {
      const std::string table = row[0].as<std::string>();
      sql += absl::StrCat(" || '", table, "=' || (SELECT md5(coalesce(string_agg(t::text, '|' ",
                          "ORDER BY t::text), '')) FROM ", table, " t)");
    }
    sql_ = sql;
  }
  std::string Take() {
    pqxx::nontransaction tx(*conn_);
    return tx.exec1(sql_)[0].as<std::string>();
  }

 private:
  std::unique_ptr<pqxx::connection> conn_;
  std::string sql_;
};

// An organization with one of everything, created through the services themselves.
Ids Populate(testing::TestDatabase& db, Suite& suite, const std::string& org,
             const std::string& commerce, const std::string& op) {
  Ids ids;
  ids.site = testing::CreateSite(db, org, "FRA1");
  ids.rack = testing::CreateRack(db, org, ids.site, {.name = "R1"});
  ids.rack_free = testing::CreateRack(db, org, ids.site, {.name = "R2"});
  ids.device = testing::CreateDevice(db, org, ids.site);
  ids.device_to_move = testing::CreateDevice(db, org, ids.site);
  testing::CreateDevice(db, org, ids.site);  // stock for Reserve

  v1::PlaceDeviceRequest place;
  place.set_rack_id(ids.rack);
  place.set_device_id(ids.device);
  place.set_side(v1::SIDE_FRONT);
  place.set_unit(5);
  v1::Booking booking;
  REQUIRE(suite.occupancy->PlaceDevice(testing::ContextWithToken(op).get(), place, &booking).ok());
  ids.booking = booking.id();

  v1::StartMoveRequest start;
  start.set_device_id(ids.device);
  start.set_destination_rack_id(ids.rack);
  start.set_destination_side(v1::SIDE_FRONT);
  start.set_destination_unit(15);
  v1::Move move;
  REQUIRE(suite.moves->StartMove(testing::ContextWithToken(op).get(), start, &move).ok());
  ids.move = move.id();
  ids.location_record = db.Count(absl::StrCat(
      "SELECT max(id) FROM location_history WHERE device_id = '", ids.device, "'"));
  REQUIRE(ids.location_record > 0);

  v1::ReserveRequest reserve;
  ids.reservation_key = "order-1001";
  reserve.set_idempotency_key(ids.reservation_key);
  reserve.mutable_criteria()->set_site_id(ids.site);
  v1::ReserveResponse reserved;
  REQUIRE(suite.reservations->Reserve(testing::ContextWithToken(commerce).get(), reserve,
                                      &reserved).ok());
  ids.reservation = reserved.reservation().id();

  v1::CreateServiceRequest create;
  create.set_kind("dedicated");
  create.set_customer("bob");
  v1::Service service;
  REQUIRE(suite.reservations->CreateService(testing::ContextWithToken(commerce).get(), create,
                                            &service).ok());
  ids.service = service.id();
  v1::ConvertRequest convert;
  convert.mutable_reservation()->set_reservation_id(ids.reservation);
  convert.set_service_id(ids.service);
  v1::ConvertResponse converted;
  REQUIRE(suite.reservations->Convert(testing::ContextWithToken(commerce).get(), convert,
                                      &converted).ok());
  ids.binding = converted.binding().id();
  return ids;
}

// The first role that may not call `rpc`.
Role WrongRoleFor(Rpc rpc) {
  for (Role role : {Role::kCommerce, Role::kDcOperator, Role::kCustomer, Role::kAdmin}) {
    if (!RoleMayCall(role, rpc)) return role;
  }
  FAIL("every role may call " << InfoOf(rpc).full_name);
  return Role::kAdmin;
}

// The role that may call `rpc` and sees the most (commerce over customer).
Role RightRoleFor(Rpc rpc) {
  for (Role role : {Role::kCommerce, Role::kDcOperator, Role::kCustomer}) {
    if (RoleMayCall(role, rpc)) return role;
  }
  FAIL("no role may call " << InfoOf(rpc).full_name);
  return Role::kAdmin;
}

TEST_CASE("every RPC refuses strangers, wrong roles, other organizations and a switched-off "
          "module, and none of those calls writes anything") {
  testing::TestDatabase db;
  auto pool = db.MakePool(16);
  Suite suite(*pool);
  const std::string mine = testing::CreateOrg(db, "mine");
  const std::string theirs = testing::CreateOrg(db, "theirs");
  const std::string dormant = testing::CreateOrg(db, "dormant", /*module_enabled=*/false);
  std::map<std::pair<std::string, Role>, std::string> tokens;
  for (const std::string& org : {mine, theirs, dormant}) {
    for (Role role : {Role::kCommerce, Role::kDcOperator, Role::kCustomer, Role::kAdmin}) {
      tokens[{org, role}] = testing::CreateTokenFor(db, org, role, "bob");
    }
  }
  const Ids their_ids =
      Populate(db, suite, theirs, tokens[{theirs, Role::kCommerce}],
               tokens[{theirs, Role::kDcOperator}]);

  Fingerprint fingerprint(db);
  const std::map<Rpc, Call> calls = Calls();
  REQUIRE(calls.size() == kRpcCount);  // every RPC, not a sample

  // Calls that name no object of the other organization cannot be refused as NOT_FOUND: they act
  // in the caller's own organization (and are checked not to see the other's objects).
  const std::set<Rpc> org_free = {Rpc::kListReservations, Rpc::kCreateService, Rpc::kListMoves,
                                  Rpc::kCreateSite,        Rpc::kListSites,     Rpc::kListRacks,
                                  Rpc::kListDevices};

  for (const auto& [rpc, call] : calls) {
    INFO(InfoOf(rpc).full_name);
    {
      struct Attempt {
        std::string what;
        std::string token;
        grpc::StatusCode code;
        v1::Reason reason;
      };
      std::vector<Attempt> attempts = {
          {"no token", "", grpc::StatusCode::UNAUTHENTICATED, v1::UNAUTHENTICATED_CALLER},
          {"unknown token", "dcl_00000000000000000000000000000000",
           grpc::StatusCode::UNAUTHENTICATED, v1::UNAUTHENTICATED_CALLER},
          {"wrong role", tokens[{mine, WrongRoleFor(rpc)}], grpc::StatusCode::PERMISSION_DENIED,
           v1::ROLE_NOT_PERMITTED},
          {"module off", tokens[{dormant, RightRoleFor(rpc)}],
           grpc::StatusCode::FAILED_PRECONDITION, v1::MODULE_DISABLED},
      };
      if (org_free.count(rpc) == 0) {
        attempts.push_back({"other organization's ids", tokens[{mine, RightRoleFor(rpc)}],
                            grpc::StatusCode::NOT_FOUND, v1::NOT_FOUND});
      }
      for (const Attempt& attempt : attempts) {
        INFO(attempt.what);
        const std::string before = fingerprint.Take();
        grpc::Status status = call(suite, attempt.token, their_ids);
        CHECK(status.error_code() == attempt.code);
        auto detail = ErrorDetailFromGrpc(status);
        REQUIRE(detail.has_value());
        CHECK(detail->reason() == attempt.reason);
        CHECK(status.error_message().find(theirs) == std::string::npos);
        CHECK(fingerprint.Take() == before);
      }
    }
  }

  // The fingerprint does see writes: an admitted call that writes changes it.
  const std::string before = fingerprint.Take();
  REQUIRE(calls.at(Rpc::kCreateService)(suite, tokens[{mine, Role::kCommerce}], their_ids).ok());
  CHECK(fingerprint.Take() != before);
}

TEST_CASE("lists show only the caller's organization") {
  testing::TestDatabase db;
  auto pool = db.MakePool(16);
  Suite suite(*pool);
  const std::string mine = testing::CreateOrg(db, "mine");
  const std::string theirs = testing::CreateOrg(db, "theirs");
  Populate(db, suite, theirs, testing::CreateTokenFor(db, theirs, Role::kCommerce),
           testing::CreateTokenFor(db, theirs, Role::kDcOperator));
  v1::ListReservationsResponse reservations;
  REQUIRE(suite.reservations
              ->ListReservations(
                  testing::ContextWithToken(testing::CreateTokenFor(db, mine, Role::kCommerce))
                      .get(),
                  v1::ListReservationsRequest(), &reservations)
              .ok());
  CHECK(reservations.reservations_size() == 0);
  v1::ListMovesResponse moves;
  REQUIRE(suite.moves
              ->ListMoves(
                  testing::ContextWithToken(testing::CreateTokenFor(db, mine, Role::kDcOperator))
                      .get(),
                  v1::ListMovesRequest(), &moves)
              .ok());
  CHECK(moves.moves_size() == 0);
  const std::string op = testing::CreateTokenFor(db, mine, Role::kDcOperator);
  v1::ListSitesResponse sites;
  REQUIRE(suite.inventory
              ->ListSites(testing::ContextWithToken(op).get(), v1::ListSitesRequest(), &sites)
              .ok());
  CHECK(sites.sites_size() == 0);
  v1::ListRacksResponse racks;
  REQUIRE(suite.inventory
              ->ListRacks(testing::ContextWithToken(op).get(), v1::ListRacksRequest(), &racks)
              .ok());
  CHECK(racks.racks_size() == 0);
  v1::ListDevicesResponse devices;
  v1::ListDevicesRequest all;
  all.set_include_decommissioned(true);
  REQUIRE(suite.inventory->ListDevices(testing::ContextWithToken(op).get(), all, &devices).ok());
  CHECK(devices.devices_size() == 0);
}

}  // namespace
}  // namespace dcl
