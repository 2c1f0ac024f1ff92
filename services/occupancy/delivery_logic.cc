// OccupancyLogic's deliveries (occupancy_logic.h): PlanDelivery reads the site and runs the pure
// planner (delivery_plan.h); ReserveDelivery writes one unit reservation per planned item through
// the one booking write path, all in one transaction, each holding its item's known power and
// weight in the rack's budgets. The database stays the arbiter: a booking that landed after the
// plan makes the whole delivery fail, its colliding units named, and so does a budget it would
// exceed (the refusal of the booking write path).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/common/request_ledger.h"
#include "services/common/status.h"
#include "services/common/validation.h"
#include "services/occupancy/delivery_plan.h"
#include "services/occupancy/delivery_store.h"
#include "services/occupancy/occupancy_logic.h"

namespace dcl::occupancy {
namespace {

constexpr size_t kMaxLabelLength = 100;
// A refusal lists this many unplaced items with their reasons; the count says how many more.
constexpr size_t kUnplacedListed = 3;

struct PreparedDelivery {
  std::vector<DeliveryRack> racks;
  std::vector<DeliveryItem> items;
  DeliveryConstraints constraints;
};

absl::StatusOr<PreparedDelivery> PrepareDelivery(pqxx::transaction_base& tx, const Principal& p,
                                                 const v1::PlanDeliveryRequest& req) {
  if (absl::Status s = CheckId("site_id", req.site_id()); !s.ok()) return s;
  if (req.items_size() == 0) return InvalidInput("items", "a delivery has at least one item");
  const v1::DeliveryConstraints& c = req.constraints();
  if (c.keep_together() && c.max_per_rack() > 0) {
    return InvalidInput("constraints", "keep_together and max_per_rack exclude each other");
  }
  for (const std::string& id : c.rack_ids()) {
    if (absl::Status s = CheckId("constraints.rack_ids", id); !s.ok()) return s;
  }
  // Items in request order, a spec of count n as n items. Nothing is guessed: a spec says its
  // height and depth (DEPTH_UNKNOWN is a depth); a figure not given is unknown.
  std::vector<std::string> device_ids;
  int64_t total = 0;
  for (int i = 0; i < req.items_size(); ++i) {
    const v1::DeliveryItem& item = req.items(i);
    const std::string field = absl::StrCat("items[", i, "]");
    switch (item.what_case()) {
      case v1::DeliveryItem::kDeviceId:
        if (absl::Status s = CheckId(field + ".device_id", item.device_id()); !s.ok()) return s;
        device_ids.push_back(item.device_id());
        ++total;
        break;
      case v1::DeliveryItem::kSpec:
        if (item.spec().height_units() < 1) {
          return InvalidInput(field + ".spec.height_units", "is required");
        }
        if (item.spec().depth_class() == v1::DEPTH_CLASS_UNSPECIFIED) {
          return InvalidInput(field + ".spec.depth_class",
                              "say full, half or unknown (unknown claims both sides)");
        }
        if (absl::Status s = CheckText(field + ".spec.label", item.spec().label(),
                                       kMaxLabelLength, false);
            !s.ok()) {
          return s;
        }
        total += std::max(1, item.spec().count());
        break;
      case v1::DeliveryItem::WHAT_NOT_SET:
        return InvalidInput(field, "name a device_id or a spec");
    }
    if (total > kMaxDeliveryItems) {
      return InvalidInput("items", absl::StrCat("at most ", kMaxDeliveryItems, " devices"));
    }
  }
  absl::StatusOr<std::vector<DeliveryRack>> racks = LoadDeliveryRacks(tx, p.org_id, req.site_id());
  if (!racks.ok()) return racks.status();
  for (const std::string& id : c.rack_ids()) {
    if (std::none_of(racks->begin(), racks->end(),
                     [&](const DeliveryRack& r) { return r.id == id; })) {
      return NotFound("rack", id);  // unknown, another organization's, or another site's
    }
  }
  absl::StatusOr<std::vector<DeliveryItem>> devices =
      LoadDeliveryDevices(tx, p.org_id, req.site_id(), device_ids);
  if (!devices.ok()) return devices.status();

  PreparedDelivery prepared;
  prepared.racks = *std::move(racks);
  size_t next_device = 0;
  for (int i = 0; i < req.items_size(); ++i) {
    const v1::DeliveryItem& item = req.items(i);
    if (item.what_case() == v1::DeliveryItem::kDeviceId) {
      prepared.items.push_back((*devices)[next_device++]);
      continue;
    }
    const v1::DeliverySpec& spec = item.spec();
    const int count = std::max(1, spec.count());
    const std::string label = spec.label().empty() ? absl::StrCat("spec ", i + 1) : spec.label();
    for (int n = 1; n <= count; ++n) {
      DeliveryItem d;
      d.name = count == 1 ? label : absl::StrCat(label, " #", n);
      d.height = spec.height_units();
      d.depth = spec.depth_class();
      if (spec.has_power_draw_watts()) d.power_watts = spec.power_draw_watts();
      if (spec.has_weight_kg()) d.weight_kg = spec.weight_kg();
      prepared.items.push_back(std::move(d));
    }
  }
  DeliveryConstraints& k = prepared.constraints;
  k.allowed_rack_ids.assign(c.rack_ids().begin(), c.rack_ids().end());
  k.keep_together = c.keep_together();
  k.max_per_rack = c.max_per_rack();
  k.side = c.side();
  k.power_headroom_watts = c.power_headroom_watts();
  k.weight_headroom_kg = c.weight_headroom_kg();
  return prepared;
}

void FillDimension(const DimensionView& v, v1::DeliveryDimension* out) {
  out->set_budget_known(v.budget.has_value());
  out->set_budget(v.budget.value_or(0));
  out->set_known_before(v.known_before);
  out->set_used_after(v.used_after);
  for (const std::string& name : v.unknown) out->add_unknown(name);
  out->set_allowance(v.allowance);
  out->set_load_unknown(v.load_unknown);
}

void ToProto(const PreparedDelivery& d, const DeliveryPlan& plan, v1::DeliveryPlan* out) {
  std::map<std::string, std::string> rack_names;
  for (const DeliveryRack& r : d.racks) rack_names[r.id] = r.name;
  for (const PlannedItem& p : plan.planned) {
    v1::PlannedDeliveryItem* item = out->add_planned();
    item->set_item(p.item);
    item->set_name(d.items[p.item].name);
    item->set_device_id(d.items[p.item].device_id);
    item->set_rack_id(p.rack_id);
    item->set_rack_name(rack_names[p.rack_id]);
    item->set_side(p.side);
    item->set_unit(p.anchor_unit);
    // What its reservation will hold in the rack's budgets.
    if (d.items[p.item].power_watts) item->set_power_watts(*d.items[p.item].power_watts);
    if (d.items[p.item].weight_kg) item->set_weight_kg(*d.items[p.item].weight_kg);
    for (const SlotRef& s : p.slots) {
      v1::Slot* slot = item->add_slots();
      slot->set_side(s.side);
      slot->set_unit(s.unit);
    }
  }
  for (const RackView& v : plan.racks) {
    v1::DeliveryRack* rack = out->add_racks();
    rack->set_rack_id(v.rack_id);
    rack->set_rack_name(v.name);
    rack->set_free_front_before(v.free_front_before);
    rack->set_free_rear_before(v.free_rear_before);
    rack->set_free_front_after(v.free_front_after);
    rack->set_free_rear_after(v.free_rear_after);
    rack->set_items_planned(v.items_planned);
    FillDimension(v.power, rack->mutable_power_watts());
    FillDimension(v.weight, rack->mutable_weight_kg());
    FillDimension(v.cooling, rack->mutable_cooling_watts());
  }
  for (const UnplacedItem& u : plan.unplaced) {
    v1::UnplacedDeliveryItem* item = out->add_unplaced();
    item->set_item(u.item);
    item->set_name(d.items[u.item].name);
    for (const std::string& reason : u.reasons) item->add_reasons(reason);
  }
  out->set_strategy(plan.strategy);
}

// The range a planned item's slots span: one side or both, lowest to highest unit, every slot
// of that product present and nothing else (what a unit reservation can hold).
struct UnitRange {
  bool front = false;
  bool rear = false;
  int low = 0;
  int high = 0;
};

absl::StatusOr<UnitRange> RangeOf(const v1::PlannedDeliveryItem& item, const std::string& field) {
  if (item.slots_size() == 0) return InvalidInput(field + ".slots", "a planned item has slots");
  UnitRange r;
  r.low = item.slots(0).unit();
  r.high = r.low;
  std::vector<SlotRef> given;
  for (const v1::Slot& s : item.slots()) {
    if (s.side() != v1::SIDE_FRONT && s.side() != v1::SIDE_REAR) {
      return InvalidInput(field + ".slots", "every slot is front or rear");
    }
    (s.side() == v1::SIDE_FRONT ? r.front : r.rear) = true;
    r.low = std::min(r.low, s.unit());
    r.high = std::max(r.high, s.unit());
    given.push_back({s.side(), s.unit()});
  }
  std::sort(given.begin(), given.end());
  std::vector<SlotRef> product;
  for (v1::Side side : {v1::SIDE_FRONT, v1::SIDE_REAR}) {
    if ((side == v1::SIDE_FRONT && !r.front) || (side == v1::SIDE_REAR && !r.rear)) continue;
    for (int u = r.low; u <= r.high; ++u) product.push_back({side, u});
  }
  if (given != product) {
    return InvalidInput(field + ".slots",
                        "the slots of an item are one range of units on one side or both");
  }
  return r;
}

absl::Status NoRoomForEveryItem(const v1::DeliveryPlan& plan, size_t total) {
  std::vector<std::string> listed;
  for (int i = 0; i < plan.unplaced_size() && listed.size() < kUnplacedListed; ++i) {
    listed.push_back(absl::StrCat(plan.unplaced(i).name(), " (",
                                  absl::StrJoin(plan.unplaced(i).reasons(), "; "), ")"));
  }
  return Error(absl::StatusCode::kFailedPrecondition, v1::NO_CAPACITY,
               absl::StrCat(plan.unplaced_size(), " of ", total,
                            " items fit nowhere, nothing reserved: ",
                            absl::StrJoin(listed, "; "),
                            plan.unplaced_size() > static_cast<int>(kUnplacedListed) ? "; ..."
                                                                                      : ""))
      .Meta("unplaced", std::to_string(plan.unplaced_size()))
      .status();
}

// ReserveDelivery's refusal when units of the plan were booked since it was read. The first
// racks are named with their first units, the rest counted: a plan of 500 items can collide in
// hundreds of racks, and a refusal must fit a client's header limit without the last-resort
// shortening (docs/api.md), its text travelling five times (the message, the rich status, the
// detail's message and metadata). The caller plans again either way. `collisions` by rack name,
// `rack_order` the racks in the plan's order.
absl::Status BookedSincePlan(const std::vector<std::string>& rack_order,
                             std::map<std::string, std::vector<SlotRef>>& collisions) {
  constexpr size_t kNamedRacks = 3;
  constexpr size_t kNamedUnitsPerRack = 8;
  std::vector<std::string> parts;
  std::vector<SlotRef> named_slots;
  size_t units = 0;
  for (const std::string& rack : rack_order) {
    std::vector<SlotRef>& slots = collisions[rack];
    units += slots.size();
    if (parts.size() == kNamedRacks) continue;
    std::sort(slots.begin(), slots.end());
    const std::vector<SlotRef> shown(slots.begin(),
                                     slots.begin() + std::min(slots.size(), kNamedUnitsPerRack));
    named_slots.insert(named_slots.end(), shown.begin(), shown.end());
    parts.push_back(absl::StrCat(rack, ": ", DescribeSlots(shown),
                                 slots.size() > shown.size()
                                     ? absl::StrCat(" and ", slots.size() - shown.size(), " more")
                                     : ""));
  }
  const size_t unnamed = rack_order.size() - parts.size();
  const std::string named = absl::StrJoin(parts, "; ");
  Error error(absl::StatusCode::kFailedPrecondition, v1::UNIT_OCCUPIED,
              absl::StrCat("booked since the plan, nothing reserved: ", named,
                           unnamed == 0 ? ""
                                        : absl::StrCat("; and ", unnamed, " more rack",
                                                       unnamed == 1 ? "" : "s")));
  for (const SlotRef& s : named_slots) {
    v1::Slot* slot = error.detail().add_colliding_slots();
    slot->set_side(s.side);
    slot->set_unit(s.unit);
  }
  error.Meta("collisions", named)
      .Meta("collision_racks", absl::StrCat(rack_order.size()))
      .Meta("collision_units", absl::StrCat(units));
  return error.status();
}

}  // namespace

absl::Status OccupancyLogic::PlanDelivery(const Principal& p, const v1::PlanDeliveryRequest& req,
                                          v1::DeliveryPlan* out) {
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    absl::StatusOr<PreparedDelivery> d = PrepareDelivery(tx, p, req);
    if (!d.ok()) return d.status();
    ToProto(*d, occupancy::PlanDelivery(d->racks, d->items, d->constraints), out);
    return absl::OkStatus();
  });
}

absl::Status OccupancyLogic::ReserveDelivery(const Principal& p,
                                             const v1::ReserveDeliveryRequest& req,
                                             v1::DeliveryReservation* out, bool* replayed) {
  if (absl::Status s = CheckText("reason", req.reason(), kMaxNoteLength, false); !s.ok()) {
    return s;
  }
  if (req.what_case() == v1::ReserveDeliveryRequest::WHAT_NOT_SET) {
    return InvalidInput("plan_request", "give a plan_request or the planned items");
  }
  if (req.what_case() == v1::ReserveDeliveryRequest::kPlanned) {
    if (req.planned().items_size() == 0) {
      return InvalidInput("planned.items", "a delivery has at least one item");
    }
    if (req.planned().items_size() > kMaxDeliveryItems) {
      return InvalidInput("planned.items", absl::StrCat("at most ", kMaxDeliveryItems, " items"));
    }
  }
  const int64_t ttl = req.ttl_seconds() == 0 ? options_.default_reservation_ttl_seconds
                                             : req.ttl_seconds();
  const std::string reason = req.reason().empty() ? "delivery" : req.reason();
  return request_ledger::TransactOnce(
      pool_, p.org_id, Rpc::kReserveDelivery, req.request_id(), req, out, replayed,
      [&](pqxx::work& tx) -> absl::Status {
        out->Clear();
        if (req.what_case() == v1::ReserveDeliveryRequest::kPlanRequest) {
          // Planned again in this transaction, against what is booked right now.
          absl::StatusOr<PreparedDelivery> d = PrepareDelivery(tx, p, req.plan_request());
          if (!d.ok()) return d.status();
          ToProto(*d, occupancy::PlanDelivery(d->racks, d->items, d->constraints),
                  out->mutable_plan());
          if (out->plan().unplaced_size() > 0) {
            return NoRoomForEveryItem(out->plan(), d->items.size());
          }
        } else {
          *out->mutable_plan()->mutable_planned() = req.planned().items();
        }
        // One unit reservation per item, every one through the booking write path; the slot
        // index decides each. A collision does not stop the loop (the insert function leaves the
        // transaction usable), so that the refusal counts every colliding unit and names those
        // of the first racks; any refusal rolls the whole transaction back: all or nothing.
        std::map<std::string, std::vector<SlotRef>> collisions;  // by rack
        std::vector<std::string> rack_order;
        for (int i = 0; i < out->plan().planned_size(); ++i) {
          const v1::PlannedDeliveryItem& item = out->plan().planned(i);
          const std::string field = absl::StrCat("planned.items[", i, "]");
          if (absl::Status s = CheckId(field + ".rack_id", item.rack_id()); !s.ok()) return s;
          absl::StatusOr<UnitRange> range = RangeOf(item, field);
          if (!range.ok()) return range.status();
          const bool both = range->front && range->rear;
          BookingSpec spec = UnitRangeSpec(
              v1::BOOKING_RESERVATION, item.rack_id(),
              both           ? v1::SIDE_UNSPECIFIED
              : range->front ? v1::SIDE_FRONT
                             : v1::SIDE_REAR,
              both, range->low, range->high,
              absl::StrCat(reason, ": ", item.name().empty() ? field : item.name()), ttl);
          // The item's known figures, held in the rack's budgets (the database judges them as
          // it would the device's); an item without one reserves units only.
          if (item.has_power_watts()) spec.power_watts = item.power_watts();
          if (item.has_weight_kg()) spec.weight_kg = item.weight_kg();
          absl::StatusOr<v1::Booking> booking = CreateBooking(tx, p, spec);
          if (booking.ok()) {
            EchoFigures(spec, &*booking);
            *out->add_reservations() = *std::move(booking);
            continue;
          }
          std::optional<v1::ErrorDetail> detail = GetErrorDetail(booking.status());
          if (!detail || detail->reason() != v1::UNIT_OCCUPIED) return booking.status();
          const std::string rack =
              item.rack_name().empty() ? item.rack_id() : item.rack_name();
          if (collisions.count(rack) == 0) rack_order.push_back(rack);
          for (const v1::Slot& s : detail->colliding_slots()) {
            collisions[rack].push_back({s.side(), s.unit()});
          }
        }
        if (collisions.empty()) return absl::OkStatus();
        return BookedSincePlan(rack_order, collisions);
      });
}

}  // namespace dcl::occupancy
