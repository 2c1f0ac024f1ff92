// Persistence of the inventory: sites, racks and devices. Free functions taking the caller's
// transaction first, so that a logic method composes them (with the request ledger and the
// booking reads) in one transaction; all SQL of the inventory lives here.
//
// Every function is scoped by organization: a row of another organization is not found, the
// same as an unknown id. Uniqueness is the schema's (sites_org_name_uq, racks_site_name_uq,
// devices_org_serial_uq): a violation is read by constraint name (GuardedExec) and returned as
// ALREADY_EXISTS naming the field and the existing row, within the caller's organization only.
#ifndef DCL_SERVICES_INVENTORY_INVENTORY_STORE_H_
#define DCL_SERVICES_INVENTORY_INVENTORY_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <pqxx/pqxx>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dcl/v1/inventory.pb.h"
#include "dcl/v1/occupancy.pb.h"
#include "services/common/page_token.h"

namespace dcl::inventory {

// The lists run in creation order (PageOrder::kCreation) and read `limit` rows after `after`.

// ---- Sites ----

absl::StatusOr<v1::Site> InsertSite(pqxx::transaction_base& tx, const std::string& org_id,
                                    const std::string& name);
std::optional<v1::Site> FindSite(pqxx::transaction_base& tx, const std::string& org_id,
                                 const std::string& site_id);
Page<v1::Site> ListSites(pqxx::transaction_base& tx, const std::string& org_id,
                         const std::optional<PageCursor>& after, int limit);

// ---- Ports by speed (schema 0040) ----

// Ports by speed, in the vocabulary's order ("1g", "10g", "25g", "100g"): {"10g", 48}.
using PortCounts = std::vector<std::pair<std::string, int64_t>>;
// The vocabulary (dcl_port_speeds()).
const std::vector<std::string>& PortSpeeds();
// The JSON object the schema stores ({"10g": 48}); "" for nullopt (NULL).
std::string PortsJson(const std::optional<PortCounts>& ports);
void SetPortCounts(const PortCounts& ports, google::protobuf::RepeatedPtrField<v1::PortCount>* out);

// ---- Racks ----

struct RackFields {
  std::string site_id;
  std::string name;
  v1::RackGeometry geometry;
  int power_budget_watts = 0;  // 0 = NULL (no budget known)
  int weight_budget_kg = 0;
  int cooling_budget_watts = 0;  // 0 = NULL (no cooling budget)
  std::string airflow;           // "" = NULL (no airflow rule); else front-to-rear | rear-to-front
  // Written only when set_switch_ports: nullopt = NULL (no ports rule).
  bool set_switch_ports = false;
  std::optional<PortCounts> switch_ports;
};

// NetBox's airflow names (schema devices_airflow_valid) for the proto's enum, both ways; ""
// for AIRFLOW_UNSPECIFIED (NULL).
std::string AirflowName(v1::Airflow airflow);
v1::Airflow AirflowOf(const std::string& name);

// One power feed as the request gives it (PowerFeed without available_watts).
struct FeedFields {
  std::string name;
  int voltage = 0;
  int amperage = 0;
  std::string phase = "single-phase";  // single-phase | three-phase
  int max_utilization = 80;
};

absl::StatusOr<v1::RackRecord> InsertRack(pqxx::transaction_base& tx, const std::string& org_id,
                                          const RackFields& rack);
// `lock`: FOR UPDATE, which waits for every booking in flight on this rack (the booking write
// path reads the rack FOR KEY SHARE) and holds new ones back until this transaction ends.
std::optional<v1::RackRecord> FindRack(pqxx::transaction_base& tx, const std::string& org_id,
                                       const std::string& rack_id, bool lock);
Page<v1::RackRecord> ListRacks(pqxx::transaction_base& tx, const std::string& org_id,
                               const std::string& site_id, const std::optional<PageCursor>& after,
                               int limit);
// Writes name, geometry, budgets and airflow of an existing rack (site unchanged). A budget
// or airflow the rack's load refuses is FAILED_PRECONDITION with the capacity reason.
absl::StatusOr<v1::RackRecord> UpdateRack(pqxx::transaction_base& tx, const std::string& org_id,
                                          const std::string& rack_id, const RackFields& rack);
// Makes the rack's feeds exactly `feeds` (by name: update, insert, delete) and has the schema
// judge the set as it ends (dcl_power_feeds_judge: the deferred rebuild fired at once). The
// caller holds the rack FOR UPDATE. A set the load refuses is FAILED_PRECONDITION naming the
// rack and the feed or device in the way; the caller's transaction must then roll back.
absl::StatusOr<v1::RackRecord> SetPowerFeeds(pqxx::transaction_base& tx,
                                             const std::string& org_id,
                                             const v1::RackRecord& rack,
                                             const std::vector<FeedFields>& feeds);

// An active slot of a booking, with what occupies it.
struct BookedSlot {
  std::string booking_id;
  std::string kind;       // placement | blocking | move_hold | reservation
  std::string device_id;  // "" when none
  v1::Side side = v1::SIDE_UNSPECIFIED;
  int unit = 0;
};

// The rack's active slots that `geometry` would not contain (units outside its range, rear
// slots when it has no rear), in unit order. Every active booking counts, lapsed reservations
// too: the sweeper or a colliding booking releases those, not a geometry change.
std::vector<BookedSlot> SlotsOutside(pqxx::transaction_base& tx, const std::string& rack_id,
                                     const v1::RackGeometry& geometry);

// ---- Devices ----

struct DeviceFields {
  std::string site_id;
  std::string vendor;
  std::string model;
  std::string hardware_profile;
  std::string serial;  // "" = NULL
  int height_units = 1;
  std::string depth_class = "unknown";  // full | half | unknown
  std::string process_state = "staging";
  std::optional<int> power_draw_watts;  // nullopt = unknown
  std::optional<int> weight_kg;
  std::optional<int> power_port_count;  // nullopt = unknown
  std::string airflow;                  // "" = unknown (NULL)
  std::optional<PortCounts> network_ports;  // nullopt = unknown; empty = needs none
};

struct DeviceRecord {
  v1::Device proto;
  DeviceFields fields;  // the row as stored, for updates
};

absl::StatusOr<v1::Device> InsertDevice(pqxx::transaction_base& tx, const std::string& org_id,
                                        const DeviceFields& device);
// `lock`: FOR UPDATE, which waits for a booking in flight for this device (the booking write
// path reads the device FOR KEY SHARE) and for Reserve's row lock, and holds both back.
std::optional<DeviceRecord> FindDevice(pqxx::transaction_base& tx, const std::string& org_id,
                                       const std::string& device_id, bool lock);

struct DeviceFilter {
  std::string site_id;
  std::string vendor;
  std::string model;
  std::string hardware_profile;
  std::string process_state;  // "" = any
  bool include_decommissioned = false;
};
Page<v1::Device> ListDevices(pqxx::transaction_base& tx, const std::string& org_id,
                             const DeviceFilter& filter, const std::optional<PageCursor>& after,
                             int limit);

// Writes vendor, model, profile, serial, height, depth, power and weight (not the site, not
// the process state).
absl::StatusOr<v1::Device> UpdateDevice(pqxx::transaction_base& tx, const std::string& org_id,
                                        const std::string& device_id, const DeviceFields& device);
absl::StatusOr<v1::Device> SetProcessState(pqxx::transaction_base& tx, const std::string& org_id,
                                           const std::string& device_id,
                                           const std::string& process_state);
absl::StatusOr<v1::Device> MarkDecommissioned(pqxx::transaction_base& tx,
                                              const std::string& org_id,
                                              const std::string& device_id,
                                              const std::string& actor, const std::string& reason);

// What uses a device right now; each field empty when nothing does. Read in one statement, so
// a Convert (held → bound) committing meanwhile shows as one or the other, never as neither.
struct DeviceUse {
  std::string held_by_reservation;  // a reservation in state 'held'
  std::string bound_to_service;     // an active service binding's service
  std::string placed_by_booking;    // the active placement
  std::string placed_in_rack;       // its rack's name
  std::string held_for_move;        // an active move hold booking of this device
  std::string open_move;            // a move not in a terminal state
};
DeviceUse ReadDeviceUse(pqxx::transaction_base& tx, const std::string& device_id);

}  // namespace dcl::inventory

#endif  // DCL_SERVICES_INVENTORY_INVENTORY_STORE_H_
