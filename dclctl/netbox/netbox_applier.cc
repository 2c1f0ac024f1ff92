#include "dclctl/netbox/netbox_applier.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>
#include <cstdio>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dclctl/format/cli_format.h"
#include "dclctl/format/rack_elevation.h"
#include "services/common/grpc_status.h"

namespace dcl::admin::netbox {
namespace {

bool Replayed(const grpc::ClientContext& context) {
  const auto& headers = context.GetServerInitialMetadata();
  auto it = headers.find("dcl-replay");
  return it != headers.end() && std::string(it->second.data(), it->second.size()) == "true";
}

// A one-line progress bar on stdout, only when stdout is a terminal (a pipe or a file gets the
// report alone).
class Progress {
 public:
  Progress(size_t total, bool enabled) : total_(total), enabled_(enabled && isatty(1) == 1) {}
  // Thread-safe: the parallel calls step it. Above 1000 steps, every 0.2% is drawn.
  void Step(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    ++done_;
    if (!enabled_ || total_ == 0) return;
    if (total_ > 1000 && done_ % (total_ / 500) != 0 && done_ != total_) return;
    const size_t width = 30;
    const size_t filled = width * std::min(done_, total_) / total_;
    std::printf("\r[%s%s] %zu/%zu %-40.40s", std::string(filled, '#').c_str(),
                std::string(width - filled, ' ').c_str(), done_, total_, what.c_str());
    std::fflush(stdout);
  }
  void Finish() {
    if (enabled_) std::printf("\r%90s\r", "");
  }

 private:
  std::mutex mu_;
  size_t total_, done_ = 0;  // guarded by mu_
  bool enabled_;
};

// The value of `key`, or "" (a lookup that never inserts: the parallel calls read these maps).
std::string Lookup(const std::map<int64_t, std::string>& map, int64_t key) {
  auto it = map.find(key);
  return it == map.end() ? std::string() : it->second;
}

// The colliding units of a refused placement, as the refusal names them.
std::string CollidingUnits(const grpc::Status& status) {
  for (const std::string& line : DescribeError(status)) {
    const size_t at = line.find("colliding units: ");
    if (at != std::string::npos) return line.substr(at + 17);
  }
  return status.error_message();
}

// A refusal by one of the rack's capacity rules (a budget, a feed, N-1, cooling, airflow, or a
// figure the rule needs and the device lacks): the database decided, and a person must.
bool CapacityRefusal(const grpc::Status& status) {
  const std::optional<v1::ErrorDetail> detail = ErrorDetailFromGrpc(status);
  if (!detail.has_value()) return false;
  switch (detail->reason()) {
    case v1::POWER_BUDGET_EXCEEDED:
    case v1::FEED_REDUNDANCY_LOST:
    case v1::COOLING_BUDGET_EXCEEDED:
    case v1::AIRFLOW_MISMATCH:
    case v1::WEIGHT_BUDGET_EXCEEDED:
    case v1::POWER_UNKNOWN:
    case v1::POWER_PORTS_UNKNOWN:
    case v1::AIRFLOW_UNKNOWN:
    case v1::WEIGHT_UNKNOWN:
    case v1::FEEDS_UNNAMED:
      return true;
    default:
      return false;
  }
}

// The start of the reason of the blocking that holds the units of a device NetBox racks and a
// capacity rule refused: a re-run finds it there and reports the device again.
std::string LeftForAPersonPrefix(const std::string& what) {
  return absl::StrCat("NetBox ", what, " stands here; its placement was refused, left for a "
                      "person: ");
}

// One feed as the report names it: "A 230V x 16A 3ph 80%".
std::string FeedText(const v1::PowerFeed& f) {
  return absl::StrCat(f.name(), " ", f.voltage(), "V x ", f.amperage(), "A",
                      f.phase() == v1::POWER_PHASE_THREE ? " 3ph" : "", " ",
                      f.max_utilization() == 0 ? 80 : f.max_utilization(), "%");
}

std::string FeedsText(const google::protobuf::RepeatedPtrField<v1::PowerFeed>& feeds) {
  std::vector<std::string> names;
  for (const v1::PowerFeed& f : feeds) names.push_back(FeedText(f));
  std::sort(names.begin(), names.end());
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
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

std::string RackWhat(const Plan& plan, int64_t netbox_id) {
  for (const RackPlan& r : plan.racks) {
    if (r.netbox_id == netbox_id)
      return absl::StrCat("rack ", netbox_id, " (", r.request.name(), ")");
  }
  return absl::StrCat("rack ", netbox_id);
}

// Runs fn(0) … fn(n - 1) on up to `threads` threads (the calling one among them).
void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> pool;
  const size_t extra = std::min(n, static_cast<size_t>(std::max(1, threads))) - (n > 0 ? 1 : 0);
  for (size_t t = 0; t < extra; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

// Splits 0 … n - 1 into consecutive ranges of at most `size` (at least 1).
std::vector<std::pair<size_t, size_t>> Batches(size_t n, int size) {
  const size_t step = static_cast<size_t>(std::max(1, size));
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t begin = 0; begin < n; begin += step) out.push_back({begin, std::min(n, begin + step)});
  return out;
}

// A batch's failure that says nothing about its items (the server is unreachable, the caller
// may not write): sending the items singly would only fail the same way.
bool FailsEveryItem(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return true;
    default:
      return false;
  }
}


// Where dcl has a device placed: the rack (its NetBox id) and the slots.
struct DclPlacement {
  int64_t rack_netbox_id = 0;
  std::vector<v1::Slot> slots;
};

// One run of Applier::Apply: its inputs, and what the phases below learn and hand on (dcl's ids
// for NetBox's objects, the racks' elevations, the devices that drifted). The phases run in
// order, each on what the earlier ones filled in.
struct ApplyRun {
  const Plan& plan;
  const ApplyOptions& options;
  Report& report;
  Progress& progress;
  v1::InventoryService::StubInterface* inventory;
  v1::OccupancyService::StubInterface* occupancy;
  const Applier::ContextFactory& make_context;
  const bool dry_run = options.dry_run;

  std::map<int64_t, std::string> site_id;  // NetBox id → dcl id ("" in a dry run: not yet)
  std::map<std::pair<std::string, std::string>, std::string> rack_by_name;  // (site, name)
  std::map<std::string, v1::RackRecord> rack_record;  // dcl id → as dcl holds it before the run
  std::map<std::string, std::string> device_by_serial;
  std::map<int64_t, std::string> rack_id;
  std::map<int64_t, bool> rack_has_rear;
  std::map<int64_t, std::string> device_id;
  // Devices dcl had before this run (found by serial, or registered by an earlier run: the
  // registration replayed). Their placements are dcl's, never the import's to make.
  std::set<int64_t> known;
  // Placements and blockings: what each rack holds now decides what is already there.
  std::map<int64_t, v1::Rack> elevation;
  std::map<std::string, DclPlacement> dcl_placement;  // dcl device id → where dcl has it
  std::vector<const DevicePlan*> drifted;
  // Devices a capacity rule refused in this run (NetBox id → the refusal): their units are
  // blocked with a reason naming it, so a re-run finds and reports them again.
  std::map<int64_t, std::string> left_for_a_person;
  // Racks whose capacity from NetBox dcl refused (their load is above it already): NetBox's
  // budget is not in dcl, so no device is added to them (NetBox id → the refusal).
  std::map<int64_t, std::string> capacity_refused;
  std::map<std::string, std::string> device_netbox;  // dcl device id → "device N (name)"

  // One call with a fresh context: its status, and whether the server answered it as a replay.
  template <typename Fn>
  std::pair<grpc::Status, bool> Call(Fn&& fn) const {
    std::unique_ptr<grpc::ClientContext> context = make_context();
    const grpc::Status status = fn(context.get());
    return {status, status.ok() && Replayed(*context)};
  }

  // Reads a rack's elevation unless it is read already or not in dcl (a dry run's new rack).
  std::optional<grpc::Status> ElevationOf(int64_t rack_netbox_id) {
    const std::string& id = rack_id[rack_netbox_id];
    if (id.empty() || elevation.count(rack_netbox_id) > 0) return std::nullopt;
    v1::GetRackRequest req;
    req.set_rack_id(id);
    v1::Rack rack;
    auto [status, replayed] =
        Call([&](grpc::ClientContext* c) { return occupancy->GetRack(c, req, &rack); });
    if (!status.ok()) return status;
    elevation[rack_netbox_id] = rack;
    return std::nullopt;
  }

  // The phases, in the order Apply runs them; each on what the earlier ones filled in.
  grpc::Status CreateSites();
  grpc::Status FindRacksAndDevices();
  grpc::Status CreateRacks();
  grpc::Status ConfigureRackCapacity();
  grpc::Status RegisterDevices();
  grpc::Status ReadElevations();
  grpc::Status PlaceDevices();
  grpc::Status BlockReservations();
  grpc::Status ReportUnclaimedPlacements();
  grpc::Status BlockDriftClaims();
};

// Sites, matched by name: found ones are kept, the rest created.
grpc::Status ApplyRun::CreateSites() {
  // Sites, matched by name.
  std::map<std::string, std::string> site_by_name;
  {
    v1::ListSitesRequest req;
    req.set_page_size(500);
    do {
      v1::ListSitesResponse page;
      auto [status, replayed] =
          Call([&](grpc::ClientContext* c) { return inventory->ListSites(c, req, &page); });
      if (!status.ok()) return status;
      for (const v1::Site& s : page.sites()) site_by_name[s.name()] = s.id();
      req.set_page_token(page.next_page_token());
    } while (!req.page_token().empty());
  }
  for (const SitePlan& p : plan.sites) {
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
        Call([&](grpc::ClientContext* c) { return inventory->CreateSite(c, p.request, &site); });
    if (!status.ok()) return status;
    site_id[p.netbox_id] = site.id();
    ++(replayed ? report.counts["sites"].unchanged : report.counts["sites"].created);
  }
  return grpc::Status::OK;
}

// What dcl has in the plan's sites: racks by (site, name), devices by serial.
grpc::Status ApplyRun::FindRacksAndDevices() {
  // Racks, matched by name within their site; devices by serial.
  for (const auto& [netbox_id, id] : site_id) {
    if (id.empty()) continue;
    v1::ListRacksRequest racks;
    racks.set_site_id(id);
    racks.set_page_size(500);
    do {
      v1::ListRacksResponse page;
      auto [status, replayed] =
          Call([&](grpc::ClientContext* c) { return inventory->ListRacks(c, racks, &page); });
      if (!status.ok()) return status;
      for (const v1::RackRecord& r : page.racks()) {
        rack_by_name[{id, r.name()}] = r.id();
        rack_record[r.id()] = r;
      }
      racks.set_page_token(page.next_page_token());
    } while (!racks.page_token().empty());
    v1::ListDevicesRequest devices;
    devices.set_site_id(id);
    devices.set_include_decommissioned(true);
    devices.set_page_size(500);
    do {
      v1::ListDevicesResponse page;
      auto [status, replayed] =
          Call([&](grpc::ClientContext* c) { return inventory->ListDevices(c, devices, &page); });
      if (!status.ok()) return status;
      for (const v1::Device& d : page.devices()) {
        if (!d.serial().empty()) device_by_serial[d.serial()] = d.id();
      }
      devices.set_page_token(page.next_page_token());
    } while (!devices.page_token().empty());
  }
  return grpc::Status::OK;
}

// Racks, matched by name within their site: found ones are kept, the rest created.
grpc::Status ApplyRun::CreateRacks() {
  for (const RackPlan& p : plan.racks) {
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
        Call([&](grpc::ClientContext* c) { return inventory->CreateRack(c, req, &rack); });
    if (!status.ok()) return status;
    rack_id[p.netbox_id] = rack.id();
    ++(replayed ? report.counts["racks"].unchanged : report.counts["racks"].created);
  }
  return grpc::Status::OK;
}

// The capacity NetBox records for each rack (feeds, max_weight, airflow), before any device is
// placed, so that every placement is judged against it. dcl holds these as configuration: a
// rack without them in dcl takes NetBox's; a rack that has other figures keeps dcl's, and the
// difference is reported as drift. A refusal (a budget below what the rack carries already)
// is reported and the rack keeps what it had.
grpc::Status ApplyRun::ConfigureRackCapacity() {
  for (const RackPlan& p : plan.racks) {
    if (p.feeds.empty() && !p.weight_budget_kg && p.airflow == v1::AIRFLOW_UNSPECIFIED) continue;
    const std::string what = RackWhat(plan, p.netbox_id);
    const std::string& id = rack_id[p.netbox_id];
    v1::RackRecord current;  // a rack created by this run (or a dry run's new one) has none
    if (auto it = rack_record.find(id); !id.empty() && it != rack_record.end()) {
      current = it->second;
    }
    bool changed = false, reported = false;  // reported: as drift or a refusal, not counted
    auto refused = [&](const std::string& change, const grpc::Status& status) {
      const std::string why = absl::StrCat(change, " refused: ", status.error_message());
      report.refused.push_back({what, why});
      capacity_refused.emplace(p.netbox_id, why);
      reported = true;
    };
    // Feeds: by name, voltage, amperage, phase and max utilization.
    if (!p.feeds.empty()) {
      google::protobuf::RepeatedPtrField<v1::PowerFeed> wanted;
      for (v1::PowerFeed f : p.feeds) {
        if (f.phase() == v1::POWER_PHASE_UNSPECIFIED) f.set_phase(v1::POWER_PHASE_SINGLE);
        *wanted.Add() = f;
      }
      google::protobuf::RepeatedPtrField<v1::PowerFeed> have;
      for (v1::PowerFeed f : current.power_feeds()) {
        f.clear_available_watts();
        if (f.phase() == v1::POWER_PHASE_UNSPECIFIED) f.set_phase(v1::POWER_PHASE_SINGLE);
        if (f.max_utilization() == 0) f.set_max_utilization(80);
        *have.Add() = f;
      }
      if (FeedsText(have) == FeedsText(wanted)) {
        // as NetBox records them
      } else if (!have.empty()) {
        report.drift.push_back({what, absl::StrCat("power feeds: NetBox: ", FeedsText(wanted),
                                                   "; dcl: ", FeedsText(have))});
        reported = true;
      } else if (dry_run) {
        changed = true;
      } else {
        v1::SetPowerFeedsRequest req;
        req.set_rack_id(id);
        *req.mutable_feeds() = wanted;
        req.set_request_id(DerivedRequestId(absl::StrCat("netbox rack ", p.netbox_id,
                                                         " feeds ", FeedsText(wanted))));
        v1::RackRecord rack;
        auto [status, replayed] =
            Call([&](grpc::ClientContext* c) { return inventory->SetPowerFeeds(c, req, &rack); });
        if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
            status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
          refused(absl::StrCat("power feeds ", FeedsText(wanted)), status);
        } else if (!status.ok()) {
          return status;
        } else {
          changed = changed || !replayed;
        }
      }
    }
    // The weight budget and the airflow: one UpdateRack for what dcl does not hold yet.
    v1::UpdateRackRequest update;
    if (p.weight_budget_kg) {
      if (current.weight_budget_kg() == *p.weight_budget_kg) {
      } else if (current.weight_budget_kg() != 0) {
        report.drift.push_back({what, absl::StrCat("weight budget: NetBox: max_weight ",
                                                   *p.weight_budget_kg, " kg; dcl: ",
                                                   current.weight_budget_kg(), " kg")});
        reported = true;
      } else {
        update.set_weight_budget_kg(*p.weight_budget_kg);
      }
    }
    if (p.airflow != v1::AIRFLOW_UNSPECIFIED) {
      if (current.airflow() == p.airflow) {
      } else if (current.airflow() != v1::AIRFLOW_UNSPECIFIED) {
        report.drift.push_back(
            {what, absl::StrCat("airflow: NetBox: ", v1::Airflow_Name(p.airflow), "; dcl: ",
                                v1::Airflow_Name(current.airflow()))});
        reported = true;
      } else {
        update.set_airflow(p.airflow);
      }
    }
    if (update.has_weight_budget_kg() || update.has_airflow()) {
      if (dry_run) {
        changed = true;
      } else {
        update.set_rack_id(id);
        update.set_request_id(DerivedRequestId(absl::StrCat(
            "netbox rack ", p.netbox_id, " weight ", update.weight_budget_kg(), " airflow ",
            update.has_airflow() ? update.airflow() : -1)));
        v1::RackRecord rack;
        auto [status, replayed] =
            Call([&](grpc::ClientContext* c) { return inventory->UpdateRack(c, update, &rack); });
        if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
            status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
          refused("weight budget and airflow", status);
        } else if (!status.ok()) {
          return status;
        } else {
          changed = changed || !replayed;
        }
      }
    }
    if (!reported) {
      Report::Counts& counts = report.counts["rack capacity"];
      ++(changed ? counts.created : counts.unchanged);
    }
  }
  return grpc::Status::OK;
}

// Devices, matched by serial: found ones are known, the rest registered in batches.
grpc::Status ApplyRun::RegisterDevices() {
  // Devices dcl had before this run (found by serial, or registered by an earlier run: the
  // registration replayed). Their placements are dcl's, never the import's to make.
  std::vector<const DevicePlan*> to_register;
  for (const DevicePlan& p : plan.devices) {
    auto found = device_by_serial.find(p.request.serial());
    if (!p.request.serial().empty() && found != device_by_serial.end()) {
      progress.Step("device " + (p.netbox_name.empty() ? p.request.serial() : p.netbox_name));
      device_id[p.netbox_id] = found->second;
      known.insert(p.netbox_id);
      ++report.counts["devices"].unchanged;
      continue;
    }
    if (dry_run) {
      progress.Step("device " + (p.netbox_name.empty() ? p.request.serial() : p.netbox_name));
      device_id[p.netbox_id] = "";
      ++report.counts["devices"].created;
      continue;
    }
    to_register.push_back(&p);
  }
  {
    struct Registered {
      grpc::Status status;
      bool replayed = false;
      v1::Device device;
    };
    std::vector<Registered> registered(to_register.size());
    auto request_of = [&](size_t i) {
      const DevicePlan& p = *to_register[i];
      v1::RegisterDeviceRequest req = p.request;
      req.set_site_id(Lookup(site_id, p.site_netbox_id));
      return req;
    };
    auto step = [&](size_t i) {
      const DevicePlan& p = *to_register[i];
      progress.Step("device " + (p.netbox_name.empty() ? p.request.serial() : p.netbox_name));
    };
    auto register_one = [&](size_t i) {
      const v1::RegisterDeviceRequest req = request_of(i);
      auto [status, replayed] = Call([&](grpc::ClientContext* c) {
        return inventory->RegisterDevice(c, req, &registered[i].device);
      });
      registered[i].status = status;
      registered[i].replayed = replayed;
      step(i);
    };
    const std::vector<std::pair<size_t, size_t>> batches =
        Batches(to_register.size(), options.batch_size);
    ParallelFor(batches.size(), options.batches_in_flight, [&](size_t b) {
      const auto [begin, end] = batches[b];
      if (options.batch_size <= 1) {
        for (size_t i = begin; i < end; ++i) register_one(i);
        return;
      }
      v1::RegisterDevicesRequest req;
      for (size_t i = begin; i < end; ++i) *req.add_requests() = request_of(i);
      v1::RegisterDevicesResponse resp;
      const grpc::Status status =
          Call([&](grpc::ClientContext* c) { return inventory->RegisterDevices(c, req, &resp); })
              .first;
      if (status.ok() && resp.devices_size() == static_cast<int>(end - begin)) {
        for (size_t i = begin; i < end; ++i) {
          registered[i].device = resp.devices(static_cast<int>(i - begin));
          step(i);
        }
        for (int k : resp.replayed_items()) {
          if (k >= 0 && static_cast<size_t>(k) < end - begin) registered[begin + k].replayed = true;
        }
        return;
      }
      if (FailsEveryItem(status)) {
        for (size_t i = begin; i < end; ++i) registered[i].status = status;
        return;
      }
      // Refused (one item's refusal fails the whole batch, nothing of it written): each item
      // again on its own, so that each refusal is reported with its own device and reason;
      // the items' request ids are the batch's, so nothing is written twice.
      ParallelFor(end - begin, options.parallel, [&](size_t k) { register_one(begin + k); });
    });
    for (size_t i = 0; i < to_register.size(); ++i) {
      const DevicePlan& p = *to_register[i];
      const grpc::Status& status = registered[i].status;
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
      if (!status.ok()) return status;
      device_id[p.netbox_id] = registered[i].device.id();
      if (registered[i].replayed) known.insert(p.netbox_id);
      ++(registered[i].replayed ? report.counts["devices"].unchanged
                                : report.counts["devices"].created);
    }
  }
  return grpc::Status::OK;
}

// Every rack's elevation before this run's placements, and where dcl places each device.
grpc::Status ApplyRun::ReadElevations() {
  // Placements and blockings: what each rack holds now decides what is already there.

  // Every rack's elevation as it is before this run's placements: the reconciliation compares
  // NetBox's claims with it.
  {
    // Read `parallel` at a time: one GetRack per rack is most of a re-run's calls.
    std::vector<int64_t> racks;
    for (const RackPlan& r : plan.racks) {
      if (!rack_id[r.netbox_id].empty()) racks.push_back(r.netbox_id);
    }
    std::vector<std::pair<grpc::Status, v1::Rack>> read(racks.size());
    ParallelFor(racks.size(), options.parallel, [&](size_t i) {
      v1::GetRackRequest req;
      req.set_rack_id(Lookup(rack_id, racks[i]));
      read[i].first = Call([&](grpc::ClientContext* c) {
                        return occupancy->GetRack(c, req, &read[i].second);
                      }).first;
    });
    for (size_t i = 0; i < racks.size(); ++i) {
      if (!read[i].first.ok()) return read[i].first;
      elevation[racks[i]] = std::move(read[i].second);
    }
  }
  for (const auto& [rack_netbox_id, rack] : elevation) {
    for (const v1::ElevationSlot& s : rack.occupied()) {
      if (s.kind() != v1::BOOKING_PLACEMENT) continue;
      DclPlacement& d = dcl_placement[s.device_id()];
      d.rack_netbox_id = rack_netbox_id;
      d.slots.push_back(s.slot());
    }
  }
  return grpc::Status::OK;
}

// Placements: kept, reported as drift for a device dcl had, or made in batches.
grpc::Status ApplyRun::PlaceDevices() {
  struct ToPlace {
    const DevicePlan* plan;
    std::string what, where;
  };
  std::vector<ToPlace> to_place;
  // In a dry run the placements NetBox records in overlapping units are known beforehand.
  const std::map<int64_t, std::vector<v1::Slot>> overlaps = OverlappingPlacements(plan);
  for (const DevicePlan& p : plan.devices) {
    const std::string what = absl::StrCat("device ", p.netbox_id,
                                          p.netbox_name.empty() ? "" : " (" + p.netbox_name + ")");
    progress.Step("placement " + what);
    if (auto failed = ElevationOf(p.rack_netbox_id)) return *failed;
    const std::string where =
        absl::StrCat(RackWhat(plan, p.rack_netbox_id), " ", SideName(p.side), " U", p.unit);
    const std::vector<v1::Slot> slots =
        ClaimedSlots(p.lowest_number, p.request.height_units(), p.side,
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
    if (known.count(p.netbox_id) > 0) {
      // Drift: dcl's bookings are the arbiter, so a device dcl already has is never placed,
      // moved or released here; what NetBox claims for it is blocked below where dcl has it
      // free.
      auto dcl = dcl_placement.find(device);
      // A device an earlier run left for a person (a capacity rule refused it): its units are
      // held by the blocking naming the refusal. It is reported again as it was, never tried
      // again: a person decides (raise the budget, place it with `dclctl place`, or correct
      // NetBox).
      if (dcl == dcl_placement.end() && rack != elevation.end()) {
        const std::string prefix = LeftForAPersonPrefix(what);
        std::optional<std::string> left;
        for (const v1::ElevationSlot& s : rack->second.occupied()) {
          if (s.kind() == v1::BOOKING_BLOCKING && s.reason().rfind(prefix, 0) == 0) {
            left = s.reason().substr(prefix.size());
            break;
          }
        }
        if (left) {
          report.refused.push_back(
              {what, absl::StrCat("placement at ", where, " refused: ", *left,
                                  " (reported again, not retried: left for a person)")});
          continue;
        }
      }
      report.drift.push_back(
          {what, absl::StrCat("NetBox: ", RackWhat(plan, p.rack_netbox_id), " ",
                              DescribeSlotRanges(slots), "; dcl: ",
                              dcl == dcl_placement.end()
                                  ? std::string("placed nowhere")
                                  : absl::StrCat(RackWhat(plan, dcl->second.rack_netbox_id), " ",
                                                 DescribeSlotRanges(dcl->second.slots)))});
      drifted.push_back(&p);
      continue;
    }
    if (auto rack_refused = capacity_refused.find(p.rack_netbox_id);
        rack_refused != capacity_refused.end()) {
      // Placed without NetBox's budget, it would be booked over what NetBox says the rack
      // takes: left for a person, its units blocked as for a capacity refusal.
      const std::string why = absl::StrCat("its rack's ", rack_refused->second);
      report.refused.push_back({what, absl::StrCat("placement at ", where, " not tried: ", why,
                                                   " (left for a person)")});
      left_for_a_person[p.netbox_id] = why;
      drifted.push_back(&p);
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
    to_place.push_back({&p, what, where});
  }
  {
    // Placements run in parallel; the ones NetBox records in units another device of the plan
    // takes go last, one by one, so that the first in NetBox id order wins, as in a dry run.
    std::vector<size_t> first, last;
    for (size_t i = 0; i < to_place.size(); ++i) {
      (overlaps.count(to_place[i].plan->netbox_id) > 0 ? last : first).push_back(i);
    }
    std::vector<grpc::Status> placed(to_place.size());
    auto request_of = [&](size_t i) {
      const DevicePlan& p = *to_place[i].plan;
      v1::PlaceDeviceRequest req;
      req.set_rack_id(Lookup(rack_id, p.rack_netbox_id));
      req.set_device_id(Lookup(device_id, p.netbox_id));
      req.set_side(p.side);
      req.set_unit(p.unit);
      req.set_reason(absl::StrCat("imported from NetBox device ", p.netbox_id));
      // Derived from NetBox's ids: a re-run within the ledger's retention replays this call.
      req.set_request_id(DerivedRequestId(absl::StrCat(
          "netbox placement ", p.netbox_id, " rack ", p.rack_netbox_id, " unit ", p.unit)));
      return req;
    };
    auto place = [&](size_t i) {
      const v1::PlaceDeviceRequest req = request_of(i);
      v1::Booking booking;
      placed[i] = Call([&](grpc::ClientContext* c) {
                    return occupancy->PlaceDevice(c, req, &booking);
                  }).first;
    };
    const std::vector<std::pair<size_t, size_t>> batches =
        Batches(first.size(), options.batch_size);
    ParallelFor(batches.size(), options.batches_in_flight, [&](size_t b) {
      const auto [begin, end] = batches[b];
      if (options.batch_size <= 1) {
        for (size_t k = begin; k < end; ++k) place(first[k]);
        return;
      }
      v1::PlaceDevicesRequest req;
      for (size_t k = begin; k < end; ++k) *req.add_requests() = request_of(first[k]);
      v1::PlaceDevicesResponse resp;
      const grpc::Status status =
          Call([&](grpc::ClientContext* c) { return occupancy->PlaceDevices(c, req, &resp); })
              .first;
      if (status.ok() && resp.bookings_size() == static_cast<int>(end - begin)) return;
      if (FailsEveryItem(status)) {
        for (size_t k = begin; k < end; ++k) placed[first[k]] = status;
        return;
      }
      // Refused or lost a race (nothing of the batch is booked): each placement again on its
      // own, so that the report names each refused device with the units it collides on. One
      // after the other in NetBox id order: when a rack's budget takes only some of the
      // batch's devices, the first ones win, as a re-run and a person reading NetBox expect.
      for (size_t k = begin; k < end; ++k) place(first[k]);
    });
    for (size_t i : last) place(i);
    for (size_t i = 0; i < to_place.size(); ++i) {
      const grpc::Status& status = placed[i];
      if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
          status.error_code() == grpc::StatusCode::OUT_OF_RANGE) {
        const std::optional<v1::ErrorDetail> detail = ErrorDetailFromGrpc(status);
        const bool occupied = detail.has_value() && detail->reason() == v1::UNIT_OCCUPIED;
        if (CapacityRefusal(status)) {
          // Never booked over a budget: the device stays registered and unplaced, its units
          // are blocked below with the refusal in the blocking's reason, and a person decides.
          const std::string why = absl::StrCat(v1::Reason_Name(detail->reason()), ": ",
                                               status.error_message());
          report.refused.push_back({to_place[i].what,
                                    absl::StrCat("placement at ", to_place[i].where,
                                                 " refused: ", why, " (left for a person)")});
          left_for_a_person[to_place[i].plan->netbox_id] = why;
          drifted.push_back(to_place[i].plan);
          continue;
        }
        report.refused.push_back(
            {to_place[i].what,
             absl::StrCat("placement at ", to_place[i].where, " refused: ",
                          occupied ? "units taken: " + CollidingUnits(status)
                                   : status.error_message())});
        continue;
      }
      if (!status.ok()) return status;
      ++report.counts["placements"].created;
    }
  }
  return grpc::Status::OK;
}

// Rack reservations: their free units blocked, the held ones reported.
grpc::Status ApplyRun::BlockReservations() {
  // Reservations: the units are blocked unless something holds them already. A unit a
  // blocking holds is out of service as the reservation wants (an earlier run's blocking, or
  // an operator's); a unit a placement, reservation or move hold takes is reported as held.
  for (const DevicePlan& d : plan.devices) {
    auto it = device_id.find(d.netbox_id);
    if (it != device_id.end() && !it->second.empty()) {
      device_netbox[it->second] = absl::StrCat(
          "device ", d.netbox_id, d.netbox_name.empty() ? "" : " (" + d.netbox_name + ")");
    }
  }
  static const std::string kBlocked = "\x01blocked";
  for (const BlockPlan& p : plan.blocks) {
    progress.Step(absl::StrCat("rack reservation ", p.netbox_id));
    if (auto failed = ElevationOf(p.rack_netbox_id)) return *failed;
    const std::string what = absl::StrCat("rack reservation ", p.netbox_id);
    Holders holders;
    if (auto rack = elevation.find(p.rack_netbox_id); rack != elevation.end()) {
      for (const v1::ElevationSlot& s : rack->second.occupied()) {
        std::string holder = kBlocked;
        if (s.kind() != v1::BOOKING_BLOCKING) {
          auto netbox_device = device_netbox.find(s.device_id());
          holder = absl::StrCat(KindName(s.kind()), " ", s.booking_id(), " of ",
                                netbox_device != device_netbox.end() ? netbox_device->second
                                                             : "dcl device " + s.device_id());
        }
        holders[{s.slot().side(), s.slot().unit()}] = holder;
      }
    }
    const SplitBlock split = SplitByHolders(p.request, rack_has_rear[p.rack_netbox_id], holders);
    for (const std::string& line : split.held) {
      if (line.size() > kBlocked.size() &&
          line.compare(line.size() - kBlocked.size(), kBlocked.size(), kBlocked) == 0) {
        continue;
      }
      report.held.push_back({what, line});
    }
    if (split.free.empty()) {
      ++report.counts["blockings"].unchanged;
      continue;
    }
    for (const v1::BlockUnitsRequest& free : split.free) {
      if (dry_run) {
        ++report.counts["blockings"].created;
        continue;
      }
      v1::BlockUnitsRequest req = free;
      req.set_rack_id(rack_id[p.rack_netbox_id]);
      req.set_request_id(DerivedRequestId(absl::StrCat(
          "netbox rack reservation ", p.netbox_id, " units ", req.first_unit(), "-",
          req.last_unit(), " side ", req.both_sides() ? "both" : SideName(req.side()))));
      v1::Booking booking;
      auto [status, replayed] =
          Call([&](grpc::ClientContext* c) { return occupancy->BlockUnits(c, req, &booking); });
      // Someone was faster between the read and this write: the units are held, not free.
      if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
        report.held.push_back(
            {what, absl::StrCat(DescribeSlotRanges(BlockedSlots(req)), " of ",
                                RackWhat(plan, p.rack_netbox_id),
                                " taken meanwhile: ", CollidingUnits(status))});
        continue;
      }
      if (!status.ok()) return status;
      ++(replayed ? report.counts["blockings"].unchanged : report.counts["blockings"].created);
    }
  }
  return grpc::Status::OK;
}

// Drift the other way: units dcl places a device in where NetBox records none.
grpc::Status ApplyRun::ReportUnclaimedPlacements() {
  // The reverse: units dcl places a device in where NetBox records none (devices of this import
  // that stand elsewhere are reported above, once).
  std::map<int64_t, std::set<std::pair<int, int>>> claimed;  // rack → NetBox's device slots
  for (const DevicePlan& d : plan.devices) {
    for (const v1::Slot& s : ClaimedSlots(d.lowest_number, d.request.height_units(), d.side,
                                          d.request.depth_class(), rack_has_rear[d.rack_netbox_id])) {
      claimed[d.rack_netbox_id].insert({s.side(), s.unit()});
    }
  }
  for (const auto& [rack_netbox_id, rack] : elevation) {
    std::map<std::string, std::vector<v1::Slot>> unclaimed;  // booking → its slots NetBox lacks
    std::map<std::string, std::string> booking_device;
    for (const v1::ElevationSlot& s : rack.occupied()) {
      if (s.kind() != v1::BOOKING_PLACEMENT || device_netbox.count(s.device_id()) > 0) continue;
      if (claimed[rack_netbox_id].count({s.slot().side(), s.slot().unit()}) > 0) continue;
      unclaimed[s.booking_id()].push_back(s.slot());
      booking_device[s.booking_id()] = s.device_id();
    }
    for (const auto& [booking, slots] : unclaimed) {
      report.drift.push_back(
          {RackWhat(plan, rack_netbox_id),
           absl::StrCat("dcl places device ", booking_device[booking], " (booking ", booking,
                        ") at ", DescribeSlotRanges(slots), " where NetBox records no device")});
    }
  }
  return grpc::Status::OK;
}

// Drift blockings: the units NetBox claims for a drifted device that dcl holds free.
grpc::Status ApplyRun::BlockDriftClaims() {
  // Units NetBox claims for a drifted device and dcl holds free must not stay for sale: they
  // are blocked, with a reason naming the NetBox object and this run. The racks are read
  // again, after this run's own placements and blockings.
  std::set<int64_t> reread;
  for (const DevicePlan* p : drifted) {
    const std::string what = absl::StrCat(
        "device ", p->netbox_id, p->netbox_name.empty() ? "" : " (" + p->netbox_name + ")");
    progress.Step("drift " + what);
    if (!dry_run && reread.insert(p->rack_netbox_id).second) {
      elevation.erase(p->rack_netbox_id);
      if (auto failed = ElevationOf(p->rack_netbox_id)) return *failed;
    }
    Holders holders;
    for (const v1::ElevationSlot& s : elevation[p->rack_netbox_id].occupied()) {
      holders[{s.slot().side(), s.slot().unit()}] = s.booking_id();
    }
    const bool rear = rack_has_rear[p->rack_netbox_id];
    v1::BlockUnitsRequest claim;
    const int last = p->lowest_number + p->request.height_units() - 1;
    claim.set_first_unit(p->lowest_number);
    claim.set_last_unit(last);
    const bool both = rear && p->request.depth_class() != v1::DEPTH_HALF;
    claim.set_both_sides(both);
    claim.set_side(both ? v1::SIDE_UNSPECIFIED : p->side);
    auto left = left_for_a_person.find(p->netbox_id);
    claim.set_reason(left != left_for_a_person.end()
                         ? absl::StrCat(LeftForAPersonPrefix(what), left->second, " (",
                                        options.run, ")")
                         : absl::StrCat("NetBox ", what, " claims these units, dcl holds them "
                                        "free (drift, ", options.run, ")"));
    for (const v1::BlockUnitsRequest& free : SplitByHolders(claim, rear, holders).free) {
      if (dry_run) {
        ++report.counts["drift blockings"].created;
        continue;
      }
      v1::BlockUnitsRequest req = free;
      req.set_rack_id(rack_id[p->rack_netbox_id]);
      req.set_request_id(DerivedRequestId(absl::StrCat(
          "netbox drift ", options.run, " device ", p->netbox_id, " units ", req.first_unit(),
          "-", req.last_unit(), " side ", req.both_sides() ? "both" : SideName(req.side()))));
      v1::Booking booking;
      auto [status, replayed] =
          Call([&](grpc::ClientContext* c) { return occupancy->BlockUnits(c, req, &booking); });
      if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
        // Taken between the read and this write: no longer free, so nothing left for sale.
        continue;
      }
      if (!status.ok()) return status;
      ++report.counts["drift blockings"].created;
    }
  }
  return grpc::Status::OK;
}

}  // namespace

grpc::Status Applier::Apply(const Plan& plan, const ApplyOptions& options, Report* out) {
  Report& report = *out;
  report.skipped = plan.skipped;
  report.refused = plan.refused;
  report.held = plan.held;
  report.unknown = plan.unknown;
  for (const char* kind : {"sites", "racks", "rack capacity", "devices", "placements",
                           "blockings", "drift blockings"}) {
    report.counts[kind];
  }
  Progress progress(
      plan.sites.size() + plan.racks.size() + plan.devices.size() * 2 + plan.blocks.size(),
      options.progress);
  ApplyRun run{plan, options, report, progress, &inventory_, &occupancy_, make_context_};
  for (grpc::Status (ApplyRun::*phase)() :
       {&ApplyRun::CreateSites, &ApplyRun::FindRacksAndDevices, &ApplyRun::CreateRacks,
        &ApplyRun::ConfigureRackCapacity, &ApplyRun::RegisterDevices, &ApplyRun::ReadElevations,
        &ApplyRun::PlaceDevices, &ApplyRun::BlockReservations,
        &ApplyRun::ReportUnclaimedPlacements, &ApplyRun::BlockDriftClaims}) {
    // A failure that is not a business refusal ends the run; what was written stays.
    if (grpc::Status status = (run.*phase)(); !status.ok()) {
      progress.Finish();
      return status;
    }
  }
  progress.Finish();
  return grpc::Status::OK;
}

}  // namespace dcl::admin::netbox
