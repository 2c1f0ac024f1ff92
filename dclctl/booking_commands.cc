// dclctl's booking commands (OccupancyService): place, block, reserve units, release, plan.
#include "dclctl/command_groups.h"
#include "dclctl/command_support.h"
#include "services/common/booking_kind.h"

namespace dcl::admin {
namespace {

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
  const std::string expected = absl::GetFlag(FLAGS_expect_kind);
  if (!expected.empty()) {
    v1::BookingKind kind;
    if (!ParseBookingKind(expected, &kind)) {
      throw UsageError("--expect_kind must be " + BookingKindChoices() + ", not \"" + expected +
                       "\"");
    }
    req.set_expected_kind(kind);
  }
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
    throw UsageError("--kind must be " + BookingKindChoices() + ", not \"" + kind_text + "\"");
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

}  // namespace

std::vector<Command> BookingCommands() {
  return {
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
       "BOOKING_ID [--expect_kind K] [--reason T]",
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
  };
}

}  // namespace dcl::admin
