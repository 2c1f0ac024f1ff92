// What dclctl prints, and the exit status it ends with: the pure part of the command line.
// Tables and key/value blocks for people, protobuf's own JSON printer for scripts, the
// readable form of a refusal (its dcl.v1.ErrorDetail: reason, colliding units, allowed next
// states), and the one mapping from a gRPC status code to an exit status. Also the parsers of
// the words an operator types (front, in_progress, held …). No I/O, no gRPC calls.
#ifndef DCL_DCLCTL_FORMAT_CLI_FORMAT_H_
#define DCL_DCLCTL_FORMAT_CLI_FORMAT_H_

#include <string>
#include <vector>

#include <google/protobuf/message.h>
#include <google/protobuf/timestamp.pb.h>
#include <grpcpp/support/status.h>

#include "dcl/v1/common.pb.h"
#include "dcl/v1/inventory.pb.h"
#include "dcl/v1/moves.pb.h"
#include "dcl/v1/occupancy.pb.h"
#include "dcl/v1/reservation.pb.h"

namespace dcl::admin {

// Exit statuses (docs/operators-guide.md, "Exit status"; cli_format_test holds them to it).
inline constexpr int kExitOk = 0;
inline constexpr int kExitOther = 1;        // anything not below (INTERNAL, UNKNOWN …)
inline constexpr int kExitUsage = 2;        // bad flags or arguments; INVALID_ARGUMENT
inline constexpr int kExitNotFound = 3;     // NOT_FOUND
inline constexpr int kExitRefused = 4;      // FAILED_PRECONDITION, RESOURCE_EXHAUSTED: a rule said no
inline constexpr int kExitRetry = 5;        // ABORTED: lost a race; try again now
inline constexpr int kExitUnavailable = 6;  // UNAVAILABLE, DEADLINE_EXCEEDED: try again later
inline constexpr int kExitAuth = 7;         // UNAUTHENTICATED, PERMISSION_DENIED
inline constexpr int kExitDrift = 8;        // import netbox: NetBox and dcl disagree (drift)
inline constexpr int kExitInterrupted = 130;  // Ctrl-C ended a watch (128 + SIGINT)

int ExitCodeFor(grpc::StatusCode code);

// The lines that explain a failed call, for stderr: what kind of failure, the reason and the
// message, then whatever the ErrorDetail carries (colliding units, allowed next states,
// exclusion counts, metadata).
std::vector<std::string> DescribeError(const grpc::Status& status);

// A failed call as a google.rpc.Status in JSON (code, message, details with the ErrorInfo and
// the dcl.v1.ErrorDetail), for stderr under --json.
std::string ErrorJson(const grpc::Status& status);

// protobuf's JSON: field names as in the .proto files, enums by name, zero values printed (a
// plan with "ok": false says so). `multiline` for one answer, single line for a stream.
std::string ToJson(const google::protobuf::Message& message, bool multiline = true);

// Parsers of what an operator types. Case and '-' vs '_' do not matter, nor the enum's prefix:
// "in-progress", "IN_PROGRESS" and "MOVE_IN_PROGRESS" are one state.
bool ParseSide(const std::string& text, v1::Side* side);                  // front, rear
bool ParseMoveState(const std::string& text, v1::MoveState* state);       // draft … failed
bool ParseObservation(const std::string& text, v1::Observation* observation);
bool ParseReservationState(const std::string& text, v1::ReservationState* state);
bool ParseBookingKind(const std::string& text, v1::BookingKind* kind);    // placement … move_hold
bool ParseProcessState(const std::string& text, v1::ProcessState* state);  // normal, staging …
bool ParseDepthClass(const std::string& text, v1::DepthClass* depth);      // full, half, unknown
bool ParseAirflow(const std::string& text, v1::Airflow* airflow);         // front-to-rear …
// A power feed as `dclctl rack feeds` takes it: NAME:VOLTSxAMPS[:3ph][:UTIL%], e.g. "A:230x16",
// "B:400Vx32A:3ph:90%" (single-phase and 80 % unless said). false, with *error, otherwise.
bool ParsePowerFeed(const std::string& text, v1::PowerFeed* feed, std::string* error);
// Ports by speed as dclctl takes them: SPEED:COUNT,... e.g. "10g:48,25g:8" (the server judges
// the speeds and counts). false, with *error, on text that is not such a list.
bool ParsePortCounts(const std::string& text,
                     google::protobuf::RepeatedPtrField<v1::PortCount>* ports, std::string* error);
// "10g 48, 25g 8" ("none" for an empty list).
std::string PortCountsText(const google::protobuf::RepeatedPtrField<v1::PortCount>& ports);
// "A 230 V x 16 A single-phase 80 % = 2944 W": one line per feed.
std::vector<std::string> PowerFeedsText(const v1::RackRecord& rack);

// "in_progress", "held", "front": an enum value as an operator types it.
std::string MoveStateName(v1::MoveState state);
std::string ReservationStateName(v1::ReservationState state);
std::string SideName(v1::Side side);
std::string ProcessStateName(v1::ProcessState state);
std::string DepthClassName(v1::DepthClass depth);
std::string AirflowName(v1::Airflow airflow);  // "front-to-rear"; "" unspecified

// "Dell R650 DL-0001": how a device is named on a rack's elevation (vendor, model, serial).
std::string DeviceLabel(const v1::Device& device);

// "2026-11-30 22:31:05Z" (UTC); "-" when unset.
std::string TimestampText(const google::protobuf::Timestamp& ts);

// Human-readable answers.
std::vector<std::string> BookingText(const v1::Booking& booking);
std::vector<std::string> CapacityText(const v1::RackCapacity& capacity);
// A site's capacity: one line per dimension (total, used, free, stranded, not known) and one
// per forecast (the net rate and the days until free runs out at it).
std::vector<std::string> SiteCapacityText(const v1::SiteCapacity& capacity);
std::vector<std::string> PlanText(const v1::PlanBookingResponse& plan);
std::vector<std::string> MoveText(const v1::Move& move);
std::vector<std::string> MovesTable(const v1::ListMovesResponse& moves);
std::string MoveEventLine(const v1::MoveEvent& event);
std::vector<std::string> ReservationText(const v1::Reservation& reservation);
std::vector<std::string> ReservationsTable(const v1::ListReservationsResponse& reservations);
std::vector<std::string> SiteText(const v1::Site& site);
std::vector<std::string> SitesTable(const v1::ListSitesResponse& sites);
std::vector<std::string> RackRecordText(const v1::RackRecord& rack);
std::vector<std::string> RacksTable(const v1::ListRacksResponse& racks);
std::vector<std::string> DeviceText(const v1::Device& device);
std::vector<std::string> DevicesTable(const v1::ListDevicesResponse& devices);

}  // namespace dcl::admin

#endif  // DCL_DCLCTL_FORMAT_CLI_FORMAT_H_
