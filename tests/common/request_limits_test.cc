// The table of integer limits against the contracts, and the gate's field checks on hostile
// requests: every integer field of every request of the four services has a declared range,
// no entry names a field that does not exist, and extreme values, unknown enum values and
// bounds ± 1 are refused naming the field, nested fields by their path.
#include <catch2/catch.hpp>
#include <climits>
#include <set>
#include <string>

#include "dcl/v1/inventory.pb.h"
#include "dcl/v1/moves.pb.h"
#include "dcl/v1/occupancy.pb.h"
#include "dcl/v1/reservation.pb.h"
#include "services/common/status.h"
#include "services/common/validation.h"

namespace dcl {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

bool IsInteger(const FieldDescriptor* field) {
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
      return true;
    default:
      return false;
  }
}

// "message.field" for every integer field reachable from `message`.
void CollectIntegerFields(const Descriptor* message, std::set<std::string>* seen_messages,
                          std::set<std::string>* out) {
  if (!seen_messages->insert(message->full_name()).second) return;
  for (int i = 0; i < message->field_count(); ++i) {
    const FieldDescriptor* field = message->field(i);
    if (IsInteger(field)) out->insert(message->full_name() + "." + field->name());
    if (field->message_type() != nullptr) {
      CollectIntegerFields(field->message_type(), seen_messages, out);
    }
  }
}

std::set<std::string> RequestIntegerFields() {
  std::set<std::string> seen;
  std::set<std::string> fields;
  for (const auto* file :
       {v1::ReserveRequest::descriptor()->file(), v1::PlaceDeviceRequest::descriptor()->file(),
        v1::StartMoveRequest::descriptor()->file(), v1::CreateRackRequest::descriptor()->file()}) {
    for (int s = 0; s < file->service_count(); ++s) {
      for (int m = 0; m < file->service(s)->method_count(); ++m) {
        CollectIntegerFields(file->service(s)->method(m)->input_type(), &seen, &fields);
      }
    }
  }
  return fields;
}

std::string FieldOf(const absl::Status& status) {
  auto detail = GetErrorDetail(status);
  REQUIRE(detail.has_value());
  REQUIRE(detail->reason() == v1::INVALID_INPUT);
  return detail->metadata().at("field");
}

TEST_CASE("every integer field of every request has exactly one declared range, and no more") {
  const std::set<std::string> declared = RequestIntegerFields();
  REQUIRE(declared.size() >= 10);
  std::set<std::string> tabled;
  for (const IntegerRange& range : kIntegerRanges) {
    CHECK(tabled.insert(std::string(range.message) + "." + range.field).second);
    CHECK(range.min <= range.max);
  }
  CHECK(tabled == declared);
}

TEST_CASE("a unit at either end of int32 is refused naming the field, in every request") {
  for (int32_t unit : {INT32_MIN, -1, static_cast<int32_t>(kMaxRackUnit) + 1, INT32_MAX}) {
    v1::PlaceDeviceRequest place;
    place.set_unit(unit);
    CHECK(FieldOf(CheckRequestLimits(place)) == "unit");
    v1::BlockUnitsRequest block;
    block.set_first_unit(1);
    block.set_last_unit(unit);
    CHECK(FieldOf(CheckRequestLimits(block)) == "last_unit");
    v1::ReserveUnitsRequest reserve;
    reserve.set_first_unit(unit);
    CHECK(FieldOf(CheckRequestLimits(reserve)) == "first_unit");
    v1::PlanBookingRequest plan;
    plan.mutable_booking()->set_first_unit(unit);
    CHECK(FieldOf(CheckRequestLimits(plan)) == "booking.first_unit");
    v1::StartMoveRequest move;
    move.set_destination_unit(unit);
    CHECK(FieldOf(CheckRequestLimits(move)) == "destination_unit");
  }
  v1::PlaceDeviceRequest edge;
  edge.set_unit(static_cast<int32_t>(kMaxRackUnit));
  CHECK(CheckRequestLimits(edge).ok());
  edge.set_unit(0);
  CHECK(CheckRequestLimits(edge).ok());
}

TEST_CASE("a negative page size is refused, a large one passes (AIP-158: coerced, not refused)") {
  v1::ListReservationsRequest list;
  list.set_page_size(static_cast<int32_t>(kMaxPageSize));
  CHECK(CheckRequestLimits(list).ok());
  list.set_page_size(static_cast<int32_t>(kMaxPageSize) + 1);
  CHECK(CheckRequestLimits(list).ok());
  list.set_page_size(INT32_MAX);
  CHECK(CheckRequestLimits(list).ok());
  list.set_page_size(-1);
  CHECK(FieldOf(CheckRequestLimits(list)) == "page_size");
  v1::ListMovesRequest moves;
  moves.set_page_size(INT32_MIN);
  CHECK(FieldOf(CheckRequestLimits(moves)) == "page_size");

  v1::ReserveRequest reserve;
  reserve.set_ttl_seconds(0);  // optional: an explicit 0 is present, and refused
  CHECK(FieldOf(CheckRequestLimits(reserve)) == "ttl_seconds");
  reserve.set_ttl_seconds(INT32_MAX);
  CHECK(FieldOf(CheckRequestLimits(reserve)) == "ttl_seconds");
  reserve.set_ttl_seconds(900);
  CHECK(CheckRequestLimits(reserve).ok());
  v1::ReserveUnitsRequest units;
  units.set_ttl_seconds(-1);
  CHECK(FieldOf(CheckRequestLimits(units)) == "ttl_seconds");
  units.set_ttl_seconds(INT32_MAX);
  CHECK(FieldOf(CheckRequestLimits(units)) == "ttl_seconds");
}

TEST_CASE("an enum value the contract does not define is refused naming the field") {
  v1::PlaceDeviceRequest place;
  place.set_side(static_cast<v1::Side>(3));
  CHECK(FieldOf(CheckRequestLimits(place)) == "side");
  place.set_side(static_cast<v1::Side>(-2147483647 - 1));
  CHECK(FieldOf(CheckRequestLimits(place)) == "side");
  place.set_side(v1::SIDE_REAR);
  CHECK(CheckRequestLimits(place).ok());
  v1::PlanBookingRequest plan;
  plan.mutable_booking()->set_kind(static_cast<v1::BookingKind>(99));
  CHECK(FieldOf(CheckRequestLimits(plan)) == "booking.kind");
  v1::AdvanceMoveRequest advance;
  advance.set_observation(static_cast<v1::Observation>(7));
  CHECK(FieldOf(CheckRequestLimits(advance)) == "observation");
  v1::ListReservationsRequest list;
  list.set_state(static_cast<v1::ReservationState>(12345));
  CHECK(FieldOf(CheckRequestLimits(list)) == "state");
}

TEST_CASE("rack geometry and device figures are bounded as the schema bounds them, nested "
          "geometry by its path") {
  v1::CreateRackRequest rack;
  rack.mutable_geometry()->set_first_unit(static_cast<int32_t>(kMaxRackFirstUnit));
  rack.mutable_geometry()->set_unit_count(static_cast<int32_t>(kMaxRackUnitCount));
  CHECK(CheckRequestLimits(rack).ok());
  // The highest unit of the largest rack is still a unit every booking request may name.
  CHECK(kMaxRackFirstUnit + kMaxRackUnitCount - 1 <= kMaxRackUnit);
  rack.mutable_geometry()->set_first_unit(static_cast<int32_t>(kMaxRackFirstUnit) + 1);
  CHECK(FieldOf(CheckRequestLimits(rack)) == "geometry.first_unit");
  rack.mutable_geometry()->set_first_unit(-1);
  CHECK(FieldOf(CheckRequestLimits(rack)) == "geometry.first_unit");
  rack.mutable_geometry()->set_first_unit(1);
  rack.mutable_geometry()->set_unit_count(static_cast<int32_t>(kMaxRackUnitCount) + 1);
  CHECK(FieldOf(CheckRequestLimits(rack)) == "geometry.unit_count");
  rack.mutable_geometry()->set_unit_count(42);
  rack.set_power_budget_watts(-1);
  CHECK(FieldOf(CheckRequestLimits(rack)) == "power_budget_watts");

  v1::UpdateRackRequest update;
  update.set_weight_budget_kg(INT32_MAX);
  CHECK(FieldOf(CheckRequestLimits(update)) == "weight_budget_kg");
  update.set_weight_budget_kg(0);  // optional: an explicit 0 clears the budget
  CHECK(CheckRequestLimits(update).ok());

  v1::RegisterDeviceRequest device;
  device.set_height_units(static_cast<int32_t>(kMaxDeviceHeightUnits));
  CHECK(CheckRequestLimits(device).ok());
  device.set_height_units(static_cast<int32_t>(kMaxDeviceHeightUnits) + 1);
  CHECK(FieldOf(CheckRequestLimits(device)) == "height_units");
  device.set_height_units(1);
  device.set_power_draw_watts(-5);
  CHECK(FieldOf(CheckRequestLimits(device)) == "power_draw_watts");
}

TEST_CASE("a client request id is at most 36 bytes, like every id") {
  v1::CreateSiteRequest site;
  site.set_request_id(std::string(36, 'a'));
  CHECK(CheckRequestLimits(site).ok());
  site.set_request_id(std::string(37, 'a'));
  CHECK(FieldOf(CheckRequestLimits(site)) == "request_id");
}

}  // namespace
}  // namespace dcl
