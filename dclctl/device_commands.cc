// dclctl's device commands (InventoryService): list, show, register, set-state, decommission.
#include "dclctl/command_groups.h"
#include "dclctl/command_support.h"

namespace dcl::admin {
namespace {

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
  if (auto ports = OptionalInt(FLAGS_power_ports, "power_ports")) req.set_power_port_count(*ports);
  const std::string airflow = absl::GetFlag(FLAGS_airflow);
  if (!airflow.empty()) {
    v1::Airflow value;
    if (!ParseAirflow(airflow, &value) || value == v1::AIRFLOW_UNSPECIFIED) {
      throw UsageError("--airflow must be one of NetBox's airflows (front-to-rear, ...), not \"" +
                       airflow + "\"");
    }
    req.set_airflow(value);
  }
  const std::string ports = absl::GetFlag(FLAGS_ports);
  if (!ports.empty()) {
    req.set_network_ports_known(true);
    std::string error;
    if (ports != "none" && !ParsePortCounts(ports, req.mutable_network_ports(), &error)) {
      throw UsageError(error);
    }
  }
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

}  // namespace

std::vector<Command> DeviceCommands() {
  return {
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
       "[--profile P] [--power W] [--weight KG] [--power_ports N] [--airflow A] "
       "[--ports 10g:2,1g:1|none] [--state staging|normal] [--request_id T]",
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
  };
}

}  // namespace dcl::admin
