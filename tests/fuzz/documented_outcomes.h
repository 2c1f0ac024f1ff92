// The answers each RPC may give: gRPC code and dcl.v1 reason, one table over every RPC. The
// README's section "Status codes per RPC" is this table in prose form; keep them equal. The
// fuzzer fails on any answer outside it, and on an RPC missing from it.
#ifndef DCL_TESTS_FUZZ_DOCUMENTED_OUTCOMES_H_
#define DCL_TESTS_FUZZ_DOCUMENTED_OUTCOMES_H_

#include <grpcpp/grpcpp.h>

#include <map>
#include <set>
#include <string>
#include <utility>

namespace dcl::fuzz {

// "CODE" alone allows the code with any reason (or none: OK, and a client's own deadline);
// "CODE: R1 R2" allows exactly those reasons. Entries are separated by ';'.
struct RpcOutcomes {
  const char* method;  // full name, "dcl.v1.OccupancyService.PlaceDevice"
  const char* outcomes;
};

// Every RPC may answer these: the gate (token, role, module switch), input checks, and a
// transaction that lost a race. UNAVAILABLE / DATABASE_UNAVAILABLE (the database is unreachable)
// is documented for every RPC as well but is not in this list: the fuzzer's database is healthy
// throughout, so there it is a failure (a server that died answers UNAVAILABLE too).
inline constexpr const char* kEveryRpcOutcomes =
    "UNAUTHENTICATED: UNAUTHENTICATED_CALLER; PERMISSION_DENIED: ROLE_NOT_PERMITTED; "
    "FAILED_PRECONDITION: MODULE_DISABLED; INVALID_ARGUMENT: INVALID_INPUT; "
    "ABORTED: RETRY_TRANSACTION";

inline constexpr RpcOutcomes kRpcOutcomes[] = {
    {"dcl.v1.ReservationService.Reserve",
     "OK; NOT_FOUND: NOT_FOUND; FAILED_PRECONDITION: NO_CAPACITY IDEMPOTENCY_KEY_REUSED; "
     "ABORTED: CONTENDED"},
    {"dcl.v1.ReservationService.Convert",
     "OK; NOT_FOUND: NOT_FOUND; FAILED_PRECONDITION: HOLD_EXPIRED WRONG_STATE "
     "SERVICE_ALREADY_BOUND DEVICE_ALREADY_BOUND SERVICE_NOT_DEDICATED "
     "REQUEST_ID_REUSED"},
    {"dcl.v1.ReservationService.Cancel",
     "OK; NOT_FOUND: NOT_FOUND; FAILED_PRECONDITION: WRONG_STATE REQUEST_ID_REUSED"},
    {"dcl.v1.ReservationService.GetReservation", "OK; NOT_FOUND: NOT_FOUND"},
    {"dcl.v1.ReservationService.ListReservations", "OK"},
    {"dcl.v1.ReservationService.CreateService", "OK; FAILED_PRECONDITION: REQUEST_ID_REUSED"},
    {"dcl.v1.ReservationService.EndBinding",
     "OK; NOT_FOUND: NOT_FOUND; FAILED_PRECONDITION: REQUEST_ID_REUSED"},
    {"dcl.v1.ReservationService.GetServiceLocation", "OK; NOT_FOUND: NOT_FOUND"},
    {"dcl.v1.OccupancyService.GetRack", "OK; NOT_FOUND: NOT_FOUND"},
    {"dcl.v1.OccupancyService.GetRackCapacity", "OK; NOT_FOUND: NOT_FOUND"},
    // A refusal of the planned booking is OK with `ok: false` and the rejection inside.
    {"dcl.v1.OccupancyService.PlanBooking", "OK; NOT_FOUND: NOT_FOUND"},
    {"dcl.v1.OccupancyService.PlaceDevice",
     "OK; NOT_FOUND: NOT_FOUND; FAILED_PRECONDITION: SIDE_NOT_AVAILABLE OUT_OF_BOUNDS "
     "UNIT_OCCUPIED DEVICE_ALREADY_PLACED WRONG_STATE DEVICE_DECOMMISSIONED REQUEST_ID_REUSED "
     "NOT_IN_RESERVATION HOLD_EXPIRED; ABORTED: CONTENDED"},
    {"dcl.v1.OccupancyService.BlockUnits",
     "OK; NOT_FOUND: NOT_FOUND; FAILED_PRECONDITION: SIDE_NOT_AVAILABLE "
     "OUT_OF_BOUNDS UNIT_OCCUPIED REQUEST_ID_REUSED; ABORTED: CONTENDED"},
    {"dcl.v1.OccupancyService.ReserveUnits",
     "OK; NOT_FOUND: NOT_FOUND; FAILED_PRECONDITION: SIDE_NOT_AVAILABLE "
     "OUT_OF_BOUNDS UNIT_OCCUPIED REQUEST_ID_REUSED; ABORTED: CONTENDED"},
    {"dcl.v1.OccupancyService.ReleaseBooking",
     "OK; NOT_FOUND: NOT_FOUND; FAILED_PRECONDITION: WRONG_STATE MOVE_ALREADY_OPEN "
     "REQUEST_ID_REUSED"},
    // A plan is a read: an item that fits nowhere is OK with the reasons inside.
    {"dcl.v1.OccupancyService.PlanDelivery",
     "OK; NOT_FOUND: NOT_FOUND; FAILED_PRECONDITION: WRONG_STATE DEVICE_DECOMMISSIONED "
     "DEVICE_ALREADY_PLACED"},
    {"dcl.v1.OccupancyService.ReserveDelivery",
     "OK; NOT_FOUND: NOT_FOUND; FAILED_PRECONDITION: WRONG_STATE DEVICE_DECOMMISSIONED "
     "DEVICE_ALREADY_PLACED NO_CAPACITY SIDE_NOT_AVAILABLE OUT_OF_BOUNDS UNIT_OCCUPIED "
     "REQUEST_ID_REUSED; ABORTED: CONTENDED"},
    {"dcl.v1.MoveService.StartMove",
     "OK; NOT_FOUND: NOT_FOUND; FAILED_PRECONDITION: WRONG_STATE MOVE_ALREADY_OPEN "
     "DEVICE_NOT_PLACED CROSS_SITE_MOVE SIDE_NOT_AVAILABLE OUT_OF_BOUNDS UNIT_OCCUPIED "
     "DEVICE_DECOMMISSIONED REQUEST_ID_REUSED; ABORTED: CONTENDED"},
    {"dcl.v1.MoveService.AdvanceMove",
     "OK; NOT_FOUND: NOT_FOUND; FAILED_PRECONDITION: INVALID_TRANSITION "
     "REQUEST_ID_REUSED"},
    {"dcl.v1.MoveService.CancelMove",
     "OK; NOT_FOUND: NOT_FOUND; FAILED_PRECONDITION: INVALID_TRANSITION "
     "REQUEST_ID_REUSED"},
    {"dcl.v1.MoveService.GetMove", "OK; NOT_FOUND: NOT_FOUND"},
    {"dcl.v1.MoveService.ListMoves", "OK"},
    {"dcl.v1.MoveService.ListLocationHistory", "OK; NOT_FOUND: NOT_FOUND"},
    {"dcl.v1.InventoryService.CreateSite",
     "OK; ALREADY_EXISTS: ALREADY_EXISTS; FAILED_PRECONDITION: REQUEST_ID_REUSED"},
    {"dcl.v1.InventoryService.GetSite", "OK; NOT_FOUND: NOT_FOUND"},
    {"dcl.v1.InventoryService.ListSites", "OK"},
    {"dcl.v1.InventoryService.CreateRack",
     "OK; NOT_FOUND: NOT_FOUND; ALREADY_EXISTS: ALREADY_EXISTS; "
     "FAILED_PRECONDITION: REQUEST_ID_REUSED"},
    {"dcl.v1.InventoryService.GetRack", "OK; NOT_FOUND: NOT_FOUND"},
    {"dcl.v1.InventoryService.ListRacks", "OK; NOT_FOUND: NOT_FOUND"},
    {"dcl.v1.InventoryService.UpdateRack",
     "OK; NOT_FOUND: NOT_FOUND; ALREADY_EXISTS: ALREADY_EXISTS; "
     "FAILED_PRECONDITION: OUT_OF_BOUNDS REQUEST_ID_REUSED"},
    {"dcl.v1.InventoryService.RegisterDevice",
     "OK; NOT_FOUND: NOT_FOUND; ALREADY_EXISTS: ALREADY_EXISTS; "
     "FAILED_PRECONDITION: REQUEST_ID_REUSED"},
    {"dcl.v1.InventoryService.GetDevice", "OK; NOT_FOUND: NOT_FOUND"},
    {"dcl.v1.InventoryService.ListDevices", "OK; NOT_FOUND: NOT_FOUND"},
    {"dcl.v1.InventoryService.UpdateDevice",
     "OK; NOT_FOUND: NOT_FOUND; ALREADY_EXISTS: ALREADY_EXISTS; "
     "FAILED_PRECONDITION: DEVICE_IN_USE DEVICE_DECOMMISSIONED REQUEST_ID_REUSED"},
    {"dcl.v1.InventoryService.SetDeviceState",
     "OK; NOT_FOUND: NOT_FOUND; FAILED_PRECONDITION: INVALID_TRANSITION MOVE_ALREADY_OPEN "
     "DEVICE_DECOMMISSIONED REQUEST_ID_REUSED"},
    {"dcl.v1.InventoryService.DecommissionDevice",
     "OK; NOT_FOUND: NOT_FOUND; FAILED_PRECONDITION: DEVICE_IN_USE DEVICE_DECOMMISSIONED "
     "REQUEST_ID_REUSED"},
    {"dcl.v1.MoveService.CorrectLocation",
     "OK; NOT_FOUND: NOT_FOUND; FAILED_PRECONDITION: REQUEST_ID_REUSED"},
    // The stream of an open move stays open: the client's deadline ends it (no detail).
    {"dcl.v1.MoveService.WatchMove",
     "OK; NOT_FOUND: NOT_FOUND; RESOURCE_EXHAUSTED: LIMIT_REACHED; DEADLINE_EXCEEDED"},
};

// (code, reason) pairs allowed for one RPC; reason "*" = any reason or none.
using OutcomeSet = std::set<std::pair<grpc::StatusCode, std::string>>;

// method full name → allowed outcomes (the RPC's entry plus kEveryRpcOutcomes). Throws on a
// malformed entry (an unknown code or reason name).
std::map<std::string, OutcomeSet> ParseDocumentedOutcomes();

bool IsAllowed(const OutcomeSet& allowed, grpc::StatusCode code, const std::string& reason);

const char* CodeName(grpc::StatusCode code);

}  // namespace dcl::fuzz

#endif  // DCL_TESTS_FUZZ_DOCUMENTED_OUTCOMES_H_
