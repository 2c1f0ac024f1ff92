#include "services/inventory/inventory_logic.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/common/page_token.h"
#include "services/common/request_ledger.h"
#include "services/common/status.h"
#include "services/common/validation.h"
#include "services/inventory/inventory_store.h"

namespace dcl::inventory {
namespace {

// ---- Validation ----

absl::Status CheckName(const std::string& field, const std::string& value) {
  return CheckText(field, value, kMaxNameLength, /*required=*/true);
}

absl::Status CheckGeometry(const v1::RackGeometry& g) {
  if (g.first_unit() < 0 || g.first_unit() > kMaxRackFirstUnit) {
    return InvalidInput("geometry.first_unit",
                        absl::StrCat("must be between 0 and ", kMaxRackFirstUnit));
  }
  if (g.unit_count() < 1 || g.unit_count() > kMaxRackUnitCount) {
    return InvalidInput("geometry.unit_count",
                        absl::StrCat("must be between 1 and ", kMaxRackUnitCount));
  }
  if (g.numbering() != v1::NUMBERING_ASCENDING && g.numbering() != v1::NUMBERING_DESCENDING) {
    return InvalidInput("geometry.numbering",
                        "must be NUMBERING_ASCENDING or NUMBERING_DESCENDING");
  }
  return absl::OkStatus();
}

absl::Status CheckBudget(const std::string& field, int64_t value, int64_t max) {
  if (value < 0 || value > max) {
    return InvalidInput(field, absl::StrCat("must be between 0 (none known) and ", max));
  }
  return absl::OkStatus();
}

absl::Status CheckHeight(int64_t height) {
  if (height < 1 || height > kMaxDeviceHeightUnits) {
    return InvalidInput("height_units",
                        absl::StrCat("must be between 1 and ", kMaxDeviceHeightUnits));
  }
  return absl::OkStatus();
}

absl::Status CheckFigure(const std::string& field, int64_t value, int64_t max) {
  if (value < 0 || value > max) {
    return InvalidInput(field, absl::StrCat("must be between 0 and ", max));
  }
  return absl::OkStatus();
}

const char* DepthName(v1::DepthClass depth) {
  switch (depth) {
    case v1::DEPTH_FULL:
      return "full";
    case v1::DEPTH_HALF:
      return "half";
    default:
      return "unknown";
  }
}

const char* StateName(v1::ProcessState state) {
  switch (state) {
    case v1::PROCESS_NORMAL:
      return "normal";
    case v1::PROCESS_STAGING:
      return "staging";
    case v1::PROCESS_MOVING:
      return "moving";
    case v1::PROCESS_IN_TRANSIT:
      return "in_transit";
    default:
      return "";
  }
}

// A rack's airflow: one of the two a rack can have (racks_airflow_valid), or unspecified (none).
absl::Status CheckRackAirflow(v1::Airflow airflow) {
  if (airflow != v1::AIRFLOW_UNSPECIFIED && airflow != v1::AIRFLOW_FRONT_TO_REAR &&
      airflow != v1::AIRFLOW_REAR_TO_FRONT) {
    return InvalidInput("airflow",
                        "a rack's airflow is AIRFLOW_FRONT_TO_REAR or AIRFLOW_REAR_TO_FRONT "
                        "(AIRFLOW_UNSPECIFIED: none)");
  }
  return absl::OkStatus();
}

absl::Status CheckPowerPorts(const std::string& field, int64_t ports) {
  if (ports < 0 || ports > kMaxDevicePowerPorts) {
    return InvalidInput(field, absl::StrCat("must be between 0 and ", kMaxDevicePowerPorts));
  }
  return absl::OkStatus();
}

// Ports by speed as a request lists them (field `field`: "switch_ports", "network_ports"): known
// speeds, each once, counts 0..max (the gate bounds them to the rack's maximum already), as the
// schema stores them, in the vocabulary's order.
absl::StatusOr<PortCounts> PortsOf(const std::string& field,
                                   const google::protobuf::RepeatedPtrField<v1::PortCount>& ports,
                                   int64_t max) {
  std::map<std::string, int64_t> by_speed;
  for (int i = 0; i < ports.size(); ++i) {
    const v1::PortCount& p = ports.Get(i);
    const std::string at = absl::StrCat(field, "[", i, "]");
    const std::vector<std::string>& speeds = PortSpeeds();
    if (std::find(speeds.begin(), speeds.end(), p.speed()) == speeds.end()) {
      return InvalidInput(at + ".speed",
                          absl::StrCat("\"", p.speed(), "\" is not a port speed; one of ",
                                       absl::StrJoin(speeds, ", ")));
    }
    if (!by_speed.emplace(p.speed(), p.count()).second) {
      return InvalidInput(at + ".speed",
                          absl::StrCat("speed ", p.speed(), " is listed twice; list each once"));
    }
    if (p.count() < 0 || p.count() > max) {
      return InvalidInput(at + ".count", absl::StrCat("must be between 0 and ", max));
    }
  }
  PortCounts counts;
  for (const std::string& speed : PortSpeeds()) {
    auto it = by_speed.find(speed);
    if (it != by_speed.end()) counts.emplace_back(speed, it->second);
  }
  return counts;
}

// SetPowerFeeds' feeds (the gate has bounded the integers already; checked again here so that
// the logic is safe behind any caller), as the rows they ask for.
absl::StatusOr<std::vector<FeedFields>> FeedsOf(const v1::SetPowerFeedsRequest& req) {
  if (req.feeds_size() > kMaxRackPowerFeeds) {
    return InvalidInput("feeds", absl::StrCat("at most ", kMaxRackPowerFeeds,
                                              " feeds per rack; ", req.feeds_size(), " given"));
  }
  std::vector<FeedFields> feeds;
  std::set<std::string> names;
  for (int i = 0; i < req.feeds_size(); ++i) {
    const v1::PowerFeed& feed = req.feeds(i);
    const std::string at = absl::StrCat("feeds[", i, "].");
    DCL_RETURN_IF_ERROR(CheckName(at + "name", feed.name()));
    if (!names.insert(feed.name()).second) {
      return InvalidInput(at + "name", absl::StrCat("feed \"", feed.name(),
                                                    "\" is named twice; a rack's feeds have "
                                                    "distinct names"));
    }
    if (feed.voltage() < 1 || feed.voltage() > kMaxFeedVoltage) {
      return InvalidInput(at + "voltage", absl::StrCat("must be between 1 and ", kMaxFeedVoltage));
    }
    if (feed.amperage() < 1 || feed.amperage() > kMaxFeedAmperage) {
      return InvalidInput(at + "amperage",
                          absl::StrCat("must be between 1 and ", kMaxFeedAmperage));
    }
    if (feed.max_utilization() < 0 || feed.max_utilization() > 100) {
      return InvalidInput(at + "max_utilization", "must be between 1 and 100 (0: 80)");
    }
    FeedFields fields;
    fields.name = feed.name();
    fields.voltage = feed.voltage();
    fields.amperage = feed.amperage();
    switch (feed.phase()) {
      case v1::POWER_PHASE_UNSPECIFIED:
      case v1::POWER_PHASE_SINGLE:
        fields.phase = "single-phase";
        break;
      case v1::POWER_PHASE_THREE:
        fields.phase = "three-phase";
        break;
      default:
        return InvalidInput(at + "phase", "must be POWER_PHASE_SINGLE or POWER_PHASE_THREE");
    }
    fields.max_utilization = feed.max_utilization() == 0 ? 80 : feed.max_utilization();
    feeds.push_back(std::move(fields));
  }
  return feeds;
}

// The optional text filter of a list: empty or a valid value.
absl::Status CheckOptionalId(const std::string& field, const std::string& value) {
  return value.empty() ? absl::OkStatus() : CheckId(field, value);
}

// ---- Refusals ----

absl::Status Decommissioned(const std::string& device_id) {
  return Error(absl::StatusCode::kFailedPrecondition, v1::DEVICE_DECOMMISSIONED,
               absl::StrCat("device ", device_id, " is decommissioned"))
      .Meta("device_id", device_id);
}

// The organization's device, locked for the rest of the transaction, for a write that changes
// it: a decommissioned device takes no more changes.
absl::StatusOr<DeviceRecord> LockLiveDevice(pqxx::transaction_base& tx, const std::string& org_id,
                                            const std::string& device_id) {
  std::optional<DeviceRecord> device = FindDevice(tx, org_id, device_id, /*lock=*/true);
  if (!device) return NotFound("device", device_id);
  if (device->proto.decommissioned()) return Decommissioned(device_id);
  return *std::move(device);
}

std::string DescribeSlot(const BookedSlot& s) {
  return absl::StrCat(s.side == v1::SIDE_REAR ? "rear" : "front", " U", s.unit);
}

// OUT_OF_BOUNDS naming the first bookings the new geometry would strand (a refusal travels in
// headers of bounded size: grpc_status.h), how many there are, and every stranded slot.
absl::Status StrandedBookings(const std::string& rack_id, const std::vector<BookedSlot>& slots) {
  constexpr size_t kNamedBookings = 5;
  std::vector<std::string> ids;
  std::vector<std::string> described;
  for (const BookedSlot& s : slots) {
    if (std::find(ids.begin(), ids.end(), s.booking_id) != ids.end()) continue;
    ids.push_back(s.booking_id);
    if (described.size() == kNamedBookings) continue;
    std::vector<std::string> units;
    for (const BookedSlot& t : slots) {
      if (t.booking_id == s.booking_id) units.push_back(DescribeSlot(t));
    }
    described.push_back(
        absl::StrCat(s.kind, " ", s.booking_id,
                     s.device_id.empty() ? "" : absl::StrCat(" of device ", s.device_id), " (",
                     absl::StrJoin(units, ", "), ")"));
  }
  const size_t total = ids.size();
  const size_t unnamed = total - described.size();
  Error error(absl::StatusCode::kFailedPrecondition, v1::OUT_OF_BOUNDS,
              absl::StrCat("the new geometry would leave ", total, " active booking",
                           total == 1 ? "" : "s", " outside the rack: ",
                           absl::StrJoin(described, "; "),
                           unnamed == 0 ? "" : absl::StrCat("; and ", unnamed, " more"),
                           "; release or move them first"));
  ids.resize(described.size());  // the named ones
  error.Meta("rack_id", rack_id)
      .Meta("booking_ids", absl::StrJoin(ids, ","))
      .Meta("booking_count", absl::StrCat(total));
  for (const BookedSlot& s : slots) {
    v1::Slot* slot = error.detail().add_colliding_slots();
    slot->set_side(s.side);
    slot->set_unit(s.unit);
  }
  return error.status();
}

absl::Status WorkflowOwnsState(const std::string& device_id, const std::string& state) {
  Error error(absl::StatusCode::kFailedPrecondition, v1::INVALID_TRANSITION,
              absl::StrCat("device ", device_id, " is ", state,
                           "; that state belongs to the move workflow, which ends it"));
  error.Meta("device_id", device_id).Meta("process_state", state);
  return error.status();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Sites

absl::Status InventoryLogic::CreateSite(const Principal& p, const v1::CreateSiteRequest& req,
                                        v1::Site* out, bool* replayed) {
  DCL_RETURN_IF_ERROR(CheckName("name", req.name()));
  return request_ledger::TransactOnce(pool_, p.org_id, Rpc::kCreateSite, req.request_id(), req, out,
                                      replayed, [&](pqxx::work& tx) -> absl::Status {
                                        absl::StatusOr<v1::Site> site =
                                            InsertSite(tx, p.org_id, req.name());
                                        if (!site.ok()) return site.status();
                                        *out = *std::move(site);
                                        return absl::OkStatus();
                                      });
}

absl::Status InventoryLogic::GetSite(const Principal& p, const v1::GetSiteRequest& req,
                                     v1::Site* out) {
  DCL_RETURN_IF_ERROR(CheckId("site_id", req.site_id()));
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    std::optional<v1::Site> site = FindSite(tx, p.org_id, req.site_id());
    if (!site) return NotFound("site", req.site_id());
    *out = *std::move(site);
    return absl::OkStatus();
  });
}

absl::Status InventoryLogic::ListSites(const Principal& p, const v1::ListSitesRequest& req,
                                       v1::ListSitesResponse* out) {
  const int page_size = PageSize(req.page_size());
  absl::StatusOr<std::optional<PageCursor>> after =
      DecodePageToken(req.page_token(), PageOrder::kCreation);
  if (!after.ok()) return after.status();
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    out->Clear();
    out->set_next_page_token(TakePage(inventory::ListSites(tx, p.org_id, *after, page_size + 1),
                                      page_size, out->mutable_sites()));
    return absl::OkStatus();
  });
}

// ---------------------------------------------------------------------------------------------
// Racks

absl::Status InventoryLogic::CreateRack(const Principal& p, const v1::CreateRackRequest& req,
                                        v1::RackRecord* out, bool* replayed) {
  DCL_RETURN_IF_ERROR(CheckId("site_id", req.site_id()));
  DCL_RETURN_IF_ERROR(CheckName("name", req.name()));
  if (!req.has_geometry()) return InvalidInput("geometry", "is required");
  DCL_RETURN_IF_ERROR(CheckGeometry(req.geometry()));
  DCL_RETURN_IF_ERROR(
      CheckBudget("power_budget_watts", req.power_budget_watts(), kMaxRackPowerWatts));
  DCL_RETURN_IF_ERROR(CheckBudget("weight_budget_kg", req.weight_budget_kg(), kMaxRackWeightKg));
  RackFields fields;
  fields.site_id = req.site_id();
  fields.name = req.name();
  fields.geometry = req.geometry();
  fields.power_budget_watts = req.power_budget_watts();
  fields.weight_budget_kg = req.weight_budget_kg();
  return request_ledger::TransactOnce(pool_, p.org_id, Rpc::kCreateRack, req.request_id(), req, out,
                                      replayed, [&](pqxx::work& tx) -> absl::Status {
                                        if (!FindSite(tx, p.org_id, req.site_id()))
                                          return NotFound("site", req.site_id());
                                        absl::StatusOr<v1::RackRecord> rack =
                                            InsertRack(tx, p.org_id, fields);
                                        if (!rack.ok()) return rack.status();
                                        *out = *std::move(rack);
                                        return absl::OkStatus();
                                      });
}

absl::Status InventoryLogic::GetRack(const Principal& p, const v1::GetRackRequest& req,
                                     v1::RackRecord* out) {
  DCL_RETURN_IF_ERROR(CheckId("rack_id", req.rack_id()));
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    std::optional<v1::RackRecord> rack = FindRack(tx, p.org_id, req.rack_id(), false);
    if (!rack) return NotFound("rack", req.rack_id());
    *out = *std::move(rack);
    return absl::OkStatus();
  });
}

absl::Status InventoryLogic::ListRacks(const Principal& p, const v1::ListRacksRequest& req,
                                       v1::ListRacksResponse* out) {
  DCL_RETURN_IF_ERROR(CheckOptionalId("site_id", req.site_id()));
  const int page_size = PageSize(req.page_size());
  absl::StatusOr<std::optional<PageCursor>> after =
      DecodePageToken(req.page_token(), PageOrder::kCreation);
  if (!after.ok()) return after.status();
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    out->Clear();
    out->set_next_page_token(
        TakePage(inventory::ListRacks(tx, p.org_id, req.site_id(), *after, page_size + 1),
                 page_size, out->mutable_racks()));
    return absl::OkStatus();
  });
}

absl::Status InventoryLogic::UpdateRack(const Principal& p, const v1::UpdateRackRequest& req,
                                        v1::RackRecord* out, bool* replayed) {
  DCL_RETURN_IF_ERROR(CheckId("rack_id", req.rack_id()));
  if (req.has_name()) DCL_RETURN_IF_ERROR(CheckName("name", req.name()));
  if (req.has_geometry()) DCL_RETURN_IF_ERROR(CheckGeometry(req.geometry()));
  if (req.has_power_budget_watts()) {
    DCL_RETURN_IF_ERROR(
        CheckBudget("power_budget_watts", req.power_budget_watts(), kMaxRackPowerWatts));
  }
  if (req.has_weight_budget_kg()) {
    DCL_RETURN_IF_ERROR(CheckBudget("weight_budget_kg", req.weight_budget_kg(), kMaxRackWeightKg));
  }
  if (req.has_cooling_budget_watts()) {
    DCL_RETURN_IF_ERROR(
        CheckBudget("cooling_budget_watts", req.cooling_budget_watts(), kMaxRackPowerWatts));
  }
  if (req.has_airflow()) DCL_RETURN_IF_ERROR(CheckRackAirflow(req.airflow()));
  if (!req.set_switch_ports() && req.switch_ports_size() > 0) {
    return InvalidInput("set_switch_ports", "switch_ports are written only with set_switch_ports");
  }
  absl::StatusOr<PortCounts> switch_ports =
      PortsOf("switch_ports", req.switch_ports(), kMaxRackSwitchPorts);
  if (!switch_ports.ok()) return switch_ports.status();
  return request_ledger::TransactOnce(
      pool_, p.org_id, Rpc::kUpdateRack, req.request_id(), req, out, replayed,
      [&](pqxx::work& tx) -> absl::Status {
        // The lock waits for bookings in flight on this rack and holds new ones back (they read the
        // rack FOR KEY SHARE), so the check below sees every booking that will exist.
        std::optional<v1::RackRecord> current =
            FindRack(tx, p.org_id, req.rack_id(), /*lock=*/true);
        if (!current) return NotFound("rack", req.rack_id());
        RackFields fields;
        fields.site_id = current->site_id();
        fields.name = req.has_name() ? req.name() : current->name();
        fields.geometry = req.has_geometry() ? req.geometry() : current->geometry();
        fields.power_budget_watts =
            req.has_power_budget_watts() ? req.power_budget_watts() : current->power_budget_watts();
        fields.weight_budget_kg =
            req.has_weight_budget_kg() ? req.weight_budget_kg() : current->weight_budget_kg();
        fields.cooling_budget_watts = req.has_cooling_budget_watts()
                                          ? req.cooling_budget_watts()
                                          : current->cooling_budget_watts();
        fields.airflow = AirflowName(req.has_airflow() ? req.airflow() : current->airflow());
        // An empty list records none: the rack has no ports rule.
        fields.set_switch_ports = req.set_switch_ports();
        if (!switch_ports->empty()) fields.switch_ports = *switch_ports;
        if (req.has_geometry()) {
          std::vector<BookedSlot> stranded = SlotsOutside(tx, req.rack_id(), fields.geometry);
          if (!stranded.empty()) return StrandedBookings(req.rack_id(), stranded);
        }
        absl::StatusOr<v1::RackRecord> rack =
            inventory::UpdateRack(tx, p.org_id, req.rack_id(), fields);
        if (!rack.ok()) return rack.status();
        *out = *std::move(rack);
        return absl::OkStatus();
      });
}

absl::Status InventoryLogic::SetPowerFeeds(const Principal& p,
                                           const v1::SetPowerFeedsRequest& req,
                                           v1::RackRecord* out, bool* replayed) {
  DCL_RETURN_IF_ERROR(CheckId("rack_id", req.rack_id()));
  absl::StatusOr<std::vector<FeedFields>> feeds = FeedsOf(req);
  if (!feeds.ok()) return feeds.status();
  return request_ledger::TransactOnce(
      pool_, p.org_id, Rpc::kSetPowerFeeds, req.request_id(), req, out, replayed,
      [&](pqxx::work& tx) -> absl::Status {
        // The lock orders the change against bookings in flight on this rack (they read it FOR
        // KEY SHARE), as UpdateRack's does; the schema's rebuild judges the set under it.
        std::optional<v1::RackRecord> current =
            FindRack(tx, p.org_id, req.rack_id(), /*lock=*/true);
        if (!current) return NotFound("rack", req.rack_id());
        absl::StatusOr<v1::RackRecord> rack = inventory::SetPowerFeeds(tx, p.org_id, *current, *feeds);
        if (!rack.ok()) return rack.status();
        *out = *std::move(rack);
        return absl::OkStatus();
      });
}

// ---------------------------------------------------------------------------------------------
// Devices

namespace {

// RegisterDevice's checks of one request (INVALID_ARGUMENT before anything is read or written),
// and the row it asks for.
absl::StatusOr<DeviceFields> RegistrationFields(const v1::RegisterDeviceRequest& req) {
  DCL_RETURN_IF_ERROR(CheckId("site_id", req.site_id()));
  DCL_RETURN_IF_ERROR(CheckName("vendor", req.vendor()));
  DCL_RETURN_IF_ERROR(CheckName("model", req.model()));
  DCL_RETURN_IF_ERROR(CheckHeight(req.height_units()));
  if (req.has_power_draw_watts()) {
    DCL_RETURN_IF_ERROR(
        CheckFigure("power_draw_watts", req.power_draw_watts(), kMaxDevicePowerWatts));
  }
  if (req.has_weight_kg()) {
    DCL_RETURN_IF_ERROR(CheckFigure("weight_kg", req.weight_kg(), kMaxDeviceWeightKg));
  }
  if (req.has_power_port_count()) {
    DCL_RETURN_IF_ERROR(CheckPowerPorts("power_port_count", req.power_port_count()));
  }
  if (!req.network_ports_known() && req.network_ports_size() > 0) {
    return InvalidInput("network_ports_known",
                        "network_ports are given: set network_ports_known (false: unknown)");
  }
  absl::StatusOr<PortCounts> network_ports =
      PortsOf("network_ports", req.network_ports(), kMaxDeviceNetworkPorts);
  if (!network_ports.ok()) return network_ports.status();
  DeviceFields fields;
  switch (req.initial_state()) {
    case v1::PROCESS_STATE_UNSPECIFIED:
    case v1::PROCESS_STAGING:
      fields.process_state = "staging";
      break;
    case v1::PROCESS_NORMAL:
      fields.process_state = "normal";
      break;
    default:
      return InvalidInput("initial_state",
                          "must be PROCESS_NORMAL or PROCESS_STAGING; moving and in_transit "
                          "belong to the move workflow");
  }
  fields.site_id = req.site_id();
  fields.vendor = req.vendor();
  fields.model = req.model();
  fields.hardware_profile = req.hardware_profile();
  fields.serial = req.serial();
  fields.height_units = req.height_units();
  fields.depth_class = DepthName(req.depth_class());
  if (req.has_power_draw_watts()) fields.power_draw_watts = req.power_draw_watts();
  if (req.has_weight_kg()) fields.weight_kg = req.weight_kg();
  if (req.has_power_port_count()) fields.power_port_count = req.power_port_count();
  fields.airflow = AirflowName(req.airflow());
  if (req.network_ports_known()) fields.network_ports = *network_ports;
  return fields;
}

// The one registration write, inside the caller's transaction (RegisterDevice's own, or one
// RegisterDevices transaction for all its items). `known_sites` holds the sites this
// transaction has already found, so a batch reads each site once.
absl::Status InsertRegistration(pqxx::transaction_base& tx, const std::string& org_id,
                                const DeviceFields& fields, std::set<std::string>& known_sites,
                                v1::Device* out) {
  if (known_sites.count(fields.site_id) == 0) {
    if (!FindSite(tx, org_id, fields.site_id)) return NotFound("site", fields.site_id);
    known_sites.insert(fields.site_id);
  }
  absl::StatusOr<v1::Device> device = InsertDevice(tx, org_id, fields);
  if (!device.ok()) return device.status();
  *out = *std::move(device);
  return absl::OkStatus();
}

}  // namespace

absl::Status InventoryLogic::RegisterDevice(const Principal& p,
                                            const v1::RegisterDeviceRequest& req, v1::Device* out,
                                            bool* replayed) {
  absl::StatusOr<DeviceFields> fields = RegistrationFields(req);
  if (!fields.ok()) return fields.status();
  return request_ledger::TransactOnce(pool_, p.org_id, Rpc::kRegisterDevice, req.request_id(), req,
                                      out, replayed, [&](pqxx::work& tx) -> absl::Status {
                                        std::set<std::string> known_sites;
                                        return InsertRegistration(tx, p.org_id, *fields,
                                                                  known_sites, out);
                                      });
}

absl::Status InventoryLogic::RegisterDevices(const Principal& p,
                                             const v1::RegisterDevicesRequest& req,
                                             v1::RegisterDevicesResponse* out, bool* replayed) {
  if (req.requests().empty()) return InvalidInput("requests", "at least one item is needed");
  if (req.requests_size() > kMaxBatchItems) {
    return BatchTooLarge(req.requests_size(), kMaxBatchItems);
  }
  DCL_RETURN_IF_ERROR(CheckDistinctRequestIds(req));
  std::vector<DeviceFields> fields;
  fields.reserve(req.requests_size());
  for (int i = 0; i < req.requests_size(); ++i) {
    absl::StatusOr<DeviceFields> item = RegistrationFields(req.requests(i));
    if (!item.ok()) return ForBatchItem(item.status(), "requests", i);
    fields.push_back(*std::move(item));
  }
  // All or none, in one transaction: the first refused item rolls back every item before it,
  // ledger claims included, so a retry of the batch (or of any item alone) runs again. Each item
  // claims its own request id under RegisterDevice's name, with RegisterDevice's parameters
  // digest: an item and a single RegisterDevice with the same id replay each other.
  //
  // Every claim is made before the first device is inserted: the insert's statement trigger
  // (migration 0023) takes a row lock of the site's count until commit, so the batch holds it
  // for the inserts only. Since migrations 0032-0034 that row is one of 16 stripes, chosen by
  // the transaction id: batches at one site rarely meet on it.
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    out->Clear();
    std::vector<request_ledger::Claim> claims;
    claims.reserve(req.requests_size());
    for (int i = 0; i < req.requests_size(); ++i) {
      const v1::RegisterDeviceRequest& item = req.requests(i);
      v1::Device* device = out->add_devices();
      absl::StatusOr<request_ledger::Claim> claim = request_ledger::Begin(
          tx, p.org_id, Rpc::kRegisterDevice, item.request_id(), item);
      if (!claim.ok()) return ForBatchItem(claim.status(), "requests", i);
      if (claim->replay) {
        bool item_replayed = false;
        DCL_RETURN_IF_ERROR(claim->Replay(device, &item_replayed));
        out->add_replayed_items(i);
      }
      claims.push_back(*std::move(claim));
    }
    std::set<std::string> known_sites;
    for (int i = 0; i < req.requests_size(); ++i) {
      if (claims[i].replay) continue;
      v1::Device* device = out->mutable_devices(i);
      absl::Status written = InsertRegistration(tx, p.org_id, fields[i], known_sites, device);
      if (!written.ok()) return ForBatchItem(written, "requests", i);
      DCL_RETURN_IF_ERROR(request_ledger::Finish(tx, claims[i], *device));
    }
    if (replayed != nullptr) *replayed = out->replayed_items_size() == req.requests_size();
    return absl::OkStatus();
  });
}

absl::Status InventoryLogic::GetDevice(const Principal& p, const v1::GetDeviceRequest& req,
                                       v1::Device* out) {
  DCL_RETURN_IF_ERROR(CheckId("device_id", req.device_id()));
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    std::optional<DeviceRecord> device = FindDevice(tx, p.org_id, req.device_id(), false);
    if (!device) return NotFound("device", req.device_id());
    *out = std::move(device->proto);
    return absl::OkStatus();
  });
}

absl::Status InventoryLogic::ListDevices(const Principal& p, const v1::ListDevicesRequest& req,
                                         v1::ListDevicesResponse* out) {
  DCL_RETURN_IF_ERROR(CheckOptionalId("site_id", req.site_id()));
  DeviceFilter filter;
  filter.site_id = req.site_id();
  filter.vendor = req.vendor();
  filter.model = req.model();
  filter.hardware_profile = req.hardware_profile();
  filter.process_state = StateName(req.process_state());
  filter.include_decommissioned = req.include_decommissioned();
  const int page_size = PageSize(req.page_size());
  absl::StatusOr<std::optional<PageCursor>> after =
      DecodePageToken(req.page_token(), PageOrder::kCreation);
  if (!after.ok()) return after.status();
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    out->Clear();
    out->set_next_page_token(
        TakePage(inventory::ListDevices(tx, p.org_id, filter, *after, page_size + 1), page_size,
                 out->mutable_devices()));
    return absl::OkStatus();
  });
}

absl::Status InventoryLogic::UpdateDevice(const Principal& p, const v1::UpdateDeviceRequest& req,
                                          v1::Device* out, bool* replayed) {
  DCL_RETURN_IF_ERROR(CheckId("device_id", req.device_id()));
  if (req.has_vendor()) DCL_RETURN_IF_ERROR(CheckName("vendor", req.vendor()));
  if (req.has_model()) DCL_RETURN_IF_ERROR(CheckName("model", req.model()));
  if (req.has_height_units()) DCL_RETURN_IF_ERROR(CheckHeight(req.height_units()));
  if (req.has_power_draw_watts()) {
    if (req.power_draw_unknown()) {
      return InvalidInput("power_draw_unknown", "contradicts power_draw_watts");
    }
    DCL_RETURN_IF_ERROR(
        CheckFigure("power_draw_watts", req.power_draw_watts(), kMaxDevicePowerWatts));
  }
  if (req.has_weight_kg()) {
    if (req.weight_unknown()) return InvalidInput("weight_unknown", "contradicts weight_kg");
    DCL_RETURN_IF_ERROR(CheckFigure("weight_kg", req.weight_kg(), kMaxDeviceWeightKg));
  }
  if (req.has_power_port_count()) {
    if (req.power_port_count_unknown()) {
      return InvalidInput("power_port_count_unknown", "contradicts power_port_count");
    }
    DCL_RETURN_IF_ERROR(CheckPowerPorts("power_port_count", req.power_port_count()));
  }
  if (req.airflow() != v1::AIRFLOW_UNSPECIFIED && req.airflow_unknown()) {
    return InvalidInput("airflow_unknown", "contradicts airflow");
  }
  if (req.set_network_ports() && req.network_ports_unknown()) {
    return InvalidInput("network_ports_unknown", "contradicts set_network_ports");
  }
  if (!req.set_network_ports() && req.network_ports_size() > 0) {
    return InvalidInput("set_network_ports",
                        "network_ports are written only with set_network_ports");
  }
  absl::StatusOr<PortCounts> network_ports =
      PortsOf("network_ports", req.network_ports(), kMaxDeviceNetworkPorts);
  if (!network_ports.ok()) return network_ports.status();
  return request_ledger::TransactOnce(
      pool_, p.org_id, Rpc::kUpdateDevice, req.request_id(), req, out, replayed,
      [&](pqxx::work& tx) -> absl::Status {
        absl::StatusOr<DeviceRecord> current = LockLiveDevice(tx, p.org_id, req.device_id());
        if (!current.ok()) return current.status();
        DeviceFields fields = current->fields;
        if (req.has_vendor()) fields.vendor = req.vendor();
        if (req.has_model()) fields.model = req.model();
        if (req.has_hardware_profile()) fields.hardware_profile = req.hardware_profile();
        if (req.has_serial()) fields.serial = req.serial();
        if (req.has_height_units()) fields.height_units = req.height_units();
        if (req.depth_class() != v1::DEPTH_CLASS_UNSPECIFIED) {
          fields.depth_class = DepthName(req.depth_class());
        }
        if (req.has_power_draw_watts()) fields.power_draw_watts = req.power_draw_watts();
        if (req.power_draw_unknown()) fields.power_draw_watts.reset();
        if (req.has_weight_kg()) fields.weight_kg = req.weight_kg();
        if (req.weight_unknown()) fields.weight_kg.reset();
        if (req.has_power_port_count()) fields.power_port_count = req.power_port_count();
        if (req.power_port_count_unknown()) fields.power_port_count.reset();
        if (req.airflow() != v1::AIRFLOW_UNSPECIFIED) fields.airflow = AirflowName(req.airflow());
        if (req.airflow_unknown()) fields.airflow.clear();
        if (req.set_network_ports()) fields.network_ports = *network_ports;
        if (req.network_ports_unknown()) fields.network_ports.reset();

        // The slots of a placement or move hold were derived from height and depth; changing them
        // underneath would make the booking describe another machine.
        if (fields.height_units != current->fields.height_units ||
            fields.depth_class != current->fields.depth_class) {
          const DeviceUse use = ReadDeviceUse(tx, req.device_id());
          const std::string& booking =
              !use.placed_by_booking.empty() ? use.placed_by_booking : use.held_for_move;
          if (!booking.empty()) {
            const bool placed = !use.placed_by_booking.empty();
            return Error(absl::StatusCode::kFailedPrecondition, v1::DEVICE_IN_USE,
                         absl::StrCat(
                             "device ", req.device_id(), " is ",
                             placed ? absl::StrCat("placed in rack ", use.placed_in_rack,
                                                   " (booking ", booking, ")")
                                    : absl::StrCat("held for a move (booking ", booking, ")"),
                             "; its height and depth shape that booking: release it, change "
                             "the device, then place it again"))
                .Meta("device_id", req.device_id())
                .Meta(placed ? "placed_by_booking" : "held_for_move", booking);
          }
        }
        absl::StatusOr<v1::Device> device =
            inventory::UpdateDevice(tx, p.org_id, req.device_id(), fields);
        if (!device.ok()) return device.status();
        *out = *std::move(device);
        return absl::OkStatus();
      });
}

absl::Status InventoryLogic::SetDeviceState(const Principal& p,
                                            const v1::SetDeviceStateRequest& req, v1::Device* out,
                                            bool* replayed) {
  DCL_RETURN_IF_ERROR(CheckId("device_id", req.device_id()));
  const std::string target = StateName(req.state());
  if (target.empty()) return InvalidInput("state", "is required");
  if (target != "normal" && target != "staging") {
    Error error(absl::StatusCode::kFailedPrecondition, v1::INVALID_TRANSITION,
                absl::StrCat(target, " is set by the move workflow, not by hand"));
    error.Meta("target", target);
    error.detail().add_allowed_targets("normal");
    error.detail().add_allowed_targets("staging");
    return error;
  }
  return request_ledger::TransactOnce(
      pool_, p.org_id, Rpc::kSetDeviceState, req.request_id(), req, out, replayed,
      [&](pqxx::work& tx) -> absl::Status {
        absl::StatusOr<DeviceRecord> current = LockLiveDevice(tx, p.org_id, req.device_id());
        if (!current.ok()) return current.status();
        // An open move froze the state it will restore when it ends (and holds the device
        // 'moving' meanwhile); a change now would be undone. Named first: the move is the reason.
        const DeviceUse use = ReadDeviceUse(tx, req.device_id());
        if (!use.open_move.empty()) {
          return Error(absl::StatusCode::kFailedPrecondition, v1::MOVE_ALREADY_OPEN,
                       absl::StrCat("device ", req.device_id(), " has an open move (",
                                    use.open_move, "), which sets its state when it ends"))
              .Meta("device_id", req.device_id())
              .Meta("move_id", use.open_move);
        }
        const std::string& state = current->fields.process_state;
        if (state != "normal" && state != "staging") {
          return WorkflowOwnsState(req.device_id(), state);
        }
        if (state == target) {
          *out = current->proto;  // already there: nothing to write, same answer
        } else {
          absl::StatusOr<v1::Device> device =
              inventory::SetProcessState(tx, p.org_id, req.device_id(), target);
          if (!device.ok()) return device.status();
          *out = *std::move(device);
        }
        return absl::OkStatus();
      });
}

absl::Status InventoryLogic::DecommissionDevice(const Principal& p,
                                                const v1::DecommissionDeviceRequest& req,
                                                v1::Device* out, bool* replayed) {
  DCL_RETURN_IF_ERROR(CheckId("device_id", req.device_id()));
  DCL_RETURN_IF_ERROR(CheckText("reason", req.reason(), kMaxNoteLength, /*required=*/false));
  return request_ledger::TransactOnce(
      pool_, p.org_id, Rpc::kDecommissionDevice, req.request_id(), req, out, replayed,
      [&](pqxx::work& tx) -> absl::Status {
        // The row lock conflicts with Reserve's, StartMove's and the booking write path's, so the
        // use read below is final until this transaction ends.
        absl::StatusOr<DeviceRecord> current = LockLiveDevice(tx, p.org_id, req.device_id());
        if (!current.ok()) return current.status();
        const DeviceUse use = ReadDeviceUse(tx, req.device_id());
        const std::string& state = current->fields.process_state;
        std::vector<std::string> uses;
        std::vector<std::pair<std::string, std::string>> meta;
        if (!use.held_by_reservation.empty()) {
          uses.push_back(absl::StrCat("held by reservation ", use.held_by_reservation));
          meta.emplace_back("held_by_reservation", use.held_by_reservation);
        }
        if (!use.bound_to_service.empty()) {
          uses.push_back(absl::StrCat("bound to service ", use.bound_to_service));
          meta.emplace_back("bound_to_service", use.bound_to_service);
        }
        if (!use.placed_by_booking.empty()) {
          uses.push_back(absl::StrCat("placed in rack ", use.placed_in_rack, " (booking ",
                                      use.placed_by_booking, ")"));
          meta.emplace_back("placed_by_booking", use.placed_by_booking);
        }
        if (!use.open_move.empty() || !use.held_for_move.empty() || state == "moving" ||
            state == "in_transit") {
          uses.push_back(!use.open_move.empty() ? absl::StrCat("moving (move ", use.open_move, ")")
                                                : absl::StrCat("moving (", state, ")"));
          meta.emplace_back("moving", !use.open_move.empty() ? use.open_move : state);
        }
        if (!uses.empty()) {
          Error error(absl::StatusCode::kFailedPrecondition, v1::DEVICE_IN_USE,
                      absl::StrCat("device ", req.device_id(), " cannot be decommissioned: it is ",
                                   absl::StrJoin(uses, ", ")));
          error.Meta("device_id", req.device_id());
          for (const auto& [key, value] : meta) error.Meta(key, value);
          return error;
        }
        absl::StatusOr<v1::Device> device =
            MarkDecommissioned(tx, p.org_id, req.device_id(), p.Actor(), req.reason());
        if (!device.ok()) return device.status();
        *out = *std::move(device);
        return absl::OkStatus();
      });
}

}  // namespace dcl::inventory
