// dclctl's rack and site commands: elevations (text, SVG), capacity, racks and sites of the
// inventory, a rack's power feeds, budgets and airflow.
#include "dclctl/command_groups.h"
#include "dclctl/command_support.h"

namespace dcl::admin {
namespace {

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
    // The rack's power feeds, as the inventory records them (the elevation does not carry
    // them): what the capacity rules count each feed's load against. A server that serves no
    // InventoryService (UNIMPLEMENTED) has none to show.
    auto inventory = InventoryStub(inv);
    v1::GetRackRequest record_req;
    record_req.set_rack_id(inv.args[0]);
    v1::RackRecord record;
    auto record_context = MakeContext(inv.client, Service::kOccupancy);
    const grpc::Status record_status =
        inventory->GetRack(record_context.get(), record_req, &record);
    if (record_status.error_code() != grpc::StatusCode::UNIMPLEMENTED) {
      if (!record_status.ok()) return ReportFailure(inv, record_status);
      PrintLines(PowerFeedsText(record));
    }
  }
  return kExitOk;
}

int RackFeeds(Invocation& inv) {
  v1::SetPowerFeedsRequest req;
  req.set_rack_id(inv.args[0]);
  const bool none = absl::GetFlag(FLAGS_none);
  if (none == (inv.args.size() > 1)) {
    throw UsageError("give the rack's feeds (NAME:VOLTSxAMPS[:3ph][:UTIL%] ...), or --none to "
                     "remove them all");
  }
  for (size_t i = 1; i < inv.args.size(); ++i) {
    std::string error;
    if (!ParsePowerFeed(inv.args[i], req.add_feeds(), &error)) throw UsageError(error);
  }
  req.set_request_id(WriteRequestId());
  auto stub = InventoryStub(inv);
  return Write<v1::RackRecord>(
      inv,
      [&](grpc::ClientContext* c, v1::RackRecord* r) { return stub->SetPowerFeeds(c, req, r); },
      RackRecordText);
}

int RackUpdate(Invocation& inv) {
  v1::UpdateRackRequest req;
  req.set_rack_id(inv.args[0]);
  if (!absl::GetFlag(FLAGS_name).empty()) req.set_name(absl::GetFlag(FLAGS_name));
  if (auto power = OptionalInt(FLAGS_power, "power")) req.set_power_budget_watts(*power);
  if (auto weight = OptionalInt(FLAGS_weight, "weight")) req.set_weight_budget_kg(*weight);
  if (auto cooling = OptionalInt(FLAGS_cooling, "cooling")) req.set_cooling_budget_watts(*cooling);
  const std::string airflow = absl::GetFlag(FLAGS_airflow);
  if (airflow == "none") {
    req.set_airflow(v1::AIRFLOW_UNSPECIFIED);
  } else if (!airflow.empty()) {
    v1::Airflow value;
    if (!ParseAirflow(airflow, &value) ||
        (value != v1::AIRFLOW_FRONT_TO_REAR && value != v1::AIRFLOW_REAR_TO_FRONT)) {
      throw UsageError("--airflow of a rack is front-to-rear, rear-to-front or none, not \"" +
                       airflow + "\"");
    }
    req.set_airflow(value);
  }
  const std::string ports = absl::GetFlag(FLAGS_ports);
  if (!ports.empty()) {
    req.set_set_switch_ports(true);
    std::string error;
    if (ports != "none" && !ParsePortCounts(ports, req.mutable_switch_ports(), &error)) {
      throw UsageError(error);
    }
  }
  req.set_request_id(WriteRequestId());
  auto stub = InventoryStub(inv);
  return Write<v1::RackRecord>(
      inv, [&](grpc::ClientContext* c, v1::RackRecord* r) { return stub->UpdateRack(c, req, r); },
      RackRecordText);
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

int SiteCapacity(Invocation& inv) {
  auto stub = StubFor<v1::OccupancyService>(inv, Service::kOccupancy);
  v1::GetSiteCapacityRequest req;
  req.set_site_id(inv.args[0]);
  if (auto days = OptionalInt(FLAGS_window_days, "window_days")) req.set_window_days(*days);
  if (auto power = OptionalInt(FLAGS_power, "power")) req.set_typical_power_watts(*power);
  if (auto weight = OptionalInt(FLAGS_weight, "weight")) req.set_typical_weight_kg(*weight);
  return Unary<v1::SiteCapacity>(
      inv, Service::kOccupancy,
      [&](grpc::ClientContext* c, v1::SiteCapacity* r) { return stub->GetSiteCapacity(c, req, r); },
      SiteCapacityText);
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

}  // namespace

std::vector<Command> RackCommands() {
  return {
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
      {{"capacity"},
       "SITE_ID [--window_days N] [--power W] [--weight KG]",
       "the site's units, power, cooling and weight: used, free, stranded (free but unusable "
       "because another dimension of its rack is full; --power/--weight: a typical device, "
       "default the placed devices' median) and when each runs out at the recent booking rate",
       1,
       1,
       Section::kRacks,
       SiteCapacity},
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
      {{"rack", "feeds"},
       "RACK_ID NAME:VOLTSxAMPS[:3ph][:UTIL%] ... | RACK_ID --none [--request_id T]",
       "makes the rack's power feeds exactly these (e.g. A:230x16 B:230x16), judged against its "
       "load",
       1,
       33,  // the rack and up to 32 feeds (kMaxRackPowerFeeds; the server says so too)
       Section::kInventory,
       RackFeeds},
      {{"rack", "update"},
       "RACK_ID [--name N] [--power W] [--weight KG] [--cooling W] "
       "[--airflow front-to-rear|rear-to-front|none] [--ports 10g:48,25g:8|none] "
       "[--request_id T]",
       "changes a rack's name, budgets, airflow or switch ports (0: no budget), judged against "
       "its load",
       1,
       1,
       Section::kInventory,
       RackUpdate},
  };
}

}  // namespace dcl::admin
