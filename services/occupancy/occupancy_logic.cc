#include "services/occupancy/occupancy_logic.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/request_ledger.h"
#include "services/common/status.h"
#include "services/common/validation.h"
#include "services/devices/device_custody.h"

namespace dcl::occupancy {
namespace {

v1::BookingKind KindOf(const std::string& name) {
  if (name == "placement") return v1::BOOKING_PLACEMENT;
  if (name == "blocking") return v1::BOOKING_BLOCKING;
  if (name == "move_hold") return v1::BOOKING_MOVE_HOLD;
  if (name == "reservation") return v1::BOOKING_RESERVATION;
  return v1::BOOKING_KIND_UNSPECIFIED;
}

// An active booking of a rack with the figures of the device it holds, if any.
struct HeldItem {
  std::string booking_id;
  std::string kind;
  std::string device_id;  // "" when the booking names no device
  std::optional<int64_t> power_watts;
  std::optional<int64_t> weight_kg;
};

// One capacity dimension over the rack's active bookings (placements first, so that a device
// with a placement and a move hold in the same rack is counted once, by its placement). Every
// booking lands in exactly one list: unknown is never added into a number nor read as free.
void FillDimension(const pqxx::field& budget, const std::vector<HeldItem>& items,
                   std::optional<int64_t> HeldItem::*figure, const std::string& dimension,
                   v1::CapacityDimension* out) {
  out->set_budget_known(!budget.is_null());
  out->set_budget(budget.is_null() ? 0 : budget.as<int64_t>());
  int64_t known_used = 0;
  std::set<std::string> counted_devices;
  for (const HeldItem& item : items) {
    auto add = [&](google::protobuf::RepeatedPtrField<v1::CapacityItem>* list) {
      v1::CapacityItem* entry = list->Add();
      entry->set_booking_id(item.booking_id);
      entry->set_kind(KindOf(item.kind));
      entry->set_device_id(item.device_id);
      return entry;
    };
    if (item.device_id.empty()) {
      if (item.kind == "blocking") {
        add(out->mutable_not_counted())
            ->set_reason(absl::StrCat("blocking: holds no device, adds no ", dimension));
      } else if (item.kind == "reservation") {
        add(out->mutable_unknown())
            ->set_reason("rack reservation: what will stand there is unknown");
      } else {
        add(out->mutable_unknown())
            ->set_reason(absl::StrCat(item.kind, " without a device: its ", dimension,
                                      " is unknown"));
      }
      continue;
    }
    if (!counted_devices.insert(item.device_id).second) {
      add(out->mutable_not_counted())
          ->set_reason("the device is already counted in this rack (its placement)");
      continue;
    }
    const std::optional<int64_t>& value = item.*figure;
    if (!value) {
      add(out->mutable_unknown())->set_reason(absl::StrCat("device has no ", dimension, " figure"));
      continue;
    }
    add(out->mutable_counted())->set_value(*value);
    known_used += *value;
  }
  out->set_known_used(known_used);
  out->set_items_with_unknown_value(out->unknown_size());
}

}  // namespace

absl::Status OccupancyLogic::GetRack(const Principal& p, const v1::GetRackRequest& req,
                                     v1::Rack* out) {
  if (absl::Status s = CheckId("rack_id", req.rack_id()); !s.ok()) return s;
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    pqxx::result r = tx.exec_params(
        "SELECT site_id::text, name, first_unit, unit_count, numbering, has_rear, "
        "power_budget_watts, weight_budget_kg FROM racks WHERE id = $1::uuid AND org_id = $2::uuid",
        req.rack_id(), p.org_id);
    if (r.empty()) return NotFound("rack", req.rack_id());
    const auto row = r[0];
    out->set_id(req.rack_id());
    out->set_site_id(row[0].as<std::string>());
    out->set_name(row[1].as<std::string>());
    v1::RackGeometry* g = out->mutable_geometry();
    g->set_first_unit(row[2].as<int>());
    g->set_unit_count(row[3].as<int>());
    g->set_numbering(row[4].as<std::string>() == "descending" ? v1::NUMBERING_DESCENDING
                                                              : v1::NUMBERING_ASCENDING);
    g->set_has_rear(row[5].as<bool>());
    out->set_power_budget_watts(row[6].is_null() ? 0 : row[6].as<int>());
    out->set_weight_budget_kg(row[7].is_null() ? 0 : row[7].as<int>());
    pqxx::result slots = tx.exec_params(
        "SELECT s.side, s.unit, b.id::text, b.kind, b.device_id::text "
        "FROM booking_slots s JOIN bookings b ON b.id = s.booking_id "
        "WHERE s.rack_id = $1::uuid AND s.released_at IS NULL ORDER BY s.unit, s.side = 'rear'",
        req.rack_id());
    for (const auto& s : slots) {
      v1::ElevationSlot* e = out->add_occupied();
      e->mutable_slot()->set_side(ParseSide(s[0].as<std::string>()));
      e->mutable_slot()->set_unit(s[1].as<int>());
      e->set_booking_id(s[2].as<std::string>());
      e->set_kind(KindOf(s[3].as<std::string>()));
      if (!s[4].is_null()) e->set_device_id(s[4].as<std::string>());
    }
    return absl::OkStatus();
  });
}

absl::Status OccupancyLogic::GetRackCapacity(const Principal& p,
                                             const v1::GetRackCapacityRequest& req,
                                             v1::RackCapacity* out) {
  if (absl::Status s = CheckId("rack_id", req.rack_id()); !s.ok()) return s;
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    // Free units: every active slot counts as taken. Power and weight: every active booking
    // that holds space, with its device's figures (FillDimension says how each one counts).
    pqxx::result r = tx.exec_params(
        "SELECT r.unit_count, r.has_rear, r.power_budget_watts, r.weight_budget_kg, "
        "  (SELECT count(*) FROM booking_slots s WHERE s.rack_id = r.id "
        "     AND s.released_at IS NULL AND s.side = 'front'), "
        "  (SELECT count(*) FROM booking_slots s WHERE s.rack_id = r.id "
        "     AND s.released_at IS NULL AND s.side = 'rear') "
        "FROM racks r WHERE r.id = $1::uuid AND r.org_id = $2::uuid",
        req.rack_id(), p.org_id);
    if (r.empty()) return NotFound("rack", req.rack_id());
    const auto row = r[0];
    const int unit_count = row[0].as<int>();
    const bool has_rear = row[1].as<bool>();
    out->set_rack_id(req.rack_id());
    out->set_has_rear(has_rear);
    out->set_free_front_units(unit_count - row[4].as<int>());
    out->set_free_rear_units(has_rear ? unit_count - row[5].as<int>() : 0);

    pqxx::result held = tx.exec_params(
        "SELECT b.id::text, b.kind, coalesce(b.device_id::text, ''), d.power_draw_watts, "
        "d.weight_kg FROM bookings b LEFT JOIN devices d ON d.id = b.device_id "
        "WHERE b.rack_id = $1::uuid AND b.released_at IS NULL "
        "ORDER BY b.kind <> 'placement', b.created_at, b.id",
        req.rack_id());
    std::vector<HeldItem> items;
    items.reserve(held.size());
    for (const auto& h : held) {
      HeldItem item;
      item.booking_id = h[0].as<std::string>();
      item.kind = h[1].as<std::string>();
      item.device_id = h[2].as<std::string>();
      if (!h[3].is_null()) item.power_watts = h[3].as<int64_t>();
      if (!h[4].is_null()) item.weight_kg = h[4].as<int64_t>();
      items.push_back(std::move(item));
    }
    FillDimension(row[2], items, &HeldItem::power_watts, "power", out->mutable_power_watts());
    FillDimension(row[3], items, &HeldItem::weight_kg, "weight", out->mutable_weight_kg());
    return absl::OkStatus();
  });
}

absl::Status OccupancyLogic::PlanBooking(const Principal& p, const v1::PlanBookingRequest& req,
                                         v1::PlanBookingResponse* out) {
  const v1::BookingRequest& b = req.booking();
  BookingSpec spec;
  spec.rack_id = b.rack_id();
  spec.kind = b.kind();
  spec.device_id = b.device_id();
  spec.side = b.side();
  spec.first_unit = b.first_unit();
  spec.last_unit = b.last_unit();
  spec.both_sides = b.both_sides();
  spec.reason = b.reason();
  if (spec.kind == v1::BOOKING_RESERVATION) {
    spec.ttl_seconds = options_.default_reservation_ttl_seconds;
  }
  absl::StatusOr<PlanOutcome> outcome =
      pool_.Transact([&](pqxx::work& tx) { return occupancy::PlanBooking(tx, p, spec); });
  if (!outcome.ok()) return outcome.status();
  out->set_ok(outcome->rejection.ok());
  for (const SlotRef& s : outcome->slots) {
    v1::Slot* slot = out->add_slots();
    slot->set_side(s.side);
    slot->set_unit(s.unit);
  }
  if (!outcome->rejection.ok()) {
    if (auto detail = GetErrorDetail(outcome->rejection)) {
      *out->mutable_rejection() = *detail;
    } else {
      out->mutable_rejection()->set_reason(ReasonOf(outcome->rejection));
      out->mutable_rejection()->set_message(std::string(outcome->rejection.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status OccupancyLogic::Create(const Principal& p, const BookingSpec& spec, Rpc rpc,
                                    const google::protobuf::Message& request,
                                    const std::string& request_id, v1::Booking* out,
                                    bool* replayed) {
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    absl::StatusOr<request_ledger::Claim> claim =
        request_ledger::Begin(tx, p.org_id, rpc, request_id, request);
    if (!claim.ok()) return claim.status();
    if (claim->replay) return claim->Replay(out, replayed);
    absl::StatusOr<v1::Booking> booking = CreateBooking(tx, p, spec);
    if (!booking.ok()) return booking.status();
    *out = *std::move(booking);
    return request_ledger::Finish(tx, *claim, *out);
  });
}

absl::Status OccupancyLogic::PlaceDevice(const Principal& p, const v1::PlaceDeviceRequest& req,
                                         v1::Booking* out, bool* replayed) {
  BookingSpec spec;
  spec.rack_id = req.rack_id();
  spec.kind = v1::BOOKING_PLACEMENT;
  spec.device_id = req.device_id();
  spec.side = req.side();
  spec.first_unit = req.unit();
  spec.reason = req.reason();
  return Create(p, spec, Rpc::kPlaceDevice, req, req.request_id(), out, replayed);
}

absl::Status OccupancyLogic::BlockUnits(const Principal& p, const v1::BlockUnitsRequest& req,
                                        v1::Booking* out, bool* replayed) {
  BookingSpec spec;
  spec.rack_id = req.rack_id();
  spec.kind = v1::BOOKING_BLOCKING;
  spec.side = req.side();
  spec.both_sides = req.both_sides();
  spec.first_unit = req.first_unit();
  spec.last_unit = req.last_unit();
  spec.reason = req.reason();
  return Create(p, spec, Rpc::kBlockUnits, req, req.request_id(), out, replayed);
}

absl::Status OccupancyLogic::ReserveUnits(const Principal& p, const v1::ReserveUnitsRequest& req,
                                          v1::Booking* out, bool* replayed) {
  BookingSpec spec;
  spec.rack_id = req.rack_id();
  spec.kind = v1::BOOKING_RESERVATION;
  spec.side = req.side();
  spec.both_sides = req.both_sides();
  spec.first_unit = req.first_unit();
  spec.last_unit = req.last_unit();
  spec.reason = req.reason();
  spec.ttl_seconds =
      req.ttl_seconds() == 0 ? options_.default_reservation_ttl_seconds : req.ttl_seconds();
  return Create(p, spec, Rpc::kReserveUnits, req, req.request_id(), out, replayed);
}

absl::Status OccupancyLogic::ReleaseBooking(const Principal& p,
                                            const v1::ReleaseBookingRequest& req, v1::Booking* out,
                                            bool* replayed) {
  if (absl::Status s = CheckId("booking_id", req.booking_id()); !s.ok()) return s;
  if (absl::Status s = CheckText("reason", req.reason(), kMaxNoteLength, false); !s.ok()) {
    return s;
  }
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    absl::StatusOr<request_ledger::Claim> claim =
        request_ledger::Begin(tx, p.org_id, Rpc::kReleaseBooking, req.request_id(), req);
    if (!claim.ok()) return claim.status();
    if (claim->replay) return claim->Replay(out, replayed);
    absl::StatusOr<v1::Booking> current = LoadBooking(tx, p, req.booking_id());
    if (!current.ok()) return current.status();
    // Enforced here, not in the schema: the move service releases its own holds.
    if (current->kind() == v1::BOOKING_MOVE_HOLD) {
      return Error(absl::StatusCode::kFailedPrecondition, v1::WRONG_STATE,
                   "this booking holds space for a move in progress; cancel the move instead")
          .Meta("booking_id", req.booking_id());
    }
    // Enforced here too: the placement a move starts from is the machine's place until the
    // move ends (the machine may still be bolted in); the move releases it when it
    // completes. The device row lock orders this check against a concurrent StartMove,
    // which takes the same lock (device_custody.h).
    if (current->kind() == v1::BOOKING_PLACEMENT) {
      absl::StatusOr<std::optional<devices::DeviceRow>> device =
          devices::LockDevice(tx, p.org_id, current->device_id());
      if (!device.ok()) return device.status();
      if (std::optional<std::string> move_id = devices::FindOpenMove(tx, current->device_id())) {
        return Error(absl::StatusCode::kFailedPrecondition, v1::MOVE_ALREADY_OPEN,
                     "the device is being moved; its move releases this placement")
            .Meta("booking_id", req.booking_id())
            .Meta("move_id", *move_id);
      }
    }
    absl::StatusOr<v1::Booking> released =
        occupancy::ReleaseBooking(tx, p, req.booking_id(), req.reason());
    if (!released.ok()) return released.status();
    *out = *std::move(released);
    return request_ledger::Finish(tx, *claim, *out);
  });
}

}  // namespace dcl::occupancy
