#include "services/occupancy/occupancy_logic.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/request_ledger.h"
#include "services/common/status.h"
#include "services/common/validation.h"
#include "services/devices/device_custody.h"
#include "services/occupancy/rack_store.h"
#include "services/occupancy/site_capacity.h"
#include "services/occupancy/site_capacity_store.h"

namespace dcl::occupancy {
namespace {

// One capacity dimension over the rack's active bookings, each with the figure the database
// counts for it (CountedFigures). Every booking lands in exactly one list. On a rack without
// budget rows nothing is decided by the database: there a device with a placement and a move hold
// is counted once (by its placement: placements come first), and a budget with a device whose
// figure is unknown reads as load unknown, as the database's row would.
void FillDimension(std::optional<int64_t> budget, const std::optional<BudgetRow>& row,
                   bool has_budget_rows, const std::vector<HeldItem>& items,
                   std::optional<int64_t> HeldItem::*figure, const std::string& dimension,
                   v1::CapacityDimension* out) {
  out->set_budget_known(budget.has_value());
  out->set_budget(budget.value_or(0));
  out->set_allowance(row ? row->allowance : 0);
  bool load_unknown = row && row->unknown > 0;
  int64_t known_used = 0;
  std::set<std::string> counted_devices;
  for (const HeldItem& item : items) {
    auto add = [&](google::protobuf::RepeatedPtrField<v1::CapacityItem>* list) {
      v1::CapacityItem* entry = list->Add();
      entry->set_booking_id(item.booking_id);
      entry->set_kind(item.kind);
      entry->set_device_id(item.device_id);
      return entry;
    };
    const std::optional<int64_t>& value = item.*figure;
    if (item.device_id.empty()) {
      if (item.kind == v1::BOOKING_BLOCKING) {
        add(out->mutable_not_counted())
            ->set_reason(absl::StrCat("blocking: holds no device, adds no ", dimension));
      } else if (value) {
        add(out->mutable_counted())->set_value(*value);
        known_used += *value;
      } else if (item.kind == v1::BOOKING_RESERVATION) {
        add(out->mutable_unknown())
            ->set_reason(absl::StrCat("rack reservation: holds units only, no ", dimension,
                                      " figure given"));
      } else {
        add(out->mutable_unknown())
            ->set_reason(
                absl::StrCat(BookingKindName(item.kind), " without a device: holds units only"));
      }
      continue;
    }
    if (!has_budget_rows && !counted_devices.insert(item.device_id).second) {
      add(out->mutable_not_counted())
          ->set_reason("the device is already counted in this rack (its placement)");
      continue;
    }
    if (!value) {
      add(out->mutable_unknown())->set_reason(absl::StrCat("device has no ", dimension, " figure"));
      if (!has_budget_rows && budget) load_unknown = true;
      continue;
    }
    add(out->mutable_counted())->set_value(*value);
    known_used += *value;
  }
  out->set_known_used(known_used);
  out->set_items_with_unknown_value(out->unknown_size());
  out->set_load_unknown(load_unknown);
}

}  // namespace

void EchoFigures(const BookingSpec& spec, v1::Booking* out) {
  if (spec.power_watts) out->set_power_watts(*spec.power_watts);
  if (spec.weight_kg) out->set_weight_kg(*spec.weight_kg);
}

absl::Status OccupancyLogic::GetRack(const Principal& p, const v1::GetRackRequest& req,
                                     v1::Rack* out) {
  if (absl::Status s = CheckId("rack_id", req.rack_id()); !s.ok()) return s;
  absl::StatusOr<v1::Rack> rack =
      pool_.Transact([&](pqxx::work& tx) { return LoadRack(tx, p.org_id, req.rack_id()); });
  if (!rack.ok()) return rack.status();
  *out = *std::move(rack);
  return absl::OkStatus();
}

absl::Status OccupancyLogic::GetRackCapacity(const Principal& p,
                                             const v1::GetRackCapacityRequest& req,
                                             v1::RackCapacity* out) {
  if (absl::Status s = CheckId("rack_id", req.rack_id()); !s.ok()) return s;
  absl::StatusOr<RackLoad> load =
      pool_.Transact([&](pqxx::work& tx) { return LoadRackLoad(tx, p.org_id, req.rack_id()); });
  if (!load.ok()) return load.status();
  // Free units: every active slot counts as taken. Power and weight: every active booking
  // that holds space, with its device's figures (FillDimension says how each one counts).
  out->set_rack_id(req.rack_id());
  out->set_has_rear(load->has_rear);
  out->set_free_front_units(load->unit_count - load->taken_front_units);
  out->set_free_rear_units(load->has_rear ? load->unit_count - load->taken_rear_units : 0);
  FillDimension(load->power_budget_watts, load->power_row, load->has_budget_rows, load->held,
                &HeldItem::power_watts, "power", out->mutable_power_watts());
  FillDimension(load->weight_budget_kg, load->weight_row, load->has_budget_rows, load->held,
                &HeldItem::weight_kg, "weight", out->mutable_weight_kg());
  // Heat is the allocated draw: the power figures, judged by the cooling budget.
  FillDimension(load->cooling_budget_watts, load->cooling_row, load->has_budget_rows, load->held,
                &HeldItem::power_watts, "power", out->mutable_cooling_watts());
  out->set_airflow(load->airflow);
  for (const PortLoad& speed : load->ports) {
    v1::PortCapacity* ports = out->add_ports();
    ports->set_speed(speed.speed);
    ports->set_offered(speed.offered);
    ports->set_used(speed.used);
  }
  for (const FeedLoad& f : load->feeds) {
    v1::FeedCapacity* feed = out->add_feeds();
    feed->set_name(f.name);
    feed->set_voltage(f.voltage);
    feed->set_amperage(f.amperage);
    feed->set_phase(f.phase);
    feed->set_max_utilization_percent(f.max_utilization_percent);
    feed->set_available_watts(f.available_watts);
    feed->set_used_watts(f.used_watts);
    int64_t most = f.used_watts;
    for (const auto& [lost, carried] : f.carried_if_lost) {
      v1::FeedLoss* loss = feed->add_if_lost();
      loss->set_lost_feed(lost);
      loss->set_carried_watts(carried);
      most = std::max(most, carried);
    }
    feed->set_headroom_watts(f.available_watts - most);
  }
  return absl::OkStatus();
}

absl::Status OccupancyLogic::GetSiteCapacity(const Principal& p,
                                             const v1::GetSiteCapacityRequest& req,
                                             v1::SiteCapacity* out) {
  if (absl::Status s = CheckId("site_id", req.site_id()); !s.ok()) return s;
  // window_days and the typical figures are bounded by the gate (validation.h).
  const int window_days = static_cast<int>(
      req.window_days() == 0 ? kDefaultCapacityWindowDays : req.window_days());
  absl::StatusOr<SiteFigures> figures = pool_.Transact([&](pqxx::work& tx) {
    return LoadSiteFigures(tx, p.org_id, req.site_id(), window_days);
  });
  if (!figures.ok()) return figures.status();
  TypicalDevice typical = figures->median_device;
  if (req.has_typical_power_watts()) typical.power_watts = req.typical_power_watts();
  if (req.has_typical_weight_kg()) typical.weight_kg = req.typical_weight_kg();
  out->set_site_id(req.site_id());
  out->set_window_days(window_days);
  out->set_typical_power_watts(typical.power_watts);
  out->set_typical_weight_kg(typical.weight_kg);
  out->set_rack_count(static_cast<int32_t>(figures->racks.size()));
  for (const DimensionCapacity& d : ComputeSiteCapacity(figures->racks, typical, window_days)) {
    v1::SiteCapacityDimension* dim = out->add_dimensions();
    dim->set_dimension(SiteDimensionName(d.dimension));
    dim->set_racks(d.racks);
    dim->set_total(d.total);
    dim->set_used(d.used);
    dim->set_free(d.free);
    dim->set_stranded(d.stranded);
    dim->set_unknown_racks(d.unknown_racks);
    dim->set_unknown_free(d.unknown_free);
    dim->set_booked_in_window(d.booked_in_window);
    dim->set_released_in_window(d.released_in_window);
    dim->set_net_per_day(d.net_per_day);
    if (d.days_to_exhaustion) dim->set_days_to_exhaustion(*d.days_to_exhaustion);
  }
  return absl::OkStatus();
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
  return request_ledger::TransactOnce(pool_, p.org_id, rpc, request_id, request, out, replayed,
                                      [&](pqxx::work& tx) -> absl::Status {
                                        absl::StatusOr<v1::Booking> booking =
                                            CreateBooking(tx, p, spec);
                                        if (!booking.ok()) return booking.status();
                                        *out = *std::move(booking);
                                        EchoFigures(spec, out);
                                        return absl::OkStatus();
                                      });
}

namespace {

// PlaceDevice's one write, inside the caller's transaction (PlaceDevice's own, or one
// PlaceDevices transaction for all its items): a new placement, or one out of the unit
// reservation the request names. Both go through the booking write path (booking_store.h),
// where the slot index and the device index decide.
absl::StatusOr<v1::Booking> PlaceInTransaction(pqxx::transaction_base& tx, const Principal& p,
                                               const v1::PlaceDeviceRequest& req) {
  BookingSpec spec = DeviceFootprintSpec(v1::BOOKING_PLACEMENT, req.rack_id(), req.device_id(),
                                         req.side(), req.unit(), req.reason());
  spec.feed_names.assign(req.power_feeds().begin(), req.power_feeds().end());
  if (req.reservation_id().empty()) return CreateBooking(tx, p, spec);
  // Out of a unit reservation: its units become the placement (booking_store.h says how).
  return PromoteReservation(tx, p, req.reservation_id(), spec);
}

}  // namespace

absl::Status OccupancyLogic::PlaceDevice(const Principal& p, const v1::PlaceDeviceRequest& req,
                                         v1::Booking* out, bool* replayed) {
  return request_ledger::TransactOnce(
      pool_, p.org_id, Rpc::kPlaceDevice, req.request_id(), req, out, replayed,
      [&](pqxx::work& tx) -> absl::Status {
        absl::StatusOr<v1::Booking> booking = PlaceInTransaction(tx, p, req);
        if (!booking.ok()) return booking.status();
        *out = *std::move(booking);
        return absl::OkStatus();
      });
}

// All or none, in one transaction, rather than a result per item: a caller that reads only
// the batch's status can never leave half a rack placed without knowing it (a skip that loses
// data is a refusal), the ledger's rule "only successful answers are kept" stays whole per
// batch, and a refusal names its item (ForBatchItem) with the reason PlaceDevice would give;
// a caller that wants every item's own answer sends those items singly (the NetBox import
// does). No savepoint per item is needed: a lost race on the slot or device index is caught
// inside the schema's dcl_insert_booking (the transaction survives it, and CreateBooking re-reads
// the colliding units for the message), and every other refusal rolls the whole batch back.
absl::Status OccupancyLogic::PlaceDevices(const Principal& p, const v1::PlaceDevicesRequest& req,
                                          v1::PlaceDevicesResponse* out, bool* replayed) {
  if (req.requests().empty()) return InvalidInput("requests", "at least one item is needed");
  if (req.requests_size() > kMaxBatchItems) {
    return BatchTooLarge(req.requests_size(), kMaxBatchItems);
  }
  DCL_RETURN_IF_ERROR(CheckDistinctRequestIds(req));
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    out->Clear();
    for (int i = 0; i < req.requests_size(); ++i) {
      const v1::PlaceDeviceRequest& item = req.requests(i);
      v1::Booking* booking = out->add_bookings();
      // Each item claims its own request id under PlaceDevice's name and parameters digest:
      // an item and a single PlaceDevice with the same id replay each other.
      absl::StatusOr<request_ledger::Claim> claim =
          request_ledger::Begin(tx, p.org_id, Rpc::kPlaceDevice, item.request_id(), item);
      if (!claim.ok()) return ForBatchItem(claim.status(), "requests", i);
      if (claim->replay) {
        bool item_replayed = false;
        DCL_RETURN_IF_ERROR(claim->Replay(booking, &item_replayed));
        out->add_replayed_items(i);
        continue;
      }
      absl::StatusOr<v1::Booking> placed = PlaceInTransaction(tx, p, item);
      if (!placed.ok()) return ForBatchItem(placed.status(), "requests", i);
      *booking = *std::move(placed);
      DCL_RETURN_IF_ERROR(request_ledger::Finish(tx, *claim, *booking));
    }
    if (replayed != nullptr) *replayed = out->replayed_items_size() == req.requests_size();
    return absl::OkStatus();
  });
}

absl::Status OccupancyLogic::BlockUnits(const Principal& p, const v1::BlockUnitsRequest& req,
                                        v1::Booking* out, bool* replayed) {
  const BookingSpec spec =
      UnitRangeSpec(v1::BOOKING_BLOCKING, req.rack_id(), req.side(), req.both_sides(),
                    req.first_unit(), req.last_unit(), req.reason(), /*ttl_seconds=*/0);
  return Create(p, spec, Rpc::kBlockUnits, req, req.request_id(), out, replayed);
}

absl::Status OccupancyLogic::ReserveUnits(const Principal& p, const v1::ReserveUnitsRequest& req,
                                          v1::Booking* out, bool* replayed) {
  BookingSpec spec = UnitRangeSpec(
      v1::BOOKING_RESERVATION, req.rack_id(), req.side(), req.both_sides(), req.first_unit(),
      req.last_unit(), req.reason(),
      req.ttl_seconds() == 0 ? options_.default_reservation_ttl_seconds : req.ttl_seconds());
  // What will stand there, held in the rack's budgets; without it the units only.
  if (req.has_power_watts()) spec.power_watts = req.power_watts();
  if (req.has_weight_kg()) spec.weight_kg = req.weight_kg();
  return Create(p, spec, Rpc::kReserveUnits, req, req.request_id(), out, replayed);
}

absl::Status OccupancyLogic::ReleaseBooking(const Principal& p,
                                            const v1::ReleaseBookingRequest& req, v1::Booking* out,
                                            bool* replayed) {
  if (absl::Status s = CheckId("booking_id", req.booking_id()); !s.ok()) return s;
  if (absl::Status s = CheckText("reason", req.reason(), kMaxNoteLength, false); !s.ok()) {
    return s;
  }
  if (!v1::BookingKind_IsValid(req.expected_kind())) {
    return InvalidInput("expected_kind", "not a booking kind");
  }
  return request_ledger::TransactOnce(
      pool_, p.org_id, Rpc::kReleaseBooking, req.request_id(), req, out, replayed,
      [&](pqxx::work& tx) -> absl::Status {
        absl::StatusOr<v1::Booking> current = LoadBooking(tx, p, req.booking_id());
        if (!current.ok()) return current.status();
        if (req.expected_kind() != v1::BOOKING_KIND_UNSPECIFIED && !current->has_released_at() &&
            current->kind() != req.expected_kind()) {
          return NotOfKind(req.booking_id(), current->kind(), req.expected_kind());
        }
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
          if (std::optional<std::string> move_id =
                  devices::FindOpenMove(tx, current->device_id())) {
            return Error(absl::StatusCode::kFailedPrecondition, v1::MOVE_ALREADY_OPEN,
                         "the device is being moved; its move releases this placement")
                .Meta("booking_id", req.booking_id())
                .Meta("move_id", *move_id);
          }
        }
        absl::StatusOr<v1::Booking> released =
            occupancy::ReleaseBooking(tx, p, req.booking_id(), current->kind(), req.reason());
        if (!released.ok()) return released.status();
        *out = *std::move(released);
        return absl::OkStatus();
      });
}

}  // namespace dcl::occupancy
