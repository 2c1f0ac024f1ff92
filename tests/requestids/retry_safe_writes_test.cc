// Every write RPC of the reservation, occupancy and move services is retry-safe with a client
// request id, proven through a real in-process gRPC server, table-driven over the twelve writes:
// a retry after a lost reply (the first answer ignored, or a 1 ms client deadline) returns the
// first answer with the replay header and writes nothing again; the same id with other
// parameters is FAILED_PRECONDITION / REQUEST_ID_REUSED and writes nothing; eight concurrent
// callers with one id see one write and one answer. (The inventory's writes: tests/inventory.)
#include <google/protobuf/message.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dcl/v1/moves.grpc.pb.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "dcl/v1/reservation.grpc.pb.h"
#include "services/common/grpc_status.h"
#include "tests/support/barrier.h"
#include "tests/support/fixtures.h"
#include "tests/support/grpc_harness.h"
#include "tests/support/suite.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

using google::protobuf::Message;

// The services behind one in-process server (tests/support/suite.h); one organization with
// operator and commerce tokens; seed helpers that go through SQL fixtures or through RPCs called
// without request ids.
class World : public testing::SuiteWorld {
 public:
  World() : op(Token(Role::kDcOperator)), commerce(Token(Role::kCommerce)) {}

  int Next() { return ++serial_; }
  std::string Unique(const std::string& prefix) { return absl::StrCat(prefix, Next()); }
  std::string Site() { return testing::CreateSite(db, org, Unique("S")); }
  std::string Rack(const std::string& site) {
    testing::RackSpec spec;
    spec.name = Unique("R");
    return testing::CreateRack(db, org, site, spec);
  }
  std::string Device(const std::string& site) { return testing::CreateDevice(db, org, site); }

  v1::Booking Place(const std::string& rack, const std::string& device, int unit) {
    v1::PlaceDeviceRequest req;
    req.set_rack_id(rack);
    req.set_device_id(device);
    req.set_side(v1::SIDE_FRONT);
    req.set_unit(unit);
    v1::Booking booking;
    grpc::Status s = occupancy->PlaceDevice(testing::ContextWithToken(op).get(), req, &booking);
    INFO(s.error_message());
    REQUIRE(s.ok());
    return booking;
  }

  // A held reservation of the only device of a new site.
  std::string HeldReservation() {
    const std::string site = Site();
    Device(site);
    v1::ReserveRequest req;
    req.set_idempotency_key(Unique("order-"));
    req.mutable_criteria()->set_site_id(site);
    v1::ReserveResponse resp;
    grpc::Status s = reservations->Reserve(testing::ContextWithToken(commerce).get(), req, &resp);
    INFO(s.error_message());
    REQUIRE(s.ok());
    return resp.reservation().id();
  }

  std::string Service() {
    v1::CreateServiceRequest req;
    req.set_kind("dedicated");
    req.set_customer(Unique("customer-"));
    v1::Service service;
    grpc::Status s =
        reservations->CreateService(testing::ContextWithToken(commerce).get(), req, &service);
    INFO(s.error_message());
    REQUIRE(s.ok());
    return service.id();
  }

  std::string Binding() {
    v1::ConvertRequest req;
    req.mutable_reservation()->set_reservation_id(HeldReservation());
    req.set_service_id(Service());
    v1::ConvertResponse resp;
    grpc::Status s = reservations->Convert(testing::ContextWithToken(commerce).get(), req, &resp);
    INFO(s.error_message());
    REQUIRE(s.ok());
    return resp.binding().id();
  }

  // A device placed in one rack and a second rack of the same site to move it to.
  struct Movable {
    std::string device, destination_rack;
  };
  Movable PlacedDevice() {
    const std::string site = Site();
    const std::string source = Rack(site);
    Movable m{Device(site), Rack(site)};
    Place(source, m.device, 10);
    return m;
  }

  std::string PlannedMove() {
    const Movable m = PlacedDevice();
    v1::StartMoveRequest req;
    req.set_device_id(m.device);
    req.set_destination_rack_id(m.destination_rack);
    req.set_destination_side(v1::SIDE_FRONT);
    req.set_destination_unit(20);
    v1::Move move;
    grpc::Status s = moves->StartMove(testing::ContextWithToken(op).get(), req, &move);
    INFO(s.error_message());
    REQUIRE(s.ok());
    return move.id();
  }

 private:
  int serial_ = 0;

 public:
  std::string op, commerce;
};

// One write RPC as the table sees it: any request message in, status and serialized answer out.
using CallFn =
    std::function<grpc::Status(World&, grpc::ClientContext*, const Message&, std::string* answer)>;

template <typename Stub, typename Req, typename Resp>
CallFn Via(std::unique_ptr<Stub> testing::InProcessSuite::*stub,
           grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*)) {
  return
      [stub, method](World& w, grpc::ClientContext* ctx, const Message& req, std::string* answer) {
        Resp resp;
        grpc::Status s = ((w.*stub).get()->*method)(ctx, static_cast<const Req&>(req), &resp);
        *answer = resp.SerializeAsString();
        return s;
      };
}

struct WriteCase {
  std::string rpc;
  bool commerce;  // the token: commerce, else operator
  // Seeds what one call needs (fresh each time) and returns its request, without a request id.
  std::function<std::unique_ptr<Message>(World&)> prepare;
  // Changes a parameter of the request (to one the write would also accept on its own).
  std::function<void(World&, Message*)> vary;
  CallFn call;
};

template <typename Req>
Req& As(Message* m) {
  return *static_cast<Req*>(m);
}

std::vector<WriteCase> AllWrites() {
  using OS = v1::OccupancyService::Stub;
  using RS = v1::ReservationService::Stub;
  using MS = v1::MoveService::Stub;
  std::vector<WriteCase> cases;
  cases.push_back({"CreateService", true,
                   [](World& w) {
                     auto r = std::make_unique<v1::CreateServiceRequest>();
                     r->set_kind("dedicated");
                     r->set_customer(w.Unique("customer-"));
                     return std::unique_ptr<Message>(std::move(r));
                   },
                   [](World&, Message* m) { As<v1::CreateServiceRequest>(m).set_kind("vps"); },
                   Via(&World::reservations, &RS::CreateService)});
  cases.push_back(
      {"Convert", true,
       [](World& w) {
         auto r = std::make_unique<v1::ConvertRequest>();
         r->mutable_reservation()->set_reservation_id(w.HeldReservation());
         r->set_service_id(w.Service());
         return std::unique_ptr<Message>(std::move(r));
       },
       [](World& w, Message* m) { As<v1::ConvertRequest>(m).set_service_id(w.Service()); },
       Via(&World::reservations, &RS::Convert)});
  cases.push_back({"Cancel", true,
                   [](World& w) {
                     auto r = std::make_unique<v1::CancelRequest>();
                     r->mutable_reservation()->set_reservation_id(w.HeldReservation());
                     r->set_reason("customer changed their mind");
                     return std::unique_ptr<Message>(std::move(r));
                   },
                   [](World&, Message* m) { As<v1::CancelRequest>(m).set_reason("duplicate"); },
                   Via(&World::reservations, &RS::Cancel)});
  cases.push_back(
      {"EndBinding", true,
       [](World& w) {
         auto r = std::make_unique<v1::EndBindingRequest>();
         r->set_binding_id(w.Binding());
         return std::unique_ptr<Message>(std::move(r));
       },
       [](World& w, Message* m) { As<v1::EndBindingRequest>(m).set_binding_id(w.Binding()); },
       Via(&World::reservations, &RS::EndBinding)});
  cases.push_back({"PlaceDevice", false,
                   [](World& w) {
                     const std::string site = w.Site();
                     auto r = std::make_unique<v1::PlaceDeviceRequest>();
                     r->set_rack_id(w.Rack(site));
                     r->set_device_id(w.Device(site));
                     r->set_side(v1::SIDE_FRONT);
                     r->set_unit(5);
                     return std::unique_ptr<Message>(std::move(r));
                   },
                   [](World&, Message* m) { As<v1::PlaceDeviceRequest>(m).set_unit(7); },
                   Via(&World::occupancy, &OS::PlaceDevice)});
  cases.push_back({"BlockUnits", false,
                   [](World& w) {
                     auto r = std::make_unique<v1::BlockUnitsRequest>();
                     r->set_rack_id(w.Rack(w.Site()));
                     r->set_side(v1::SIDE_FRONT);
                     r->set_first_unit(1);
                     r->set_last_unit(2);
                     r->set_reason("cable tray");
                     return std::unique_ptr<Message>(std::move(r));
                   },
                   [](World&, Message* m) { As<v1::BlockUnitsRequest>(m).set_last_unit(3); },
                   Via(&World::occupancy, &OS::BlockUnits)});
  cases.push_back({"ReserveUnits", false,
                   [](World& w) {
                     auto r = std::make_unique<v1::ReserveUnitsRequest>();
                     r->set_rack_id(w.Rack(w.Site()));
                     r->set_side(v1::SIDE_FRONT);
                     r->set_first_unit(30);
                     r->set_last_unit(31);
                     r->set_reason("incoming order");
                     return std::unique_ptr<Message>(std::move(r));
                   },
                   [](World&, Message* m) { As<v1::ReserveUnitsRequest>(m).set_first_unit(29); },
                   Via(&World::occupancy, &OS::ReserveUnits)});
  cases.push_back({"ReleaseBooking", false,
                   [](World& w) {
                     const std::string site = w.Site();
                     auto r = std::make_unique<v1::ReleaseBookingRequest>();
                     r->set_booking_id(w.Place(w.Rack(site), w.Device(site), 3).id());
                     r->set_reason("decommissioned");
                     return std::unique_ptr<Message>(std::move(r));
                   },
                   [](World&, Message* m) { As<v1::ReleaseBookingRequest>(m).set_reason("moved"); },
                   Via(&World::occupancy, &OS::ReleaseBooking)});
  cases.push_back({"StartMove", false,
                   [](World& w) {
                     const World::Movable mv = w.PlacedDevice();
                     auto r = std::make_unique<v1::StartMoveRequest>();
                     r->set_device_id(mv.device);
                     r->set_destination_rack_id(mv.destination_rack);
                     r->set_destination_side(v1::SIDE_FRONT);
                     r->set_destination_unit(20);
                     return std::unique_ptr<Message>(std::move(r));
                   },
                   [](World&, Message* m) { As<v1::StartMoveRequest>(m).set_destination_unit(22); },
                   Via(&World::moves, &MS::StartMove)});
  cases.push_back(
      {"AdvanceMove", false,
       [](World& w) {
         auto r = std::make_unique<v1::AdvanceMoveRequest>();
         r->set_move_id(w.PlannedMove());
         r->set_target(v1::MOVE_APPROVED);
         return std::unique_ptr<Message>(std::move(r));
       },
       [](World&, Message* m) { As<v1::AdvanceMoveRequest>(m).set_target(v1::MOVE_DRAFT); },
       Via(&World::moves, &MS::AdvanceMove)});
  cases.push_back({"CancelMove", false,
                   [](World& w) {
                     auto r = std::make_unique<v1::CancelMoveRequest>();
                     r->set_move_id(w.PlannedMove());
                     r->set_note("not needed");
                     return std::unique_ptr<Message>(std::move(r));
                   },
                   [](World&, Message* m) { As<v1::CancelMoveRequest>(m).set_note("other"); },
                   Via(&World::moves, &MS::CancelMove)});
  cases.push_back(
      {"CorrectLocation", false,
       [](World& w) {
         const std::string move = w.PlannedMove();
         auto r = std::make_unique<v1::CorrectLocationRequest>();
         r->set_corrects_id(w.db.Count(
             absl::StrCat("SELECT max(id) FROM location_history WHERE move_id = '", move, "'")));
         r->set_reason("the audit found it elsewhere");
         r->set_position_unknown(true);
         return std::unique_ptr<Message>(std::move(r));
       },
       [](World&, Message* m) { As<v1::CorrectLocationRequest>(m).set_reason("another audit"); },
       Via(&World::moves, &MS::CorrectLocation)});
  return cases;
}

// Everything a write of these services can touch, row by row: equal before and after a retry
// means the retry wrote nothing.
std::string Fingerprint(World& w) {
  std::string sql = "SELECT ''";
  for (const char* table : {"services", "reservations", "service_bindings", "bookings", "moves",
                            "move_events", "location_history", "jobs", "devices"}) {
    absl::StrAppend(&sql, " || '/", table, ":' || (SELECT count(*) || md5(coalesce(string_agg(",
                    "t::text, '|' ORDER BY t::text), '')) FROM ", table, " t)");
  }
  return w.db.Scalar(sql);
}

std::string NewRequestId(World& w) {
  return absl::StrCat("7e570000-0000-4000-8000-", 100000000000 + w.Next());
}

void SetRequestId(Message* m, const std::string& id) {
  const auto* field = m->GetDescriptor()->FindFieldByName("request_id");
  REQUIRE(field != nullptr);
  m->GetReflection()->SetString(m, field, id);
}

struct Outcome {
  grpc::Status status;
  std::string answer;
  bool replay = false;
};

Outcome Call(World& w, const WriteCase& c, const Message& req) {
  std::unique_ptr<grpc::ClientContext> ctx =
      testing::ContextWithToken(c.commerce ? w.commerce : w.op);
  Outcome out;
  out.status = c.call(w, ctx.get(), req, &out.answer);
  out.replay = testing::Replayed(*ctx);
  return out;
}

int64_t LedgerRows(World& w, const std::string& id) {
  return w.db.Count(
      absl::StrCat("SELECT count(*) FROM client_requests WHERE request_id = '", id, "'"));
}

TEST_CASE(
    "every write RPC: a retry with the same request id after a lost reply returns the first "
    "answer with the replay header and writes nothing again") {
  World w;
  for (const WriteCase& c : AllWrites()) {
    SECTION(c.rpc) {
      std::unique_ptr<Message> req = c.prepare(w);
      const std::string id = NewRequestId(w);
      SetRequestId(req.get(), id);
      const Outcome first = Call(w, c, *req);  // its reply is "lost": the client retries
      INFO(c.rpc << ": " << first.status.error_message());
      REQUIRE(first.status.ok());
      CHECK_FALSE(first.replay);
      const std::string after_first = Fingerprint(w);
      const Outcome retry = Call(w, c, *req);
      INFO("retry: " << retry.status.error_message());
      REQUIRE(retry.status.ok());
      CHECK(retry.replay);
      CHECK(retry.answer == first.answer);
      CHECK(Fingerprint(w) == after_first);
      CHECK(LedgerRows(w, id) == 1);
    }
  }
}

TEST_CASE(
    "every write RPC: a client that gave up after 1 ms retries once; the server's commit "
    "and the retry make one write") {
  World w;
  for (const WriteCase& c : AllWrites()) {
    SECTION(c.rpc) {
      std::unique_ptr<Message> req = c.prepare(w);
      const std::string id = NewRequestId(w);
      SetRequestId(req.get(), id);
      const std::string before = Fingerprint(w);
      grpc::ClientContext hasty;
      hasty.AddMetadata("authorization", "Bearer " + (c.commerce ? w.commerce : w.op));
      hasty.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1));
      std::string ignored;
      const grpc::Status gave_up = c.call(w, &hasty, *req, &ignored);
      // Wait for the server's side of the abandoned call to commit (it runs on although the
      // client left); a server that dropped the call before running it writes nothing at all,
      // and so does one whose commit comes after the 1 ms deadline: the database refuses it
      // (DEADLINE_EXCEEDED CALLER_DEADLINE_PASSED, migration 0030), so a retry runs afresh.
      std::string after_first = Fingerprint(w);
      for (int i = 0; i < 100 && after_first == before; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        after_first = Fingerprint(w);
      }
      const Outcome retry = Call(w, c, *req);
      INFO(c.rpc << ": first " << gave_up.error_code() << " " << gave_up.error_message()
                 << "; retry " << retry.status.error_message());
      REQUIRE(retry.status.ok());
      if (after_first != before) {
        // The abandoned call committed: the retry is its replay.
        CHECK(retry.replay);
        CHECK(Fingerprint(w) == after_first);
      }
      const std::string settled = Fingerprint(w);
      const Outcome third = Call(w, c, *req);
      REQUIRE(third.status.ok());
      CHECK(third.replay);
      CHECK(third.answer == retry.answer);
      CHECK(Fingerprint(w) == settled);
      CHECK(LedgerRows(w, id) == 1);
    }
  }
}

TEST_CASE(
    "every write RPC: the same request id with other parameters is FAILED_PRECONDITION "
    "REQUEST_ID_REUSED and writes nothing") {
  World w;
  for (const WriteCase& c : AllWrites()) {
    SECTION(c.rpc) {
      std::unique_ptr<Message> req = c.prepare(w);
      const std::string id = NewRequestId(w);
      SetRequestId(req.get(), id);
      const Outcome first = Call(w, c, *req);
      INFO(c.rpc << ": " << first.status.error_message());
      REQUIRE(first.status.ok());
      std::unique_ptr<Message> other(req->New());
      other->CopyFrom(*req);
      c.vary(w, other.get());
      const std::string before = Fingerprint(w);
      const Outcome reused = Call(w, c, *other);
      INFO("reused: " << reused.status.error_message());
      CHECK(reused.status.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
      auto detail = ErrorDetailFromGrpc(reused.status);
      REQUIRE(detail.has_value());
      CHECK(detail->reason() == v1::REQUEST_ID_REUSED);
      CHECK(detail->metadata().at("request_id") == id);
      CHECK(Fingerprint(w) == before);
    }
  }
}

TEST_CASE(
    "every write RPC: eight concurrent calls with one request id make one write; every "
    "caller gets the same answer, seven of them flagged as replays") {
  World w;
  constexpr int kCallers = 8;
  for (const WriteCase& c : AllWrites()) {
    SECTION(c.rpc) {
      std::unique_ptr<Message> req = c.prepare(w);
      const std::string id = NewRequestId(w);
      SetRequestId(req.get(), id);
      testing::Barrier barrier(kCallers);
      std::vector<Outcome> outcomes(kCallers);
      std::vector<std::thread> threads;
      for (int i = 0; i < kCallers; ++i) {
        threads.emplace_back([&, i] {
          barrier.ArriveAndWait();
          outcomes[i] = Call(w, c, *req);
        });
      }
      for (std::thread& t : threads) t.join();
      int ok = 0, flagged = 0;
      std::string first_answer;
      for (const Outcome& o : outcomes) {
        INFO(c.rpc << ": " << o.status.error_code() << " " << o.status.error_message());
        CHECK(o.status.ok());
        if (!o.status.ok()) continue;
        ++ok;
        flagged += o.replay ? 1 : 0;
        if (first_answer.empty()) first_answer = o.answer;
        CHECK(o.answer == first_answer);
      }
      CHECK(ok == kCallers);
      CHECK(flagged == kCallers - 1);
      CHECK(LedgerRows(w, id) == 1);
      // One write: a call with the same id now changes nothing and replays the same answer.
      const std::string settled = Fingerprint(w);
      const Outcome after = Call(w, c, *req);
      CHECK(after.replay);
      CHECK(after.answer == first_answer);
      CHECK(Fingerprint(w) == settled);
    }
  }
}

TEST_CASE("Convert refused with HOLD_EXPIRED commits the expiry but keeps no claim; the same id "
          "then answers what the reservation is now, never a stored success") {
  World w;
  const std::string reservation = w.HeldReservation();
  w.db.Exec(
      absl::StrCat("UPDATE reservations SET created_at = now() - interval '1 hour', "
                   "expires_at = now() - interval '1 second' WHERE id = '",
                   reservation, "'"));
  v1::ConvertRequest req;
  req.set_request_id("c0a7e5ed-0000-4000-8000-000000000001");
  req.mutable_reservation()->set_reservation_id(reservation);
  req.set_service_id(w.Service());
  WriteCase convert = AllWrites()[1];
  REQUIRE(convert.rpc == "Convert");
  const Outcome refused = Call(w, convert, req);
  INFO(refused.status.error_message());
  REQUIRE(ErrorDetailFromGrpc(refused.status).has_value());
  CHECK(ErrorDetailFromGrpc(refused.status)->reason() == v1::HOLD_EXPIRED);
  CHECK(w.db.Scalar(absl::StrCat("SELECT state FROM reservations WHERE id = '", reservation,
                                 "'")) == "expired");
  CHECK(LedgerRows(w, req.request_id()) == 0);
  const Outcome again = Call(w, convert, req);
  CHECK(ErrorDetailFromGrpc(again.status)->reason() == v1::HOLD_EXPIRED);
  CHECK_FALSE(again.replay);
  CHECK(LedgerRows(w, req.request_id()) == 0);
}

}  // namespace
}  // namespace dcl
