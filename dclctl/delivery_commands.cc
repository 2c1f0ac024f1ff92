#include "dclctl/delivery_commands.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "dcl/v1/occupancy.grpc.pb.h"
#include "dclctl/format/cli_format.h"
#include "dclctl/command_flags.h"
#include "dclctl/command_groups.h"


ABSL_FLAG(std::string, racks, "", "delivery: the racks allowed, comma-separated, in preference order");
ABSL_FLAG(bool, keep_together, false, "delivery: every item in one rack");
ABSL_FLAG(int, max_per_rack, 0, "delivery: spread, at most this many items per rack");
ABSL_FLAG(int, power_headroom, 0, "delivery: watts to leave free under each power budget");
ABSL_FLAG(int, weight_headroom, 0, "delivery: kg to leave free under each weight budget");

namespace dcl::admin {
namespace {

struct Usage : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The plan request from the flags and the items on the command line.
v1::PlanDeliveryRequest PlanRequestFromFlags(const std::vector<std::string>& args) {
  v1::PlanDeliveryRequest req;
  req.set_site_id(absl::GetFlag(FLAGS_site));
  if (req.site_id().empty()) throw Usage("--site is required");
  if (args.empty()) throw Usage("name at least one item");
  for (const std::string& arg : args) {
    absl::StatusOr<v1::DeliveryItem> item = ParseDeliveryItem(arg);
    if (!item.ok()) throw Usage(std::string(item.status().message()));
    *req.add_items() = *std::move(item);
  }
  v1::DeliveryConstraints* c = req.mutable_constraints();
  for (absl::string_view id : absl::StrSplit(absl::GetFlag(FLAGS_racks), ',', absl::SkipEmpty())) {
    c->add_rack_ids(std::string(id));
  }
  c->set_keep_together(absl::GetFlag(FLAGS_keep_together));
  c->set_max_per_rack(absl::GetFlag(FLAGS_max_per_rack));
  const std::string side = absl::GetFlag(FLAGS_side);
  if (!side.empty()) {
    v1::Side parsed;
    if (!ParseSide(side, &parsed)) throw Usage("--side must be front or rear");
    c->set_side(parsed);
  }
  c->set_power_headroom_watts(absl::GetFlag(FLAGS_power_headroom));
  c->set_weight_headroom_kg(absl::GetFlag(FLAGS_weight_headroom));
  return req;
}

int Failure(const std::string& name, bool json, const grpc::Status& status) {
  if (json) {
    std::fprintf(stderr, "%s\n", ErrorJson(status).c_str());
  } else {
    for (const std::string& line : DescribeError(status)) {
      std::fprintf(stderr, "dclctl %s: %s\n", name.c_str(), line.c_str());
    }
  }
  return ExitCodeFor(status.error_code());
}

std::unique_ptr<v1::OccupancyService::Stub> Stub(const ClientOptions& client) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      MakeChannel(client, client.For(Service::kOccupancy).target);
  if (!channel.ok()) throw Usage(std::string(channel.status().message()));
  return v1::OccupancyService::NewStub(*channel);
}

// --svg: the racks the plan puts something into, read with GetRack, drawn with the plan.
int WriteSvg(const std::string& name, const ClientOptions& client, bool json,
             v1::OccupancyService::Stub& stub,
             const google::protobuf::RepeatedPtrField<v1::PlannedDeliveryItem>& planned) {
  const std::string path = absl::GetFlag(FLAGS_svg);
  if (path.empty()) return kExitOk;
  std::vector<std::string> rack_ids;
  for (const v1::PlannedDeliveryItem& p : planned) {
    if (std::find(rack_ids.begin(), rack_ids.end(), p.rack_id()) == rack_ids.end()) {
      rack_ids.push_back(p.rack_id());
    }
  }
  std::vector<v1::Rack> racks;
  for (const std::string& id : rack_ids) {
    v1::GetRackRequest req;
    req.set_rack_id(id);
    v1::Rack rack;
    auto context = MakeContext(client, Service::kOccupancy);
    const grpc::Status status = stub.GetRack(context.get(), req, &rack);
    if (!status.ok()) return Failure(name, json, status);
    racks.push_back(std::move(rack));
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << DeliverySvg(racks, planned);
  out.close();
  if (!out) {
    std::fprintf(stderr, "dclctl %s: cannot write %s\n", name.c_str(), path.c_str());
    return kExitOther;
  }
  if (!json) std::printf("wrote %zu rack elevations to %s\n", racks.size(), path.c_str());
  return kExitOk;
}

int UsageFailure(const std::string& name, const char* usage, const Usage& e) {
  std::fprintf(stderr, "dclctl %s: %s\nusage: dclctl %s %s\n", name.c_str(), e.what(),
               name.c_str(), usage);
  return kExitUsage;
}

}  // namespace

int DeliveryPlanCommand(const std::string& name, const std::vector<std::string>& args,
                        const ClientOptions& client, bool json) {
  try {
    const v1::PlanDeliveryRequest req = PlanRequestFromFlags(args);
    auto stub = Stub(client);
    v1::DeliveryPlan plan;
    auto context = MakeContext(client, Service::kOccupancy);
    const grpc::Status status = stub->PlanDelivery(context.get(), req, &plan);
    if (!status.ok()) return Failure(name, json, status);
    if (json) {
      std::printf("%s\n", ToJson(plan).c_str());
    } else {
      PrintLines(DeliveryPlanText(plan));
    }
    if (int svg = WriteSvg(name, client, json, *stub, plan.planned()); svg != kExitOk) return svg;
    // Like `plan`: an item that fits nowhere is a refusal of the delivery as a whole.
    return plan.unplaced_size() > 0 ? kExitRefused : kExitOk;
  } catch (const Usage& e) {
    return UsageFailure(name, kDeliveryPlanUsage, e);
  }
}

int DeliveryReserveCommand(const std::string& name, const std::vector<std::string>& args,
                           const ClientOptions& client, bool json, const std::string& request_id) {
  try {
    v1::ReserveDeliveryRequest req;
    *req.mutable_plan_request() = PlanRequestFromFlags(args);
    req.set_ttl_seconds(absl::GetFlag(FLAGS_ttl_seconds));
    req.set_reason(absl::GetFlag(FLAGS_reason));
    req.set_request_id(request_id);
    auto stub = Stub(client);
    v1::DeliveryReservation reserved;
    auto context = MakeContext(client, Service::kOccupancy);
    const grpc::Status status = stub->ReserveDelivery(context.get(), req, &reserved);
    if (!status.ok()) return Failure(name, json, status);
    if (json) {
      std::printf("%s\n", ToJson(reserved).c_str());
    } else {
      PrintLines(DeliveryReservationText(reserved));
    }
    return WriteSvg(name, client, json, *stub, reserved.plan().planned());
  } catch (const Usage& e) {
    return UsageFailure(name, kDeliveryReserveUsage, e);
  }
}

int DeliveryPlaceCommand(const std::string& name, const std::vector<std::string>& args,
                         const ClientOptions& client, bool json, const std::string& request_id) {
  try {
    if (args.size() != 1) throw Usage("name the reservation the device is placed into");
    v1::PlaceDeviceRequest req;
    req.set_reservation_id(args[0]);
    req.set_request_id(request_id);
    req.set_rack_id(absl::GetFlag(FLAGS_rack));
    req.set_device_id(absl::GetFlag(FLAGS_device));
    if (req.rack_id().empty()) throw Usage("--rack is required");
    if (req.device_id().empty()) throw Usage("--device is required");
    v1::Side side;
    if (!ParseSide(absl::GetFlag(FLAGS_side), &side)) throw Usage("--side must be front or rear");
    req.set_side(side);
    int unit = 0;
    if (!absl::SimpleAtoi(absl::GetFlag(FLAGS_unit), &unit)) {
      throw Usage("--unit must be a whole number");
    }
    req.set_unit(unit);
    req.set_reason(absl::GetFlag(FLAGS_reason));
    auto stub = Stub(client);
    v1::Booking booking;
    auto context = MakeContext(client, Service::kOccupancy);
    const grpc::Status status = stub->PlaceDevice(context.get(), req, &booking);
    if (!status.ok()) return Failure(name, json, status);
    if (json) {
      std::printf("%s\n", ToJson(booking).c_str());
    } else {
      PrintLines(BookingText(booking));
    }
    return kExitOk;
  } catch (const Usage& e) {
    return UsageFailure(name, kDeliveryPlaceUsage, e);
  }
}

std::vector<Command> DeliveryCommands() {
  return {
      {{"delivery", "plan"},
       kDeliveryPlanUsage,
       "where a delivery's items go across the site's racks (units, power, weight); exit 4 when "
       "an item fits nowhere",
       0,
       kMaxDeliveryArgs,
       Section::kRacks,
       [](Invocation& inv) {
         return DeliveryPlanCommand(inv.name, inv.args, inv.client, inv.json);
       }},
      {{"delivery", "reserve"},
       kDeliveryReserveUsage,
       "reserve every unit of the delivery's plan in one step, all or nothing",
       0,
       kMaxDeliveryArgs,
       Section::kRacks,
       [](Invocation& inv) {
         return DeliveryReserveCommand(inv.name, inv.args, inv.client, inv.json, WriteRequestId());
       }},
      {{"delivery", "place"},
       kDeliveryPlaceUsage,
       "place a device into its reservation: the reserved units become its placement",
       1,
       1,
       Section::kRacks,
       [](Invocation& inv) {
         return DeliveryPlaceCommand(inv.name, inv.args, inv.client, inv.json, WriteRequestId());
       }},
  };
}

}  // namespace dcl::admin
