#include "services/admin/commands.h"

#include <fcntl.h>
#include <google/protobuf/struct.pb.h>
#include <grpcpp/grpcpp.h>
#include <openssl/rand.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dcl/v1/inventory.grpc.pb.h"
#include "dcl/v1/moves.grpc.pb.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "dcl/v1/reservation.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "services/admin/cli_format.h"
#include "services/admin/db_commands.h"
#include "services/admin/delivery_commands.h"
#include "services/admin/grpc_client.h"
#include "services/admin/netbox_import.h"
#include "services/admin/rack_elevation.h"
#include "services/admin/text_table.h"
#include "services/common/grpc_status.h"

// Where the calls go (grpc_client.h has the order of precedence).
ABSL_FLAG(std::string, target, "",
          "host:port of every service (else $DCL_TARGET; default per service: "
          "127.0.0.1:50051 reservation, :50052 occupancy, :50053 moves)");
ABSL_FLAG(std::string, token, "", "bearer token for every service (else $DCL_TOKEN)");
ABSL_FLAG(std::string, reservation_target, "",
          "ReservationService host:port (else --target, $DCL_RESERVATION_TARGET)");
ABSL_FLAG(std::string, reservation_token, "",
          "token for ReservationService, a commerce token (else --token, $DCL_RESERVATION_TOKEN)");
ABSL_FLAG(std::string, occupancy_target, "",
          "OccupancyService host:port (else --target, $DCL_OCCUPANCY_TARGET)");
ABSL_FLAG(std::string, occupancy_token, "",
          "token for OccupancyService (else --token, $DCL_OCCUPANCY_TOKEN)");
ABSL_FLAG(std::string, moves_target, "",
          "MoveService host:port (else --target, $DCL_MOVES_TARGET)");
ABSL_FLAG(std::string, moves_token, "", "token for MoveService (else --token, $DCL_MOVES_TOKEN)");
ABSL_FLAG(std::string, tls_ca, "", "PEM file of the CA that signed the servers' certificates: TLS");
ABSL_FLAG(std::string, tls_client_cert, "", "with --tls_ca: PEM client certificate (mutual TLS)");
ABSL_FLAG(std::string, tls_client_key, "", "with --tls_client_cert: its PEM private key");
ABSL_FLAG(int, deadline_seconds, 15, "how long one call may take (streams: no limit)");
// Output.
ABSL_FLAG(bool, json, false, "print answers as JSON (protobuf's mapping, .proto field names)");
ABSL_FLAG(std::string, svg, "", "rack show: also write the elevation as an SVG picture here");
// What to book or move. Units are text so that a missing one differs from unit 0.
ABSL_FLAG(std::string, rack, "", "rack id");
ABSL_FLAG(std::string, device, "", "device id");
ABSL_FLAG(std::string, side, "", "front or rear");
ABSL_FLAG(std::string, unit, "", "place, move start: the device's lowest rack unit");
ABSL_FLAG(std::string, first, "", "block, reserve-units, plan: first unit of the range");
ABSL_FLAG(std::string, last, "", "block, reserve-units, plan: last unit of the range");
ABSL_FLAG(bool, both_sides, false, "block, reserve-units, plan: front and rear");
ABSL_FLAG(std::string, kind, "placement", "plan: placement, blocking, reservation or move_hold");
ABSL_FLAG(int, ttl_seconds, 0,
          "reserve-units: how long the units stay reserved (0: server default)");
ABSL_FLAG(std::string, reason, "", "why (recorded with the booking or its release)");
ABSL_FLAG(bool, draft, false, "move start: start as a draft instead of planned");
ABSL_FLAG(std::string, note, "", "move: a note recorded with the change");
ABSL_FLAG(std::string, to, "", "move advance: the target state (approved, in_progress …)");
ABSL_FLAG(std::string, observation, "",
          "move advance from needs_reconcile: found_at_destination or not_moved");
// Lists.
ABSL_FLAG(std::string, state, "",
          "move list, reservation list, device list: only this state; device register "
          "(default staging), device set-state: normal or staging");
ABSL_FLAG(std::string, key, "", "reservation show: the order's idempotency key instead of an id");
ABSL_FLAG(int, limit, 100, "lists: at most this many rows");
ABSL_FLAG(std::string, page_token, "", "lists: continue after an earlier answer's next_page_token");
// Inventory.
ABSL_FLAG(std::string, site, "", "site id (device register, rack create; a filter of lists)");
// --name (org create, site create, rack create) is defined by db_commands.cc.
ABSL_DECLARE_FLAG(std::string, name);
ABSL_FLAG(std::string, vendor, "", "device register; device list: only this vendor");
ABSL_FLAG(std::string, model, "", "device register; device list: only this model");
ABSL_FLAG(std::string, profile, "",
          "device register: hardware profile; device list: only this one");
ABSL_FLAG(std::string, serial, "", "device register: the serial number (unique per organization)");
ABSL_FLAG(std::string, height, "",
          "device register: units high (1..20); rack create: units (1..100)");
ABSL_FLAG(std::string, depth, "unknown",
          "device register: full, half or unknown (claims both sides)");
ABSL_FLAG(std::string, power, "", "device register: power draw in watts (absent: unknown)");
ABSL_FLAG(std::string, weight, "", "device register: weight in kg (absent: unknown)");
ABSL_FLAG(std::string, first_unit, "1", "rack create: the number of its first unit");
ABSL_FLAG(bool, descending, false, "rack create: numbers grow from the top down");
ABSL_FLAG(bool, front_only, false, "rack create: an open frame, no rear side");
ABSL_FLAG(bool, all, false, "device list: include decommissioned devices");
ABSL_FLAG(std::string, request_id, "",
          "writes: retry-safe request id (any text; the same text replays the first answer); "
          "default a fresh random one");
// Import.
ABSL_FLAG(std::string, dir, "", "import netbox: the directory of the saved NetBox list responses");
ABSL_FLAG(std::string, site_map, "",
          "import netbox: NETBOX_SITE=DCL_SITE,… (slug or name → the dcl site name)");
ABSL_FLAG(bool, dry_run, false, "import netbox: show what would change, write nothing");
// Health.
ABSL_FLAG(std::string, service, "", "health check: a service name (default: the whole server)");

namespace dcl::admin {
namespace {

// A mistake on the command line: printed with the command's usage, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Invocation {
  std::string name;               // "move advance"
  std::vector<std::string> args;  // positional arguments after the command's words
  ClientOptions client;
  bool json = false;
};

void PrintLines(const std::vector<std::string>& lines) {
  for (const std::string& line : lines) std::printf("%s\n", line.c_str());
}

// --- Reading flags -------------------------------------------------------------------------

std::string Required(const absl::Flag<std::string>& flag, const char* name) {
  std::string value = absl::GetFlag(flag);
  if (value.empty()) throw UsageError(absl::StrCat("--", name, " is required"));
  return value;
}

int RequiredInt(const absl::Flag<std::string>& flag, const char* name) {
  const std::string text = Required(flag, name);
  int value = 0;
  if (!absl::SimpleAtoi(text, &value)) {
    throw UsageError(absl::StrCat("--", name, " must be a whole number, not \"", text, "\""));
  }
  return value;
}

v1::Side RequiredSide() {
  v1::Side side;
  const std::string text = Required(FLAGS_side, "side");
  if (!ParseSide(text, &side))
    throw UsageError("--side must be front or rear, not \"" + text + "\"");
  return side;
}

// --side or --both_sides, for ranges.
v1::Side SideOrBoth() {
  if (absl::GetFlag(FLAGS_both_sides)) {
    if (!absl::GetFlag(FLAGS_side).empty())
      throw UsageError("--side and --both_sides exclude each other");
    return v1::SIDE_UNSPECIFIED;
  }
  if (absl::GetFlag(FLAGS_side).empty()) throw UsageError("--side or --both_sides is required");
  return RequiredSide();
}

v1::MoveState OptionalMoveState() {
  v1::MoveState state = v1::MOVE_STATE_UNSPECIFIED;
  const std::string text = absl::GetFlag(FLAGS_state);
  if (!text.empty() && !ParseMoveState(text, &state)) {
    throw UsageError("--state: unknown move state \"" + text + "\"");
  }
  return state;
}

// --- Calling -------------------------------------------------------------------------------

// The failure of a call on stderr (readable, or JSON under --json); returns its exit status.
int ReportFailure(const Invocation& inv, const grpc::Status& status) {
  if (inv.json) {
    std::fprintf(stderr, "%s\n", ErrorJson(status).c_str());
  } else {
    for (const std::string& line : DescribeError(status)) {
      std::fprintf(stderr, "dclctl %s: %s\n", inv.name.c_str(), line.c_str());
    }
  }
  return ExitCodeFor(status.error_code());
}

template <typename Grpc>
std::unique_ptr<typename Grpc::Stub> StubFor(const Invocation& inv, Service service) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      MakeChannel(inv.client, inv.client.For(service).target);
  if (!channel.ok()) throw UsageError(std::string(channel.status().message()));
  return Grpc::NewStub(*channel);
}

// One unary call: `call(context, response)` against the service; on success prints the answer
// (JSON, or `text(response)`), on failure the refusal. Returns the exit status.
template <typename Response>
int Unary(const Invocation& inv, Service service,
          const std::function<grpc::Status(grpc::ClientContext*, Response*)>& call,
          const std::function<std::vector<std::string>(const Response&)>& text) {
  Response response;
  std::unique_ptr<grpc::ClientContext> context = MakeContext(inv.client, service);
  const grpc::Status status = call(context.get(), &response);
  if (!status.ok()) return ReportFailure(inv, status);
  if (inv.json) {
    std::printf("%s\n", ToJson(response).c_str());
  } else {
    PrintLines(text(response));
  }
  return kExitOk;
}

// --- Racks and bookings (OccupancyService) -------------------------------------------------

DeviceLabels LabelsFor(const Invocation& inv, const v1::Rack& rack);

int RackShow(Invocation& inv) {
  auto stub = StubFor<v1::OccupancyService>(inv, Service::kOccupancy);
  v1::GetRackRequest req;
  req.set_rack_id(inv.args[0]);
  v1::Rack rack;
  auto context = MakeContext(inv.client, Service::kOccupancy);
  const grpc::Status status = stub->GetRack(context.get(), req, &rack);
  if (!status.ok()) return ReportFailure(inv, status);
  const DeviceLabels labels = inv.json ? DeviceLabels{} : LabelsFor(inv, rack);
  const std::string svg_path = absl::GetFlag(FLAGS_svg);
  if (!svg_path.empty()) {
    std::ofstream out(svg_path, std::ios::binary | std::ios::trunc);
    out << RackElevationSvg(rack, labels);
    out.close();
    if (!out) {
      std::fprintf(stderr, "dclctl rack show: cannot write %s\n", svg_path.c_str());
      return kExitOther;
    }
  }
  if (inv.json) {
    std::printf("%s\n", ToJson(rack).c_str());
  } else if (!svg_path.empty()) {
    std::printf("wrote the elevation of rack %s to %s\n", rack.name().c_str(), svg_path.c_str());
  } else {
    PrintLines(RackElevationText(rack, labels));
  }
  return kExitOk;
}

int RackCapacity(Invocation& inv) {
  auto stub = StubFor<v1::OccupancyService>(inv, Service::kOccupancy);
  v1::GetRackCapacityRequest req;
  req.set_rack_id(inv.args[0]);
  return Unary<v1::RackCapacity>(
      inv, Service::kOccupancy,
      [&](grpc::ClientContext* c, v1::RackCapacity* r) { return stub->GetRackCapacity(c, req, r); },
      CapacityText);
}

std::string WriteRequestId();  // below, with the inventory commands

int Place(Invocation& inv) {
  v1::PlaceDeviceRequest req;
  req.set_request_id(WriteRequestId());
  req.set_rack_id(Required(FLAGS_rack, "rack"));
  req.set_device_id(Required(FLAGS_device, "device"));
  req.set_side(RequiredSide());
  req.set_unit(RequiredInt(FLAGS_unit, "unit"));
  req.set_reason(absl::GetFlag(FLAGS_reason));
  auto stub = StubFor<v1::OccupancyService>(inv, Service::kOccupancy);
  return Unary<v1::Booking>(
      inv, Service::kOccupancy,
      [&](grpc::ClientContext* c, v1::Booking* r) { return stub->PlaceDevice(c, req, r); },
      BookingText);
}

// The range and sides of a block or a reservation of units, from the flags.
template <typename Request>
void FillRange(Request& req) {
  req.set_rack_id(Required(FLAGS_rack, "rack"));
  const v1::Side side = SideOrBoth();
  req.set_side(side);
  req.set_both_sides(side == v1::SIDE_UNSPECIFIED);
  req.set_first_unit(RequiredInt(FLAGS_first, "first"));
  req.set_last_unit(RequiredInt(FLAGS_last, "last"));
  req.set_reason(absl::GetFlag(FLAGS_reason));
}

int Block(Invocation& inv) {
  v1::BlockUnitsRequest req;
  req.set_request_id(WriteRequestId());
  FillRange(req);
  auto stub = StubFor<v1::OccupancyService>(inv, Service::kOccupancy);
  return Unary<v1::Booking>(
      inv, Service::kOccupancy,
      [&](grpc::ClientContext* c, v1::Booking* r) { return stub->BlockUnits(c, req, r); },
      BookingText);
}

int ReserveUnits(Invocation& inv) {
  v1::ReserveUnitsRequest req;
  req.set_request_id(WriteRequestId());
  FillRange(req);
  req.set_ttl_seconds(absl::GetFlag(FLAGS_ttl_seconds));
  auto stub = StubFor<v1::OccupancyService>(inv, Service::kOccupancy);
  return Unary<v1::Booking>(
      inv, Service::kOccupancy,
      [&](grpc::ClientContext* c, v1::Booking* r) { return stub->ReserveUnits(c, req, r); },
      BookingText);
}

int Release(Invocation& inv) {
  v1::ReleaseBookingRequest req;
  req.set_request_id(WriteRequestId());
  req.set_booking_id(inv.args[0]);
  req.set_reason(absl::GetFlag(FLAGS_reason));
  auto stub = StubFor<v1::OccupancyService>(inv, Service::kOccupancy);
  return Unary<v1::Booking>(
      inv, Service::kOccupancy,
      [&](grpc::ClientContext* c, v1::Booking* r) { return stub->ReleaseBooking(c, req, r); },
      BookingText);
}

// A dry run: what a booking would claim, or why it would be refused (then exit status 4, as
// the booking itself would end).
int Plan(Invocation& inv) {
  v1::PlanBookingRequest req;
  v1::BookingRequest& b = *req.mutable_booking();
  v1::BookingKind kind;
  const std::string kind_text = absl::GetFlag(FLAGS_kind);
  if (!ParseBookingKind(kind_text, &kind)) {
    throw UsageError("--kind must be placement, blocking, reservation or move_hold, not \"" +
                     kind_text + "\"");
  }
  b.set_kind(kind);
  b.set_rack_id(Required(FLAGS_rack, "rack"));
  b.set_reason(absl::GetFlag(FLAGS_reason));
  if (kind == v1::BOOKING_PLACEMENT) {
    b.set_device_id(Required(FLAGS_device, "device"));
    b.set_side(RequiredSide());
    b.set_first_unit(RequiredInt(FLAGS_unit, "unit"));
  } else {
    b.set_device_id(absl::GetFlag(FLAGS_device));
    const v1::Side side = SideOrBoth();
    b.set_side(side);
    b.set_both_sides(side == v1::SIDE_UNSPECIFIED);
    b.set_first_unit(RequiredInt(FLAGS_first, "first"));
    b.set_last_unit(RequiredInt(FLAGS_last, "last"));
  }
  auto stub = StubFor<v1::OccupancyService>(inv, Service::kOccupancy);
  v1::PlanBookingResponse plan;
  const int exit = Unary<v1::PlanBookingResponse>(
      inv, Service::kOccupancy,
      [&](grpc::ClientContext* c, v1::PlanBookingResponse* r) {
        const grpc::Status s = stub->PlanBooking(c, req, r);
        plan = *r;
        return s;
      },
      PlanText);
  if (exit != kExitOk) return exit;
  return plan.ok() ? kExitOk : kExitRefused;
}

// --- Moves (MoveService) -------------------------------------------------------------------

int MoveStart(Invocation& inv) {
  v1::StartMoveRequest req;
  req.set_request_id(WriteRequestId());
  req.set_device_id(Required(FLAGS_device, "device"));
  req.set_destination_rack_id(Required(FLAGS_rack, "rack"));
  req.set_destination_side(RequiredSide());
  req.set_destination_unit(RequiredInt(FLAGS_unit, "unit"));
  req.set_as_draft(absl::GetFlag(FLAGS_draft));
  req.set_note(absl::GetFlag(FLAGS_note));
  auto stub = StubFor<v1::MoveService>(inv, Service::kMoves);
  return Unary<v1::Move>(
      inv, Service::kMoves,
      [&](grpc::ClientContext* c, v1::Move* r) { return stub->StartMove(c, req, r); }, MoveText);
}

int MoveAdvance(Invocation& inv) {
  v1::AdvanceMoveRequest req;
  req.set_request_id(WriteRequestId());
  req.set_move_id(inv.args[0]);
  v1::MoveState target;
  const std::string to = Required(FLAGS_to, "to");
  if (!ParseMoveState(to, &target)) throw UsageError("--to: unknown move state \"" + to + "\"");
  req.set_target(target);
  const std::string observation_text = absl::GetFlag(FLAGS_observation);
  if (!observation_text.empty()) {
    v1::Observation observation;
    if (!ParseObservation(observation_text, &observation)) {
      throw UsageError("--observation must be found_at_destination or not_moved");
    }
    req.set_observation(observation);
  }
  req.set_note(absl::GetFlag(FLAGS_note));
  auto stub = StubFor<v1::MoveService>(inv, Service::kMoves);
  return Unary<v1::Move>(
      inv, Service::kMoves,
      [&](grpc::ClientContext* c, v1::Move* r) { return stub->AdvanceMove(c, req, r); }, MoveText);
}

int MoveCancel(Invocation& inv) {
  v1::CancelMoveRequest req;
  req.set_request_id(WriteRequestId());
  req.set_move_id(inv.args[0]);
  req.set_note(absl::GetFlag(FLAGS_note));
  auto stub = StubFor<v1::MoveService>(inv, Service::kMoves);
  return Unary<v1::Move>(
      inv, Service::kMoves,
      [&](grpc::ClientContext* c, v1::Move* r) { return stub->CancelMove(c, req, r); }, MoveText);
}

int MoveShow(Invocation& inv) {
  v1::GetMoveRequest req;
  req.set_move_id(inv.args[0]);
  auto stub = StubFor<v1::MoveService>(inv, Service::kMoves);
  return Unary<v1::Move>(
      inv, Service::kMoves,
      [&](grpc::ClientContext* c, v1::Move* r) { return stub->GetMove(c, req, r); }, MoveText);
}

// Pages through a list until --limit rows or the end; `page(token, size, response)` fetches one
// page. The answer keeps the last page's next_page_token (--page_token continues from it).
template <typename Response>
grpc::Status CollectPages(const Invocation& inv, Service service, Response* all,
                          const std::function<void(Response&, const Response&)>& append,
                          const std::function<int(const Response&)>& count,
                          const std::function<grpc::Status(grpc::ClientContext*, const std::string&,
                                                           int, Response*)>& page) {
  const int limit = std::max(1, absl::GetFlag(FLAGS_limit));
  std::string token = absl::GetFlag(FLAGS_page_token);
  while (true) {
    Response one;
    auto context = MakeContext(inv.client, service);
    const grpc::Status status =
        page(context.get(), token, std::min(500, limit - count(*all)), &one);
    if (!status.ok()) return status;
    append(*all, one);
    all->set_next_page_token(one.next_page_token());
    token = one.next_page_token();
    if (token.empty() || count(*all) >= limit) return grpc::Status::OK;
  }
}

template <typename Response>
int PrintList(const Invocation& inv, const grpc::Status& status, const Response& all,
              const std::function<std::vector<std::string>(const Response&)>& table) {
  if (!status.ok()) return ReportFailure(inv, status);
  if (inv.json) {
    std::printf("%s\n", ToJson(all).c_str());
    return kExitOk;
  }
  PrintLines(table(all));
  if (!all.next_page_token().empty()) {
    std::fprintf(stderr, "(more rows: raise --limit, or continue with --page_token=%s)\n",
                 all.next_page_token().c_str());
  }
  return kExitOk;
}

int MoveList(Invocation& inv) {
  v1::ListMovesRequest req;
  req.set_state(OptionalMoveState());
  req.set_device_id(absl::GetFlag(FLAGS_device));
  auto stub = StubFor<v1::MoveService>(inv, Service::kMoves);
  v1::ListMovesResponse all;
  const grpc::Status status = CollectPages<v1::ListMovesResponse>(
      inv, Service::kMoves, &all,
      [](v1::ListMovesResponse& to, const v1::ListMovesResponse& from) {
        to.mutable_moves()->MergeFrom(from.moves());
      },
      [](const v1::ListMovesResponse& r) { return r.moves_size(); },
      [&](grpc::ClientContext* c, const std::string& token, int size, v1::ListMovesResponse* r) {
        req.set_page_token(token);
        req.set_page_size(size);
        return stub->ListMoves(c, req, r);
      });
  return PrintList<v1::ListMovesResponse>(inv, status, all, MovesTable);
}

// Ctrl-C (or SIGTERM) during a watch, turned into a cancelled stream. A signal handler may only
// do async-signal-safe things, so it writes a byte to a pipe; a thread reads it and cancels the
// call. Installed with sigaction for the whole process, so it works whichever thread the
// signal lands on (gRPC runs threads of its own).
class WatchInterrupter {
 public:
  explicit WatchInterrupter(grpc::ClientContext& context) : context_(context) {
    if (pipe2(fds_, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    write_fd_ = fds_[1];
    struct sigaction action {};
    action.sa_handler = [](int) {
      const char byte = 'i';
      [[maybe_unused]] ssize_t n = write(write_fd_, &byte, 1);
    };
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
    waiter_ = std::thread([this] {
      char byte = 0;
      while (read(fds_[0], &byte, 1) < 0 && errno == EINTR) {
      }
      if (byte == 'i') {
        interrupted_ = true;
        context_.TryCancel();
      }
    });
  }
  WatchInterrupter(const WatchInterrupter&) = delete;
  WatchInterrupter& operator=(const WatchInterrupter&) = delete;
  ~WatchInterrupter() {
    const char byte = 'd';  // done: wakes the waiter when no signal came
    [[maybe_unused]] ssize_t n = write(fds_[1], &byte, 1);
    waiter_.join();
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    close(fds_[0]);
    close(fds_[1]);
  }
  // Valid once the stream has finished (the waiter sets it before cancelling).
  bool interrupted() const { return interrupted_; }

 private:
  static inline int write_fd_ = -1;
  grpc::ClientContext& context_;
  int fds_[2] = {-1, -1};
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  std::atomic<bool> interrupted_{false};
  std::thread waiter_;
};

int MoveWatch(Invocation& inv) {
  v1::WatchMoveRequest req;
  req.set_move_id(inv.args[0]);
  auto stub = StubFor<v1::MoveService>(inv, Service::kMoves);
  std::unique_ptr<grpc::ClientContext> context = MakeContext(inv.client, Service::kMoves, true);
  grpc::Status status;
  bool interrupted = false;
  v1::MoveEvent last;
  {
    WatchInterrupter interrupter(*context);
    if (!inv.json) {
      std::fprintf(stderr, "watching move %s (Ctrl-C stops watching; the move goes on)\n",
                   req.move_id().c_str());
    }
    std::unique_ptr<grpc::ClientReader<v1::MoveEvent>> reader = stub->WatchMove(context.get(), req);
    v1::MoveEvent event;
    while (reader->Read(&event)) {
      std::printf("%s\n", inv.json ? ToJson(event, false).c_str() : MoveEventLine(event).c_str());
      std::fflush(stdout);
      last = event;
    }
    status = reader->Finish();
    // The waiter marks the interruption before it cancels, so a stream it cancelled has
    // finished after the mark.
    interrupted = interrupter.interrupted();
  }
  if (interrupted) {
    if (!inv.json) std::fprintf(stderr, "stopped watching; the move goes on\n");
    return kExitInterrupted;
  }
  if (!status.ok()) return ReportFailure(inv, status);
  if (!inv.json) {
    std::fprintf(stderr, "move %s is %s\n", req.move_id().c_str(),
                 MoveStateName(last.to_state()).c_str());
  }
  return kExitOk;
}

// --- Reservations (ReservationService) -----------------------------------------------------

int ReservationList(Invocation& inv) {
  v1::ListReservationsRequest req;
  const std::string state_text = absl::GetFlag(FLAGS_state);
  if (!state_text.empty()) {
    v1::ReservationState state;
    if (!ParseReservationState(state_text, &state)) {
      throw UsageError("--state must be held, converted, expired or cancelled");
    }
    req.set_state(state);
  }
  auto stub = StubFor<v1::ReservationService>(inv, Service::kReservation);
  v1::ListReservationsResponse all;
  const grpc::Status status = CollectPages<v1::ListReservationsResponse>(
      inv, Service::kReservation, &all,
      [](v1::ListReservationsResponse& to, const v1::ListReservationsResponse& from) {
        to.mutable_reservations()->MergeFrom(from.reservations());
      },
      [](const v1::ListReservationsResponse& r) { return r.reservations_size(); },
      [&](grpc::ClientContext* c, const std::string& token, int size,
          v1::ListReservationsResponse* r) {
        req.set_page_token(token);
        req.set_page_size(size);
        return stub->ListReservations(c, req, r);
      });
  return PrintList<v1::ListReservationsResponse>(inv, status, all, ReservationsTable);
}

int ReservationShow(Invocation& inv) {
  v1::GetReservationRequest req;
  const std::string key = absl::GetFlag(FLAGS_key);
  if (inv.args.empty() == key.empty()) {
    throw UsageError("name the reservation by its id or by --key, one of the two");
  }
  if (key.empty()) {
    req.mutable_reservation()->set_reservation_id(inv.args[0]);
  } else {
    req.mutable_reservation()->set_idempotency_key(key);
  }
  auto stub = StubFor<v1::ReservationService>(inv, Service::kReservation);
  return Unary<v1::Reservation>(
      inv, Service::kReservation,
      [&](grpc::ClientContext* c, v1::Reservation* r) { return stub->GetReservation(c, req, r); },
      ReservationText);
}

// --- Inventory (InventoryService, served by the occupancy server) --------------------------

// A request id for a write: `--request_id` as given when it is already a UUID, else derived
// from its text (so any words an operator chooses replay when typed again); without the flag
// a fresh random UUID, which only protects gRPC's own retries of this one call.
std::string WriteRequestId() {
  const std::string given = absl::GetFlag(FLAGS_request_id);
  if (!given.empty()) {
    return given.size() == 36 && given[8] == '-' && given[13] == '-'
               ? given
               : netbox::DerivedRequestId("dclctl --request_id " + given);
  }
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("no random bytes");
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 0x0f]);
  }
  return out;
}

bool Replayed(const grpc::ClientContext& context) {
  const auto& headers = context.GetServerInitialMetadata();
  auto it = headers.find("dcl-replay");
  return it != headers.end() && std::string(it->second.data(), it->second.size()) == "true";
}

// One write: like Unary, and says "(replayed)" when the server answered from its request
// ledger (on stderr under --json, so that stdout stays one JSON document).
template <typename Response>
int Write(const Invocation& inv,
          const std::function<grpc::Status(grpc::ClientContext*, Response*)>& call,
          const std::function<std::vector<std::string>(const Response&)>& text) {
  Response response;
  std::unique_ptr<grpc::ClientContext> context = MakeContext(inv.client, Service::kOccupancy);
  const grpc::Status status = call(context.get(), &response);
  if (!status.ok()) return ReportFailure(inv, status);
  const bool replayed = Replayed(*context);
  if (inv.json) {
    std::printf("%s\n", ToJson(response).c_str());
    if (replayed) std::fprintf(stderr, "(replayed)\n");
  } else {
    PrintLines(text(response));
    if (replayed) std::printf("(replayed)\n");
  }
  return kExitOk;
}

std::unique_ptr<v1::InventoryService::Stub> InventoryStub(const Invocation& inv) {
  return StubFor<v1::InventoryService>(inv, Service::kOccupancy);
}

std::optional<int> OptionalInt(const absl::Flag<std::string>& flag, const char* name) {
  if (absl::GetFlag(flag).empty()) return std::nullopt;
  return RequiredInt(flag, name);
}

v1::ProcessState StateFlag(bool required) {
  const std::string text = absl::GetFlag(FLAGS_state);
  if (text.empty()) {
    if (required) throw UsageError("--state is required (normal or staging)");
    return v1::PROCESS_STATE_UNSPECIFIED;
  }
  v1::ProcessState state;
  if (!ParseProcessState(text, &state)) {
    throw UsageError("--state: unknown device state \"" + text + "\"");
  }
  return state;
}

int SiteList(Invocation& inv) {
  auto stub = InventoryStub(inv);
  v1::ListSitesRequest req;
  v1::ListSitesResponse all;
  const grpc::Status status = CollectPages<v1::ListSitesResponse>(
      inv, Service::kOccupancy, &all,
      [](v1::ListSitesResponse& to, const v1::ListSitesResponse& from) {
        to.mutable_sites()->MergeFrom(from.sites());
      },
      [](const v1::ListSitesResponse& r) { return r.sites_size(); },
      [&](grpc::ClientContext* c, const std::string& token, int size, v1::ListSitesResponse* r) {
        req.set_page_token(token);
        req.set_page_size(size);
        return stub->ListSites(c, req, r);
      });
  return PrintList<v1::ListSitesResponse>(inv, status, all, SitesTable);
}

int SiteCreate(Invocation& inv) {
  v1::CreateSiteRequest req;
  req.set_name(Required(FLAGS_name, "name"));
  req.set_request_id(WriteRequestId());
  auto stub = InventoryStub(inv);
  return Write<v1::Site>(
      inv, [&](grpc::ClientContext* c, v1::Site* r) { return stub->CreateSite(c, req, r); },
      SiteText);
}

int RackList(Invocation& inv) {
  auto stub = InventoryStub(inv);
  v1::ListRacksRequest req;
  req.set_site_id(absl::GetFlag(FLAGS_site));
  v1::ListRacksResponse all;
  const grpc::Status status = CollectPages<v1::ListRacksResponse>(
      inv, Service::kOccupancy, &all,
      [](v1::ListRacksResponse& to, const v1::ListRacksResponse& from) {
        to.mutable_racks()->MergeFrom(from.racks());
      },
      [](const v1::ListRacksResponse& r) { return r.racks_size(); },
      [&](grpc::ClientContext* c, const std::string& token, int size, v1::ListRacksResponse* r) {
        req.set_page_token(token);
        req.set_page_size(size);
        return stub->ListRacks(c, req, r);
      });
  return PrintList<v1::ListRacksResponse>(inv, status, all, RacksTable);
}

int RackCreate(Invocation& inv) {
  v1::CreateRackRequest req;
  req.set_site_id(Required(FLAGS_site, "site"));
  req.set_name(Required(FLAGS_name, "name"));
  v1::RackGeometry& g = *req.mutable_geometry();
  g.set_unit_count(RequiredInt(FLAGS_height, "height"));
  g.set_first_unit(RequiredInt(FLAGS_first_unit, "first_unit"));
  g.set_numbering(absl::GetFlag(FLAGS_descending) ? v1::NUMBERING_DESCENDING
                                                  : v1::NUMBERING_ASCENDING);
  g.set_has_rear(!absl::GetFlag(FLAGS_front_only));
  if (auto power = OptionalInt(FLAGS_power, "power")) req.set_power_budget_watts(*power);
  if (auto weight = OptionalInt(FLAGS_weight, "weight")) req.set_weight_budget_kg(*weight);
  req.set_request_id(WriteRequestId());
  auto stub = InventoryStub(inv);
  return Write<v1::RackRecord>(
      inv, [&](grpc::ClientContext* c, v1::RackRecord* r) { return stub->CreateRack(c, req, r); },
      RackRecordText);
}

int DeviceList(Invocation& inv) {
  auto stub = InventoryStub(inv);
  v1::ListDevicesRequest req;
  req.set_site_id(absl::GetFlag(FLAGS_site));
  req.set_vendor(absl::GetFlag(FLAGS_vendor));
  req.set_model(absl::GetFlag(FLAGS_model));
  req.set_hardware_profile(absl::GetFlag(FLAGS_profile));
  req.set_process_state(StateFlag(false));
  req.set_include_decommissioned(absl::GetFlag(FLAGS_all));
  v1::ListDevicesResponse all;
  const grpc::Status status = CollectPages<v1::ListDevicesResponse>(
      inv, Service::kOccupancy, &all,
      [](v1::ListDevicesResponse& to, const v1::ListDevicesResponse& from) {
        to.mutable_devices()->MergeFrom(from.devices());
      },
      [](const v1::ListDevicesResponse& r) { return r.devices_size(); },
      [&](grpc::ClientContext* c, const std::string& token, int size, v1::ListDevicesResponse* r) {
        req.set_page_token(token);
        req.set_page_size(size);
        return stub->ListDevices(c, req, r);
      });
  return PrintList<v1::ListDevicesResponse>(inv, status, all, DevicesTable);
}

int DeviceShow(Invocation& inv) {
  v1::GetDeviceRequest req;
  req.set_device_id(inv.args[0]);
  auto stub = InventoryStub(inv);
  return Unary<v1::Device>(
      inv, Service::kOccupancy,
      [&](grpc::ClientContext* c, v1::Device* r) { return stub->GetDevice(c, req, r); },
      DeviceText);
}

int DeviceRegister(Invocation& inv) {
  v1::RegisterDeviceRequest req;
  req.set_site_id(Required(FLAGS_site, "site"));
  req.set_vendor(Required(FLAGS_vendor, "vendor"));
  req.set_model(Required(FLAGS_model, "model"));
  req.set_hardware_profile(absl::GetFlag(FLAGS_profile));
  req.set_serial(absl::GetFlag(FLAGS_serial));
  req.set_height_units(RequiredInt(FLAGS_height, "height"));
  v1::DepthClass depth;
  const std::string depth_text = absl::GetFlag(FLAGS_depth);
  if (!ParseDepthClass(depth_text, &depth)) {
    throw UsageError("--depth must be full, half or unknown, not \"" + depth_text + "\"");
  }
  req.set_depth_class(depth);
  if (auto power = OptionalInt(FLAGS_power, "power")) req.set_power_draw_watts(*power);
  if (auto weight = OptionalInt(FLAGS_weight, "weight")) req.set_weight_kg(*weight);
  req.set_initial_state(StateFlag(false));
  req.set_request_id(WriteRequestId());
  auto stub = InventoryStub(inv);
  return Write<v1::Device>(
      inv, [&](grpc::ClientContext* c, v1::Device* r) { return stub->RegisterDevice(c, req, r); },
      DeviceText);
}

int DeviceSetState(Invocation& inv) {
  v1::SetDeviceStateRequest req;
  req.set_device_id(inv.args[0]);
  req.set_state(StateFlag(true));
  req.set_request_id(WriteRequestId());
  auto stub = InventoryStub(inv);
  return Write<v1::Device>(
      inv, [&](grpc::ClientContext* c, v1::Device* r) { return stub->SetDeviceState(c, req, r); },
      DeviceText);
}

int DeviceDecommission(Invocation& inv) {
  v1::DecommissionDeviceRequest req;
  req.set_device_id(inv.args[0]);
  req.set_reason(Required(FLAGS_reason, "reason"));
  req.set_request_id(WriteRequestId());
  auto stub = InventoryStub(inv);
  return Write<v1::Device>(
      inv,
      [&](grpc::ClientContext* c, v1::Device* r) { return stub->DecommissionDevice(c, req, r); },
      DeviceText);
}

// Labels for the devices of a rack's elevation, from the inventory of its site. Best effort:
// without an answer (an older server, a token that may not read devices) the elevation keeps
// the short ids.
DeviceLabels LabelsFor(const Invocation& inv, const v1::Rack& rack) {
  DeviceLabels labels;
  std::set<std::string> wanted;
  for (const v1::ElevationSlot& s : rack.occupied()) {
    if (!s.device_id().empty()) wanted.insert(s.device_id());
  }
  if (wanted.empty()) return labels;
  auto stub = InventoryStub(inv);
  for (const std::string& id : wanted) {
    v1::GetDeviceRequest req;
    req.set_device_id(id);
    v1::Device device;
    auto context = MakeContext(inv.client, Service::kOccupancy);
    if (!stub->GetDevice(context.get(), req, &device).ok()) return {};
    const std::string label = DeviceLabel(device);
    if (!label.empty()) labels[id] = label;
  }
  return labels;
}

// --- Import from NetBox --------------------------------------------------------------------

// A one-line progress bar on stdout, only when stdout is a terminal (a pipe or a file gets the
// report alone).
class Progress {
 public:
  Progress(size_t total, bool enabled) : total_(total), enabled_(enabled && isatty(1) == 1) {}
  void Step(const std::string& what) {
    ++done_;
    if (!enabled_ || total_ == 0) return;
    const size_t width = 30;
    const size_t filled = width * done_ / total_;
    std::printf("\r[%s%s] %zu/%zu %-40.40s", std::string(filled, '#').c_str(),
                std::string(width - filled, ' ').c_str(), done_, total_, what.c_str());
    std::fflush(stdout);
  }
  void Finish() {
    if (enabled_) std::printf("\r%90s\r", "");
  }

 private:
  size_t total_, done_ = 0;
  bool enabled_;
};

struct ImportReport {
  struct Counts {
    int created = 0, unchanged = 0;
  };
  std::map<std::string, Counts> counts;  // "sites", "racks", "devices", "placements", "blockings"
  std::vector<netbox::Skipped> skipped;
  std::vector<netbox::Skipped> refused;  // reason: what the slot index refused, with units
};

std::string ReadFileText(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  *ok = static_cast<bool>(in) || in.eof();
  return text.str();
}

// The colliding units of a refused placement, as the refusal names them.
std::string CollidingUnits(const grpc::Status& status) {
  for (const std::string& line : DescribeError(status)) {
    const size_t at = line.find("colliding units: ");
    if (at != std::string::npos) return line.substr(at + 17);
  }
  return status.error_message();
}

// A placement of `device_id` with exactly `slots` among the rack's active bookings.
bool HasBooking(const v1::Rack& rack, v1::BookingKind kind, const std::string& device_id,
                const std::vector<v1::Slot>& slots) {
  std::map<std::string, std::set<std::pair<int, int>>> by_booking;
  for (const v1::ElevationSlot& s : rack.occupied()) {
    if (s.kind() == kind && s.device_id() == device_id) {
      by_booking[s.booking_id()].insert({s.slot().side(), s.slot().unit()});
    }
  }
  std::set<std::pair<int, int>> wanted;
  for (const v1::Slot& s : slots) wanted.insert({s.side(), s.unit()});
  for (const auto& [id, have] : by_booking) {
    if (have == wanted) return true;
  }
  return false;
}

std::string RackWhat(const netbox::Plan& plan, int64_t netbox_id) {
  for (const netbox::RackPlan& r : plan.racks) {
    if (r.netbox_id == netbox_id)
      return absl::StrCat("rack ", netbox_id, " (", r.request.name(), ")");
  }
  return absl::StrCat("rack ", netbox_id);
}

int ImportNetbox(Invocation& inv) {
  const std::string dir = Required(FLAGS_dir, "dir");
  const bool dry_run = absl::GetFlag(FLAGS_dry_run);
  std::map<std::string, std::string> files;
  for (const char* name : netbox::kFiles) {
    bool ok = false;
    std::string text = ReadFileText(dir + "/" + name, &ok);
    if (!ok) throw UsageError(absl::StrCat("cannot read ", dir, "/", name));
    files[name] = std::move(text);
  }
  absl::StatusOr<netbox::Export> in = netbox::ParseExport(files);
  if (!in.ok()) throw UsageError(std::string(in.status().message()));
  absl::StatusOr<std::map<std::string, std::string>> site_map =
      netbox::ParseSiteMap(absl::GetFlag(FLAGS_site_map));
  if (!site_map.ok()) throw UsageError(std::string(site_map.status().message()));
  absl::StatusOr<netbox::Plan> plan_or = netbox::MakePlan(*in, *site_map);
  if (!plan_or.ok()) throw UsageError(std::string(plan_or.status().message()));
  const netbox::Plan& plan = *plan_or;

  auto inventory = InventoryStub(inv);
  auto occupancy = StubFor<v1::OccupancyService>(inv, Service::kOccupancy);
  ImportReport report;
  report.skipped = plan.skipped;
  for (const char* kind : {"sites", "racks", "devices", "placements", "blockings"}) {
    report.counts[kind];
  }
  Progress progress(
      plan.sites.size() + plan.racks.size() + plan.devices.size() * 2 + plan.blocks.size(),
      !inv.json);
  // A failure that is not a refusal ends the import (what was written stays; a re-run
  // continues where it stopped).
  auto fail = [&](const grpc::Status& status) {
    progress.Finish();
    return ReportFailure(inv, status);
  };
  auto call = [&](auto&& fn) -> std::pair<grpc::Status, bool> {
    auto context = MakeContext(inv.client, Service::kOccupancy);
    const grpc::Status status = fn(context.get());
    return {status, status.ok() && Replayed(*context)};
  };

  // Sites, matched by name.
  std::map<std::string, std::string> site_by_name;
  {
    v1::ListSitesRequest req;
    req.set_page_size(500);
    do {
      v1::ListSitesResponse page;
      auto [status, replayed] =
          call([&](grpc::ClientContext* c) { return inventory->ListSites(c, req, &page); });
      if (!status.ok()) return fail(status);
      for (const v1::Site& s : page.sites()) site_by_name[s.name()] = s.id();
      req.set_page_token(page.next_page_token());
    } while (!req.page_token().empty());
  }
  std::map<int64_t, std::string> site_id;  // NetBox id → dcl id ("" in a dry run: not yet)
  for (const netbox::SitePlan& p : plan.sites) {
    progress.Step("site " + p.request.name());
    auto found = site_by_name.find(p.request.name());
    if (found != site_by_name.end()) {
      site_id[p.netbox_id] = found->second;
      ++report.counts["sites"].unchanged;
      continue;
    }
    if (dry_run) {
      site_id[p.netbox_id] = "";
      ++report.counts["sites"].created;
      continue;
    }
    v1::Site site;
    auto [status, replayed] =
        call([&](grpc::ClientContext* c) { return inventory->CreateSite(c, p.request, &site); });
    if (!status.ok()) return fail(status);
    site_id[p.netbox_id] = site.id();
    ++(replayed ? report.counts["sites"].unchanged : report.counts["sites"].created);
  }

  // Racks, matched by name within their site; devices by serial.
  std::map<std::pair<std::string, std::string>, std::string> rack_by_name;  // (site, name)
  std::map<std::string, std::string> device_by_serial;
  for (const auto& [netbox_id, id] : site_id) {
    if (id.empty()) continue;
    v1::ListRacksRequest racks;
    racks.set_site_id(id);
    racks.set_page_size(500);
    do {
      v1::ListRacksResponse page;
      auto [status, replayed] =
          call([&](grpc::ClientContext* c) { return inventory->ListRacks(c, racks, &page); });
      if (!status.ok()) return fail(status);
      for (const v1::RackRecord& r : page.racks()) rack_by_name[{id, r.name()}] = r.id();
      racks.set_page_token(page.next_page_token());
    } while (!racks.page_token().empty());
    v1::ListDevicesRequest devices;
    devices.set_site_id(id);
    devices.set_include_decommissioned(true);
    devices.set_page_size(500);
    do {
      v1::ListDevicesResponse page;
      auto [status, replayed] =
          call([&](grpc::ClientContext* c) { return inventory->ListDevices(c, devices, &page); });
      if (!status.ok()) return fail(status);
      for (const v1::Device& d : page.devices()) {
        if (!d.serial().empty()) device_by_serial[d.serial()] = d.id();
      }
      devices.set_page_token(page.next_page_token());
    } while (!devices.page_token().empty());
  }

  std::map<int64_t, std::string> rack_id;
  std::map<int64_t, bool> rack_has_rear;
  for (const netbox::RackPlan& p : plan.racks) {
    progress.Step("rack " + p.request.name());
    rack_has_rear[p.netbox_id] = p.request.geometry().has_rear();
    const std::string& site = site_id[p.site_netbox_id];
    auto found = rack_by_name.find({site, p.request.name()});
    if (!site.empty() && found != rack_by_name.end()) {
      rack_id[p.netbox_id] = found->second;
      ++report.counts["racks"].unchanged;
      continue;
    }
    if (dry_run) {
      rack_id[p.netbox_id] = "";
      ++report.counts["racks"].created;
      continue;
    }
    v1::CreateRackRequest req = p.request;
    req.set_site_id(site);
    v1::RackRecord rack;
    auto [status, replayed] =
        call([&](grpc::ClientContext* c) { return inventory->CreateRack(c, req, &rack); });
    if (!status.ok()) return fail(status);
    rack_id[p.netbox_id] = rack.id();
    ++(replayed ? report.counts["racks"].unchanged : report.counts["racks"].created);
  }

  std::map<int64_t, std::string> device_id;
  for (const netbox::DevicePlan& p : plan.devices) {
    progress.Step("device " + (p.netbox_name.empty() ? p.request.serial() : p.netbox_name));
    const std::string& site = site_id[p.site_netbox_id];
    auto found = device_by_serial.find(p.request.serial());
    if (!p.request.serial().empty() && found != device_by_serial.end()) {
      device_id[p.netbox_id] = found->second;
      ++report.counts["devices"].unchanged;
      continue;
    }
    if (dry_run) {
      device_id[p.netbox_id] = "";
      ++report.counts["devices"].created;
      continue;
    }
    v1::RegisterDeviceRequest req = p.request;
    req.set_site_id(site);
    v1::Device device;
    auto [status, replayed] =
        call([&](grpc::ClientContext* c) { return inventory->RegisterDevice(c, req, &device); });
    // A business refusal of one device (its serial belongs to another device of the
    // organization, say) is reported and the import goes on; its placement is not attempted.
    if (status.error_code() == grpc::StatusCode::ALREADY_EXISTS ||
        status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      report.refused.push_back(
          {absl::StrCat("device ", p.netbox_id,
                        p.netbox_name.empty() ? "" : " (" + p.netbox_name + ")"),
           absl::StrCat("registration refused: ", status.error_message())});
      continue;
    }
    if (!status.ok()) return fail(status);
    device_id[p.netbox_id] = device.id();
    ++(replayed ? report.counts["devices"].unchanged : report.counts["devices"].created);
  }

  // Placements and blockings: what each rack holds now decides what is already there.
  std::map<int64_t, v1::Rack> elevation;
  auto elevation_of = [&](int64_t rack_netbox_id) -> std::optional<grpc::Status> {
    const std::string& id = rack_id[rack_netbox_id];
    if (id.empty() || elevation.count(rack_netbox_id) > 0) return std::nullopt;
    v1::GetRackRequest req;
    req.set_rack_id(id);
    v1::Rack rack;
    auto [status, replayed] =
        call([&](grpc::ClientContext* c) { return occupancy->GetRack(c, req, &rack); });
    if (!status.ok()) return status;
    elevation[rack_netbox_id] = rack;
    return std::nullopt;
  };
  // In a dry run the placements NetBox records in overlapping units are known beforehand.
  const std::map<int64_t, std::vector<v1::Slot>> overlaps = netbox::OverlappingPlacements(plan);
  for (const netbox::DevicePlan& p : plan.devices) {
    const std::string what = absl::StrCat("device ", p.netbox_id,
                                          p.netbox_name.empty() ? "" : " (" + p.netbox_name + ")");
    progress.Step("placement " + what);
    if (auto failed = elevation_of(p.rack_netbox_id)) return fail(*failed);
    const std::string where =
        absl::StrCat(RackWhat(plan, p.rack_netbox_id), " ", SideName(p.side), " U", p.unit);
    const std::vector<v1::Slot> slots =
        netbox::ClaimedSlots(p.lowest_number, p.request.height_units(), p.side,
                             p.request.depth_class(), rack_has_rear[p.rack_netbox_id]);
    const auto registered = device_id.find(p.netbox_id);
    if (registered == device_id.end()) continue;  // its registration was refused, reported above
    const std::string& device = registered->second;
    auto rack = elevation.find(p.rack_netbox_id);
    if (!device.empty() && rack != elevation.end() &&
        HasBooking(rack->second, v1::BOOKING_PLACEMENT, device, slots)) {
      ++report.counts["placements"].unchanged;
      continue;
    }
    if (dry_run) {
      auto overlap = overlaps.find(p.netbox_id);
      if (overlap != overlaps.end()) {
        report.refused.push_back(
            {what, absl::StrCat("placement at ", where, " would be refused: units taken: ",
                                DescribeSlotRanges(overlap->second))});
      } else {
        ++report.counts["placements"].created;
      }
      continue;
    }
    v1::PlaceDeviceRequest req;
    req.set_rack_id(rack_id[p.rack_netbox_id]);
    req.set_device_id(device);
    req.set_side(p.side);
    req.set_unit(p.unit);
    req.set_reason(absl::StrCat("imported from NetBox device ", p.netbox_id));
    // Derived from NetBox's ids: a re-run within the ledger's retention replays this call.
    req.set_request_id(netbox::DerivedRequestId(absl::StrCat(
        "netbox placement ", p.netbox_id, " rack ", p.rack_netbox_id, " unit ", p.unit)));
    v1::Booking booking;
    auto [status, replayed] =
        call([&](grpc::ClientContext* c) { return occupancy->PlaceDevice(c, req, &booking); });
    if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
        status.error_code() == grpc::StatusCode::OUT_OF_RANGE) {
      const std::optional<v1::ErrorDetail> detail = ErrorDetailFromGrpc(status);
      const bool occupied = detail.has_value() && detail->reason() == v1::UNIT_OCCUPIED;
      report.refused.push_back(
          {what, absl::StrCat("placement at ", where, " refused: ",
                              occupied ? "units taken: " + CollidingUnits(status)
                                       : status.error_message())});
      continue;
    }
    if (!status.ok()) return fail(status);
    ++report.counts["placements"].created;
  }

  for (const netbox::BlockPlan& p : plan.blocks) {
    progress.Step(absl::StrCat("rack reservation ", p.netbox_id));
    if (auto failed = elevation_of(p.rack_netbox_id)) return fail(*failed);
    std::vector<v1::Slot> slots;
    for (int u = p.request.first_unit(); u <= p.request.last_unit(); ++u) {
      for (v1::Side side : {v1::SIDE_FRONT, v1::SIDE_REAR}) {
        if (side == v1::SIDE_REAR && !p.request.both_sides()) continue;
        v1::Slot s;
        s.set_side(side);
        s.set_unit(u);
        slots.push_back(s);
      }
    }
    auto rack = elevation.find(p.rack_netbox_id);
    if (rack != elevation.end() && HasBooking(rack->second, v1::BOOKING_BLOCKING, "", slots)) {
      ++report.counts["blockings"].unchanged;
      continue;
    }
    const std::string what = absl::StrCat("rack reservation ", p.netbox_id);
    if (dry_run) {
      ++report.counts["blockings"].created;
      continue;
    }
    v1::BlockUnitsRequest req = p.request;
    req.set_rack_id(rack_id[p.rack_netbox_id]);
    // One NetBox reservation of units that are not contiguous becomes several blockings.
    req.set_request_id(
        netbox::DerivedRequestId(absl::StrCat("netbox rack reservation ", p.netbox_id, " units ",
                                              req.first_unit(), "-", req.last_unit())));
    v1::Booking booking;
    auto [status, replayed] =
        call([&](grpc::ClientContext* c) { return occupancy->BlockUnits(c, req, &booking); });
    if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      report.refused.push_back(
          {what, absl::StrCat("blocking of ", RackWhat(plan, p.rack_netbox_id), " U",
                              p.request.first_unit(), "-U", p.request.last_unit(),
                              " refused: units taken: ", CollidingUnits(status))});
      continue;
    }
    if (!status.ok()) return fail(status);
    ++report.counts["blockings"].created;
  }
  progress.Finish();

  if (inv.json) {
    google::protobuf::Struct out;
    auto& fields = *out.mutable_fields();
    fields["dry_run"].set_bool_value(dry_run);
    for (const auto& [kind, counts] : report.counts) {
      auto& c = *fields[kind].mutable_struct_value()->mutable_fields();
      c["created"].set_number_value(counts.created);
      c["unchanged"].set_number_value(counts.unchanged);
    }
    for (const auto* list : {&report.skipped, &report.refused}) {
      auto& values = *fields[list == &report.skipped ? "skipped" : "refused"].mutable_list_value();
      for (const netbox::Skipped& s : *list) {
        auto& item = *values.add_values()->mutable_struct_value()->mutable_fields();
        item["what"].set_string_value(s.what);
        item["reason"].set_string_value(s.reason);
      }
    }
    std::printf("%s\n", ToJson(out).c_str());
  } else {
    std::printf("NetBox import from %s%s\n", dir.c_str(),
                dry_run ? " (dry run: nothing written)" : "");
    std::vector<std::vector<std::string>> rows;
    for (const char* kind : {"sites", "racks", "devices", "placements", "blockings"}) {
      rows.push_back({kind, absl::StrCat(report.counts[kind].created),
                      absl::StrCat(report.counts[kind].unchanged)});
    }
    PrintLines(FormatTable({"", dry_run ? "WOULD CREATE" : "CREATED", "UNCHANGED"}, rows, {1, 2}));
    std::printf("skipped: %zu\n", report.skipped.size());
    for (const netbox::Skipped& s : report.skipped) {
      std::printf("  %s: %s\n", s.what.c_str(), s.reason.c_str());
    }
    std::printf("refused: %zu\n", report.refused.size());
    for (const netbox::Skipped& s : report.refused) {
      std::printf("  %s: %s\n", s.what.c_str(), s.reason.c_str());
    }
  }
  return report.refused.empty() ? kExitOk : kExitRefused;
}

// --- Servers -------------------------------------------------------------------------------

// grpc.health.v1 of one server, for scripts that wait for a server to come up: exit 0 only
// when SERVING.
int HealthCheck(Invocation& inv) {
  std::string target = absl::GetFlag(FLAGS_target);
  if (target.empty() && std::getenv("DCL_TARGET") != nullptr) target = std::getenv("DCL_TARGET");
  if (target.empty()) throw UsageError("--target (or DCL_TARGET) is required");
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = MakeChannel(inv.client, target);
  if (!channel.ok()) throw UsageError(std::string(channel.status().message()));
  auto stub = grpc::health::v1::Health::NewStub(*channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(absl::GetFlag(FLAGS_service));
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return ReportFailure(inv, status);
  std::printf("%s\n",
              grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status()).c_str());
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING ? kExitOk : kExitOther;
}

// --- The table -----------------------------------------------------------------------------

enum class Section { kRacks, kInventory, kMoves, kReservations, kServers, kDatabase };

struct Command {
  std::vector<std::string> words;
  std::string usage;  // arguments and flags
  std::string help;
  size_t min_args, max_args;  // positional arguments after the words
  Section section;
  std::function<int(Invocation&)> run;
};

int Database(Invocation& inv) {
  const size_t space = inv.name.find(' ');
  return RunDatabaseCommand(inv.name.substr(0, space), inv.name.substr(space + 1));
}

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {{"rack", "show"},
       "RACK_ID [--svg FILE]",
       "the rack's elevation, top unit first, front and rear; --svg writes a picture",
       1,
       1,
       Section::kRacks,
       RackShow},
      {{"rack", "capacity"},
       "RACK_ID",
       "free units per side, power and weight budgets",
       1,
       1,
       Section::kRacks,
       RackCapacity},
      {{"place"},
       "--rack R --device D --side front|rear --unit U [--reason T]",
       "place a device with its lowest unit at U",
       0,
       0,
       Section::kRacks,
       Place},
      {{"block"},
       "--rack R --side S|--both_sides --first A --last B [--reason T]",
       "take units out of service",
       0,
       0,
       Section::kRacks,
       Block},
      {{"reserve-units"},
       "--rack R --side S|--both_sides --first A --last B [--ttl_seconds N] [--reason T]",
       "hold units for something on its way",
       0,
       0,
       Section::kRacks,
       ReserveUnits},
      {{"release"},
       "BOOKING_ID [--reason T]",
       "end a blocking, reservation or placement",
       1,
       1,
       Section::kRacks,
       Release},
      {{"plan"},
       "[--kind placement|blocking|reservation|move_hold] --rack R (--device D --side S --unit U "
       "| --side S|--both_sides --first A --last B)",
       "dry run: the units a booking would claim, or why it would be refused (exit 4)",
       0,
       0,
       Section::kRacks,
       Plan},
      // Deliveries: services/admin/delivery_commands.cc.
      {{"delivery", "plan"}, kDeliveryPlanUsage,
       "where a delivery's items go across the site's racks (units, power, weight); exit 4 when "
       "an item fits nowhere", 0, kMaxDeliveryArgs, Section::kRacks,
       [](Invocation& inv) {
         return DeliveryPlanCommand(inv.name, inv.args, inv.client, inv.json);
       }},
      {{"delivery", "reserve"}, kDeliveryReserveUsage,
       "reserve every unit of the delivery's plan in one step, all or nothing", 0,
       kMaxDeliveryArgs, Section::kRacks,
       [](Invocation& inv) {
         return DeliveryReserveCommand(inv.name, inv.args, inv.client, inv.json, WriteRequestId());
       }},
      {{"delivery", "place"}, kDeliveryPlaceUsage,
       "place a device into its reservation: the reserved units become its placement", 1, 1,
       Section::kRacks,
       [](Invocation& inv) {
         return DeliveryPlaceCommand(inv.name, inv.args, inv.client, inv.json, WriteRequestId());
       }},
      {{"site", "list"}, "", "the organization's sites", 0, 0, Section::kInventory, SiteList},
      {{"site", "create"},
       "--name NAME [--request_id T]",
       "a new site",
       0,
       0,
       Section::kInventory,
       SiteCreate},
      {{"rack", "list"},
       "[--site S]",
       "racks with their geometry",
       0,
       0,
       Section::kInventory,
       RackList},
      {{"rack", "create"},
       "--site S --name N --height UNITS [--first_unit 1] [--descending] [--front_only] "
       "[--power W] [--weight KG] [--request_id T]",
       "a new rack",
       0,
       0,
       Section::kInventory,
       RackCreate},
      {{"device", "list"},
       "[--site S] [--vendor V] [--model M] [--profile P] [--state S] [--all] [--limit N]",
       "devices (--all: decommissioned ones too)",
       0,
       0,
       Section::kInventory,
       DeviceList},
      {{"device", "show"}, "DEVICE_ID", "one device", 1, 1, Section::kInventory, DeviceShow},
      {{"device", "register"},
       "--site S --vendor V --model M --height U [--depth full|half|unknown] [--serial S] "
       "[--profile P] [--power W] [--weight KG] [--state staging|normal] [--request_id T]",
       "a new device, staging unless --state normal",
       0,
       0,
       Section::kInventory,
       DeviceRegister},
      {{"device", "set-state"},
       "DEVICE_ID --state normal|staging [--request_id T]",
       "mark a device ready (normal) or not yet (staging)",
       1,
       1,
       Section::kInventory,
       DeviceSetState},
      {{"device", "decommission"},
       "DEVICE_ID --reason R [--request_id T]",
       "retire a device for good (refused while held, placed or moving)",
       1,
       1,
       Section::kInventory,
       DeviceDecommission},
      {{"import", "netbox"},
       "--dir DIR [--site_map NB=DCL,…] [--dry_run]",
       "sites, racks, devices, placements and rack reservations from saved NetBox API lists; "
       "re-runs are idempotent; exit 4 when a placement was refused",
       0,
       0,
       Section::kInventory,
       ImportNetbox},
      {{"move", "start"},
       "--device D --rack R --side S --unit U [--draft] [--note T]",
       "start moving a placed device to another unit of its site",
       0,
       0,
       Section::kMoves,
       MoveStart},
      {{"move", "advance"},
       "MOVE_ID --to STATE [--observation found_at_destination|not_moved] [--note T]",
       "take a move to its next state (planned, approved, in_progress, awaiting_verification, "
       "completed …)",
       1,
       1,
       Section::kMoves,
       MoveAdvance},
      {{"move", "cancel"},
       "MOVE_ID [--note T]",
       "call a move off",
       1,
       1,
       Section::kMoves,
       MoveCancel},
      {{"move", "show"}, "MOVE_ID", "one move", 1, 1, Section::kMoves, MoveShow},
      {{"move", "list"},
       "[--state S] [--device D] [--limit N]",
       "moves, oldest first",
       0,
       0,
       Section::kMoves,
       MoveList},
      {{"move", "watch"},
       "MOVE_ID",
       "every state change as it happens, until the move ends (Ctrl-C stops watching)",
       1,
       1,
       Section::kMoves,
       MoveWatch},
      {{"reservation", "list"},
       "[--state held|converted|expired|cancelled] [--limit N]",
       "machine reservations, newest first",
       0,
       0,
       Section::kReservations,
       ReservationList},
      {{"reservation", "show"},
       "RESERVATION_ID | --key KEY",
       "one reservation",
       0,
       1,
       Section::kReservations,
       ReservationShow},
      {{"health", "check"},
       "--target HOST:PORT [--service NAME]",
       "exit 0 only when the server answers SERVING",
       0,
       0,
       Section::kServers,
       HealthCheck},
      {{"token", "create"},
       "--org ORG --role ROLE [--subject S] [--label L]",
       "a new API token, printed once (stored hashed)",
       0,
       0,
       Section::kDatabase,
       Database},
      {{"token", "revoke"},
       "--id TOKEN_ID",
       "effective on the next call",
       0,
       0,
       Section::kDatabase,
       Database},
      {{"module", "enable"},
       "[--org ORG]",
       "the datacenter module: without --org the global switch",
       0,
       0,
       Section::kDatabase,
       Database},
      {{"module", "disable"}, "[--org ORG]", "", 0, 0, Section::kDatabase, Database},
      {{"org", "create"}, "--name NAME", "a new organization", 0, 0, Section::kDatabase, Database},
  };
  return commands;
}

const char* SectionTitle(Section section) {
  switch (section) {
    case Section::kRacks:
      return "Racks and bookings (OccupancyService, a dc-operator token)";
    case Section::kInventory:
      return "Inventory (InventoryService on the occupancy server, a dc-operator token)";
    case Section::kMoves:
      return "Moves (MoveService, a dc-operator token)";
    case Section::kReservations:
      return "Reservations (ReservationService, a commerce token)";
    case Section::kServers:
      return "Servers";
    case Section::kDatabase:
      return "Administration, straight on the database (--database_url or DCL_DATABASE_URL)";
  }
  return "";
}

std::string CommandLine(const Command& c) {
  return absl::StrJoin(c.words, " ") + (c.usage.empty() ? "" : " " + c.usage);
}

// The flags defined by dclctl's own files, with their help and defaults.
std::string FlagsHelp() {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (absl::StrContains(flag->Filename(), "services/admin/") || name == "database_url") {
      flags.push_back(flag);
    }
  }
  std::sort(flags.begin(), flags.end(),
            [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  std::string text;
  for (const absl::CommandLineFlag* flag : flags) {
    absl::StrAppend(&text, "  --", flag->Name(), "  ", flag->Help());
    const std::string default_value = flag->DefaultValue();
    if (!default_value.empty() && default_value != "false") {
      absl::StrAppend(&text, " (default ", default_value, ")");
    }
    absl::StrAppend(&text, "\n");
  }
  return text;
}

}  // namespace

std::string HelpText() {
  std::string text =
      "dclctl: the DC team's command line for dcl.\n"
      "Usage: dclctl COMMAND [ARGS] [FLAGS]\n";
  for (Section section : {Section::kRacks, Section::kInventory, Section::kMoves,
                          Section::kReservations, Section::kServers, Section::kDatabase}) {
    absl::StrAppend(&text, "\n", SectionTitle(section), ":\n");
    for (const Command& c : Commands()) {
      if (c.section != section) continue;
      absl::StrAppend(&text, "  dclctl ", CommandLine(c), "\n");
      if (!c.help.empty()) absl::StrAppend(&text, "      ", c.help, "\n");
    }
  }
  absl::StrAppend(
      &text,
      "\nTargets and tokens: --target/--token (or DCL_TARGET/DCL_TOKEN) for every service;\n"
      "per service --reservation_target, --occupancy_target, --moves_target and the *_token\n"
      "flags (or DCL_RESERVATION_TARGET, DCL_OCCUPANCY_TOKEN …) win over them. Flags win over\n"
      "the environment. Defaults: 127.0.0.1:50051 reservation, :50052 occupancy, :50053 moves.\n"
      "TLS: --tls_ca (and --tls_client_cert/--tls_client_key for mutual TLS).\n"
      "\nOutput: tables for people; --json prints protobuf's JSON (a watch: one object per line),\n"
      "and a failure as a google.rpc.Status on stderr.\n"
      "\nExit status: 0 done; 1 other failure; 2 bad flags or input (INVALID_ARGUMENT);\n"
      "3 not found; 4 refused by a rule (FAILED_PRECONDITION, RESOURCE_EXHAUSTED; a plan that\n"
      "would be refused); 5 lost a race, retry now (ABORTED); 6 unavailable or deadline, retry\n"
      "later; 7 not authenticated or not allowed; 130 a watch stopped by Ctrl-C.\n"
      "\nFlags (a dash in a name is an underscore: --dry-run is --dry_run):\n",
      FlagsHelp());
  return text;
}

int RunCommand(const std::vector<std::string>& positional) {
  const Command* match = nullptr;
  for (const Command& c : Commands()) {
    if (positional.size() >= c.words.size() &&
        std::equal(c.words.begin(), c.words.end(), positional.begin())) {
      match = &c;
      break;
    }
  }
  if (match == nullptr) {
    std::fprintf(stderr, "dclctl: unknown command \"%s\"; dclctl --help lists the commands\n",
                 absl::StrJoin(positional, " ").c_str());
    return kExitUsage;
  }
  Invocation inv;
  inv.name = absl::StrJoin(match->words, " ");
  inv.args.assign(positional.begin() + static_cast<long>(match->words.size()), positional.end());
  inv.json = absl::GetFlag(FLAGS_json);
  ClientFlags flags;
  flags.target = absl::GetFlag(FLAGS_target);
  flags.token = absl::GetFlag(FLAGS_token);
  flags.reservation_target = absl::GetFlag(FLAGS_reservation_target);
  flags.reservation_token = absl::GetFlag(FLAGS_reservation_token);
  flags.occupancy_target = absl::GetFlag(FLAGS_occupancy_target);
  flags.occupancy_token = absl::GetFlag(FLAGS_occupancy_token);
  flags.moves_target = absl::GetFlag(FLAGS_moves_target);
  flags.moves_token = absl::GetFlag(FLAGS_moves_token);
  flags.tls_ca = absl::GetFlag(FLAGS_tls_ca);
  flags.tls_client_cert = absl::GetFlag(FLAGS_tls_client_cert);
  flags.tls_client_key = absl::GetFlag(FLAGS_tls_client_key);
  flags.deadline_seconds = std::max(1, absl::GetFlag(FLAGS_deadline_seconds));
  inv.client = ResolveClientOptions(flags, [](const char* name) { return std::getenv(name); });
  try {
    if (inv.args.size() < match->min_args || inv.args.size() > match->max_args) {
      throw UsageError(inv.args.size() < match->min_args ? "missing argument"
                                                         : "too many arguments");
    }
    return match->run(inv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "dclctl %s: %s\nusage: dclctl %s\n", inv.name.c_str(), e.what(),
                 CommandLine(*match).c_str());
    return kExitUsage;
  }
}

bool CheckFlags(int argc, char** argv, std::string* error) {
  // absl's own flags, handled by absl itself.
  static const std::vector<std::string> kBuiltin = {
      "help",    "helpfull",        "helpshort", "helppackage", "helpon",     "helpmatch",
      "version", "only_check_args", "flagfile",  "fromenv",     "tryfromenv", "undefok"};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;
    std::string name = arg.substr(arg[1] == '-' ? 2 : 1);
    std::string value;
    const size_t eq = name.find('=');
    const bool has_value = eq != std::string::npos;
    if (has_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (std::find(kBuiltin.begin(), kBuiltin.end(), name) != kBuiltin.end()) continue;
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && absl::StartsWith(name, "no")) {
      absl::CommandLineFlag* negated = absl::FindCommandLineFlag(name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>() && !has_value) continue;
    }
    if (flag == nullptr) {
      *error = "unknown flag --" + name + "; dclctl --help lists the flags";
      return false;
    }
    if (!has_value) {
      if (flag->IsOfType<bool>()) continue;
      if (i + 1 >= argc) {
        *error = "--" + name + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    std::string parse_error;
    if (!flag->ParseFrom(value, &parse_error)) {
      *error = "--" + name + ": " + parse_error;
      return false;
    }
  }
  return true;
}

}  // namespace dcl::admin
