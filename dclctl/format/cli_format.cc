#include "dclctl/format/cli_format.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "dclctl/format/rack_elevation.h"
#include "dclctl/format/text_table.h"
#include "google/rpc/status.pb.h"
#include "services/common/booking_kind.h"
#include "services/common/grpc_status.h"

namespace dcl::admin {

int ExitCodeFor(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return kExitOk;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      return kExitUsage;
    case grpc::StatusCode::NOT_FOUND:
      return kExitNotFound;
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::ALREADY_EXISTS:
      return kExitRefused;
    case grpc::StatusCode::ABORTED:
      return kExitRetry;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return kExitUnavailable;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return kExitAuth;
    default:
      return kExitOther;
  }
}

namespace {

// What an operator should make of a failure, by its exit status.
const char* FailureKind(grpc::StatusCode code) {
  switch (ExitCodeFor(code)) {
    case kExitUsage:
      return "bad input";
    case kExitNotFound:
      return "not found";
    case kExitRefused:
      return "refused";
    case kExitRetry:
      return "lost a race, try again";
    case kExitUnavailable:
      return "unavailable, try again later";
    case kExitAuth:
      return "not allowed";
    default:
      return "failed";
  }
}

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "OK";
  }
}

std::string Normalize(const std::string& text) {
  return absl::StrReplaceAll(absl::AsciiStrToLower(text), {{"-", "_"}, {" ", "_"}});
}

// Matches `text` against the values of an enum other than its zero value, with or without the
// values' common prefix ("move_", "side_" …).
bool ParseEnum(const google::protobuf::EnumDescriptor* descriptor, const std::string& prefix,
               const std::string& text, int* value) {
  const std::string wanted = Normalize(text);
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const google::protobuf::EnumValueDescriptor* v = descriptor->value(i);
    if (v->number() == 0) continue;
    const std::string full = absl::AsciiStrToLower(v->name());
    std::string bare = full;
    if (absl::StartsWith(bare, prefix)) bare = bare.substr(prefix.size());
    if (wanted == full || wanted == bare) {
      *value = v->number();
      return true;
    }
  }
  return false;
}

std::string EnumWord(const google::protobuf::EnumDescriptor* descriptor, const std::string& prefix,
                     int value) {
  const google::protobuf::EnumValueDescriptor* v = descriptor->FindValueByNumber(value);
  if (v == nullptr) return absl::StrCat(value);
  std::string name = absl::AsciiStrToLower(v->name());
  if (value != 0 && absl::StartsWith(name, prefix)) name = name.substr(prefix.size());
  return name;
}

std::string Or(const std::string& text, const std::string& fallback = "-") {
  return text.empty() ? fallback : text;
}

// "label  value" lines with the values aligned.
std::vector<std::string> KeyValues(const std::vector<std::pair<std::string, std::string>>& rows) {
  size_t width = 0;
  for (const auto& [key, value] : rows) width = std::max(width, DisplayWidth(key));
  std::vector<std::string> lines;
  for (const auto& [key, value] : rows) lines.push_back(PadRight(key, width) + "  " + value);
  return lines;
}

std::vector<v1::Slot> Slots(const google::protobuf::RepeatedPtrField<v1::Slot>& slots) {
  return std::vector<v1::Slot>(slots.begin(), slots.end());
}

std::vector<std::string> DetailLines(const v1::ErrorDetail& detail) {
  std::vector<std::string> lines;
  if (detail.colliding_slots_size() > 0) {
    lines.push_back("  colliding units: " + DescribeSlotRanges(Slots(detail.colliding_slots())));
  }
  if (detail.allowed_targets_size() > 0) {
    lines.push_back("  allowed next states: " + absl::StrJoin(detail.allowed_targets(), ", "));
  }
  for (const v1::ExclusionCount& e : detail.exclusion_counts()) {
    lines.push_back(absl::StrCat("  excluded: ", e.count(), " ", e.reason()));
  }
  for (const v1::ExcludedDevice& d : detail.excluded_devices()) {
    lines.push_back(absl::StrCat("  excluded device ", d.device_id(), ": ", d.reason()));
  }
  // Sorted, so the same refusal always reads the same.
  std::vector<std::pair<std::string, std::string>> metadata(detail.metadata().begin(),
                                                            detail.metadata().end());
  std::sort(metadata.begin(), metadata.end());
  for (const auto& [key, value] : metadata) lines.push_back("  " + key + ": " + value);
  return lines;
}

}  // namespace

std::vector<std::string> DescribeError(const grpc::Status& status) {
  const std::optional<v1::ErrorDetail> detail = ErrorDetailFromGrpc(status);
  std::string head = absl::StrCat(FailureKind(status.error_code()), " (",
                                   CodeName(status.error_code()));
  if (detail && detail->reason() != v1::REASON_UNSPECIFIED) {
    absl::StrAppend(&head, ", ", v1::Reason_Name(detail->reason()));
  }
  const std::string message =
      detail && !detail->message().empty() ? detail->message() : status.error_message();
  absl::StrAppend(&head, "): ", Or(message, "no message"));
  std::vector<std::string> lines = {head};
  if (detail) {
    for (std::string& line : DetailLines(*detail)) lines.push_back(std::move(line));
  }
  return lines;
}

std::string ErrorJson(const grpc::Status& status) {
  google::rpc::Status rpc_status;
  if (status.error_details().empty() || !rpc_status.ParseFromString(status.error_details())) {
    rpc_status.Clear();
    rpc_status.set_code(static_cast<int>(status.error_code()));
    rpc_status.set_message(status.error_message());
  }
  return ToJson(rpc_status, false);
}

std::string ToJson(const google::protobuf::Message& message, bool multiline) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = multiline;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) return "{}";  // only for Any payloads of unknown types, which dcl never sends
  if (!json.empty() && json.back() == '\n') json.pop_back();
  return json;
}

bool ParseSide(const std::string& text, v1::Side* side) {
  int value = 0;
  if (!ParseEnum(v1::Side_descriptor(), "side_", text, &value)) return false;
  *side = static_cast<v1::Side>(value);
  return true;
}

bool ParseMoveState(const std::string& text, v1::MoveState* state) {
  int value = 0;
  if (!ParseEnum(v1::MoveState_descriptor(), "move_", text, &value)) return false;
  *state = static_cast<v1::MoveState>(value);
  return true;
}

bool ParseObservation(const std::string& text, v1::Observation* observation) {
  int value = 0;
  if (!ParseEnum(v1::Observation_descriptor(), "observation_", text, &value)) return false;
  *observation = static_cast<v1::Observation>(value);
  return true;
}

bool ParseReservationState(const std::string& text, v1::ReservationState* state) {
  int value = 0;
  if (!ParseEnum(v1::ReservationState_descriptor(), "reservation_", text, &value)) return false;
  *state = static_cast<v1::ReservationState>(value);
  return true;
}

bool ParseProcessState(const std::string& text, v1::ProcessState* state) {
  int value = 0;
  if (!ParseEnum(v1::ProcessState_descriptor(), "process_", text, &value)) return false;
  *state = static_cast<v1::ProcessState>(value);
  return true;
}

bool ParseDepthClass(const std::string& text, v1::DepthClass* depth) {
  int value = 0;
  if (!ParseEnum(v1::DepthClass_descriptor(), "depth_", text, &value)) return false;
  *depth = static_cast<v1::DepthClass>(value);
  return true;
}

bool ParseAirflow(const std::string& text, v1::Airflow* airflow) {
  int value = 0;
  if (!ParseEnum(v1::Airflow_descriptor(), "airflow_", text, &value)) return false;
  *airflow = static_cast<v1::Airflow>(value);
  return true;
}

std::string AirflowName(v1::Airflow airflow) {
  if (airflow == v1::AIRFLOW_UNSPECIFIED) return "";
  std::string name = absl::AsciiStrToLower(v1::Airflow_Name(airflow).substr(strlen("AIRFLOW_")));
  absl::StrReplaceAll({{"_", "-"}}, &name);
  return name;
}

bool ParsePortCounts(const std::string& text,
                     google::protobuf::RepeatedPtrField<v1::PortCount>* ports, std::string* error) {
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::vector<absl::string_view> parts = absl::StrSplit(item, ':');
    int count = 0;
    if (parts.size() != 2 || absl::StripAsciiWhitespace(parts[0]).empty() ||
        !absl::SimpleAtoi(parts[1], &count)) {
      *error = absl::StrCat("ports are SPEED:COUNT,... (e.g. 10g:48,25g:8), not \"", text, "\"");
      return false;
    }
    v1::PortCount* port = ports->Add();
    port->set_speed(std::string(absl::StripAsciiWhitespace(parts[0])));
    port->set_count(count);
  }
  return true;
}

std::string PortCountsText(const google::protobuf::RepeatedPtrField<v1::PortCount>& ports) {
  if (ports.empty()) return "none";
  return absl::StrJoin(ports, ", ", [](std::string* out, const v1::PortCount& p) {
    absl::StrAppend(out, p.speed(), " ", p.count());
  });
}

bool ParsePowerFeed(const std::string& text, v1::PowerFeed* feed, std::string* error) {
  const std::vector<std::string> parts = absl::StrSplit(text, ':');
  auto fail = [&](const std::string& why) {
    *error = absl::StrCat("feed \"", text, "\": ", why,
                          " (NAME:VOLTSxAMPS[:3ph][:UTIL%], e.g. A:230x16)");
    return false;
  };
  if (parts.size() < 2 || parts.size() > 4 || parts[0].empty()) return fail("not a feed");
  std::string rating = absl::AsciiStrToLower(parts[1]);
  absl::StrReplaceAll({{"v", ""}, {"a", ""}}, &rating);
  const std::vector<std::string> va = absl::StrSplit(rating, 'x');
  int voltage = 0, amperage = 0;
  if (va.size() != 2 || !absl::SimpleAtoi(va[0], &voltage) || !absl::SimpleAtoi(va[1], &amperage)) {
    return fail("the rating is VOLTSxAMPS");
  }
  feed->Clear();
  feed->set_name(parts[0]);
  feed->set_voltage(voltage);
  feed->set_amperage(amperage);
  feed->set_phase(v1::POWER_PHASE_SINGLE);
  for (size_t i = 2; i < parts.size(); ++i) {
    const std::string option = absl::AsciiStrToLower(parts[i]);
    int utilization = 0;
    if (option == "3ph" || option == "three-phase") {
      feed->set_phase(v1::POWER_PHASE_THREE);
    } else if (option == "1ph" || option == "single-phase") {
      feed->set_phase(v1::POWER_PHASE_SINGLE);
    } else if (absl::EndsWith(option, "%") &&
               absl::SimpleAtoi(option.substr(0, option.size() - 1), &utilization)) {
      feed->set_max_utilization(utilization);
    } else {
      return fail(absl::StrCat("unknown option \"", parts[i], "\""));
    }
  }
  return true;
}

std::vector<std::string> PowerFeedsText(const v1::RackRecord& rack) {
  std::vector<std::string> lines;
  for (const v1::PowerFeed& f : rack.power_feeds()) {
    lines.push_back(absl::StrCat(
        "feed ", f.name(), ": ", f.voltage(), " V x ", f.amperage(), " A ",
        f.phase() == v1::POWER_PHASE_THREE ? "three-phase" : "single-phase", " at ",
        f.max_utilization(), " % = ", f.available_watts(), " W available"));
  }
  return lines;
}

bool ParseBookingKind(const std::string& text, v1::BookingKind* kind) {
  // The stored names (booking_kind.h), spelled as any enum value is here: any case, dashes or
  // spaces for underscores, with or without the enum's "booking_" prefix.
  const std::string wanted = Normalize(text);
  for (const BookingKindNames& names : kBookingKinds) {
    if (wanted == names.stored || wanted == absl::StrCat("booking_", names.stored)) {
      *kind = names.kind;
      return true;
    }
  }
  return false;
}

std::string ProcessStateName(v1::ProcessState state) {
  return EnumWord(v1::ProcessState_descriptor(), "process_", state);
}
std::string DepthClassName(v1::DepthClass depth) {
  return EnumWord(v1::DepthClass_descriptor(), "depth_", depth);
}

std::string MoveStateName(v1::MoveState state) {
  return EnumWord(v1::MoveState_descriptor(), "move_", state);
}
std::string ReservationStateName(v1::ReservationState state) {
  return EnumWord(v1::ReservationState_descriptor(), "reservation_", state);
}
std::string SideName(v1::Side side) { return EnumWord(v1::Side_descriptor(), "side_", side); }

std::string TimestampText(const google::protobuf::Timestamp& ts) {
  if (ts.seconds() == 0 && ts.nanos() == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%SZ", absl::FromUnixSeconds(ts.seconds()),
                          absl::UTCTimeZone());
}

std::vector<std::string> BookingText(const v1::Booking& b) {
  std::vector<std::pair<std::string, std::string>> rows = {
      {"booking", b.id()},
      {"kind", KindName(b.kind())},
      {"rack", b.rack_id()},
      {"slots", DescribeSlotRanges(Slots(b.slots()))},
  };
  if (!b.device_id().empty()) rows.push_back({"device", b.device_id()});
  if (b.has_expires_at()) rows.push_back({"expires", TimestampText(b.expires_at())});
  if (!b.reason().empty()) rows.push_back({"reason", b.reason()});
  rows.push_back({"created", absl::StrCat(TimestampText(b.created_at()), " by ",
                                          Or(b.created_by()))});
  if (b.has_released_at()) {
    rows.push_back({"released", absl::StrCat(TimestampText(b.released_at()), " by ",
                                             Or(b.released_by()))});
  }
  return KeyValues(rows);
}

namespace {

std::string Dimension(const v1::CapacityDimension& d, const char* unit) {
  std::string text = d.budget_known()
                         ? absl::StrCat(d.known_used(), " of ", d.budget(), " ", unit, " used, ",
                                        d.budget() - d.known_used(), " left")
                         : absl::StrCat(d.known_used(), " ", unit, " used, no budget set");
  if (d.items_with_unknown_value() > 0) {
    absl::StrAppend(&text, " (", d.items_with_unknown_value(),
                    " device(s) of unknown value not counted)");
  }
  if (d.load_unknown()) {
    absl::StrAppend(&text, "; load unknown: takes nothing more until those figures are set");
  } else if (d.allowance() > 0) {
    absl::StrAppend(&text, "; stood ", d.allowance(), " ", unit,
                    " over before the budget was enforced: takes releases only");
  }
  return text;
}

// "A: 230 V x 32 A three-phase at 80 %, 10196 W available, 900 W used; B lost: 1800 W;
// N-1 headroom 8396 W".
std::string FeedText(const v1::FeedCapacity& f) {
  std::string text = absl::StrCat(f.voltage(), " V x ", f.amperage(), " A ", f.phase(), " at ",
                                  f.max_utilization_percent(), " %, ", f.available_watts(),
                                  " W available, ", f.used_watts(), " W used");
  for (const v1::FeedLoss& loss : f.if_lost()) {
    absl::StrAppend(&text, "; ", loss.lost_feed(), " lost: ", loss.carried_watts(), " W");
  }
  absl::StrAppend(&text, "; N-1 headroom ", f.headroom_watts(), " W");
  return text;
}

}  // namespace

std::vector<std::string> CapacityText(const v1::RackCapacity& c) {
  std::vector<std::pair<std::string, std::string>> rows = {
      {"rack", c.rack_id()},
      {"free front units", absl::StrCat(c.free_front_units())},
      {"free rear units", c.has_rear() ? absl::StrCat(c.free_rear_units()) : "- (open frame)"},
      {"power", Dimension(c.power_watts(), "W")},
      {"weight", Dimension(c.weight_kg(), "kg")},
      {"heat", Dimension(c.cooling_watts(), "W")},
      {"airflow",
       c.airflow().empty() ? "- (none set: no device refused for its airflow)" : c.airflow()},
  };
  if (c.feeds().empty()) rows.push_back({"power feeds", "- (none recorded)"});
  for (const v1::FeedCapacity& f : c.feeds()) rows.push_back({"feed " + f.name(), FeedText(f)});
  if (c.ports().empty()) rows.push_back({"switch ports", "- (none recorded)"});
  for (const v1::PortCapacity& p : c.ports()) {
    if (p.offered() == 0 && p.used() == 0) continue;  // a speed the rack neither offers nor uses
    rows.push_back({"ports " + p.speed(), absl::StrCat(p.used(), " of ", p.offered(), " used, ",
                                                       p.offered() - p.used(), " free")});
  }
  return KeyValues(rows);
}

std::vector<std::string> SiteCapacityText(const v1::SiteCapacity& c) {
  auto unit_of = [](const std::string& dimension) -> std::string {
    if (dimension == "units") return "slots";
    if (dimension == "weight") return "kg";
    return "W";
  };
  std::vector<std::vector<std::string>> rows;
  for (const v1::SiteCapacityDimension& d : c.dimensions()) {
    const std::string unit = unit_of(d.dimension());
    rows.push_back({d.dimension(), absl::StrCat(d.racks()), absl::StrCat(d.total(), " ", unit),
                    absl::StrCat(d.used()), absl::StrCat(d.free()), absl::StrCat(d.stranded()),
                    d.unknown_racks() == 0
                        ? "-"
                        : absl::StrCat("<= ", d.unknown_free(), " in ", d.unknown_racks(),
                                       d.unknown_racks() == 1 ? " rack" : " racks")});
  }
  std::vector<std::string> lines = {
      absl::StrCat("site ", c.site_id(), ": ", c.rack_count(),
                   c.rack_count() == 1 ? " rack" : " racks", "; a typical device ",
                   c.typical_power_watts(), " W, ", c.typical_weight_kg(), " kg")};
  for (std::string& line :
       FormatTable({"DIMENSION", "RACKS", "TOTAL", "USED", "FREE", "STRANDED", "NOT KNOWN"}, rows)) {
    lines.push_back(std::move(line));
  }
  lines.push_back(absl::StrCat("forecast over the last ", c.window_days(),
                               " days (booked less released, per day):"));
  for (const v1::SiteCapacityDimension& d : c.dimensions()) {
    std::string line = absl::StrCat("  ", d.dimension(), ": +", d.booked_in_window(), " -",
                                    d.released_in_window(), " ", unit_of(d.dimension()), ", ",
                                    absl::StrFormat("%.2f", d.net_per_day()), "/day: ");
    if (!d.has_days_to_exhaustion()) {
      absl::StrAppend(&line, "does not run out at this rate");
    } else {
      absl::StrAppend(&line, "free runs out in ",
                      absl::StrFormat("%.1f", d.days_to_exhaustion()), " days");
      if (d.days_to_exhaustion() < 90) absl::StrAppend(&line, " (within 90 days)");
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<std::string> PlanText(const v1::PlanBookingResponse& plan) {
  if (plan.ok()) return {"would claim: " + DescribeSlotRanges(Slots(plan.slots()))};
  std::vector<std::string> lines = {absl::StrCat(
      "would be refused (", v1::Reason_Name(plan.rejection().reason()), "): ",
      Or(plan.rejection().message(), "no message"))};
  for (std::string& line : DetailLines(plan.rejection())) lines.push_back(std::move(line));
  return lines;
}

std::vector<std::string> MoveText(const v1::Move& m) {
  return KeyValues({
      {"move", m.id()},
      {"state", MoveStateName(m.state())},
      {"device", m.device_id()},
      {"destination", absl::StrCat("rack ", m.destination_rack_id(), " ",
                                   SideName(m.destination_side()), " U", m.destination_unit())},
      {"site", m.site_id()},
      {"from booking", Or(m.source_booking_id())},
      {"move hold", Or(m.move_hold_booking_id())},
      {"created", absl::StrCat(TimestampText(m.created_at()), " by ", Or(m.created_by()))},
      {"updated", TimestampText(m.updated_at())},
  });
}

std::vector<std::string> MovesTable(const v1::ListMovesResponse& moves) {
  if (moves.moves().empty()) return {"no moves"};
  std::vector<std::vector<std::string>> rows;
  for (const v1::Move& m : moves.moves()) {
    rows.push_back({m.id(), MoveStateName(m.state()), ShortId(m.device_id()),
                    absl::StrCat("rack ", ShortId(m.destination_rack_id()), " ",
                                 SideName(m.destination_side()), " U", m.destination_unit()),
                    TimestampText(m.updated_at())});
  }
  return FormatTable({"MOVE", "STATE", "DEVICE", "DESTINATION", "UPDATED"}, rows);
}

std::string MoveEventLine(const v1::MoveEvent& e) {
  std::string line = absl::StrCat(TimestampText(e.at()), "  #", e.sequence(), "  ");
  if (e.from_state() == v1::MOVE_STATE_UNSPECIFIED) {
    absl::StrAppend(&line, "created as ", MoveStateName(e.to_state()));
  } else {
    absl::StrAppend(&line, MoveStateName(e.from_state()), " → ", MoveStateName(e.to_state()));
  }
  if (!e.actor().empty()) absl::StrAppend(&line, "  by ", e.actor());
  if (!e.note().empty()) absl::StrAppend(&line, "  “", e.note(), "”");
  return line;
}

std::vector<std::string> ReservationText(const v1::Reservation& r) {
  std::vector<std::pair<std::string, std::string>> rows = {
      {"reservation", r.id()},
      {"key", r.idempotency_key()},
      {"state", ReservationStateName(r.state())},
      {"device", Or(r.device_id())},
      {"site", Or(r.criteria().site_id())},
  };
  std::vector<std::string> wanted;
  if (!r.criteria().vendor().empty()) wanted.push_back("vendor " + r.criteria().vendor());
  if (!r.criteria().model().empty()) wanted.push_back("model " + r.criteria().model());
  if (!r.criteria().hardware_profile().empty()) {
    wanted.push_back("profile " + r.criteria().hardware_profile());
  }
  rows.push_back({"criteria", wanted.empty() ? "any machine" : absl::StrJoin(wanted, ", ")});
  rows.push_back({"created", TimestampText(r.created_at())});
  rows.push_back({"expires", TimestampText(r.expires_at())});
  if (r.has_ended_at()) {
    rows.push_back({"ended", absl::StrCat(TimestampText(r.ended_at()), " (", Or(r.end_reason()),
                                          ") by ", Or(r.ended_by()))});
  }
  if (!r.service_id().empty()) rows.push_back({"service", r.service_id()});
  return KeyValues(rows);
}

std::vector<std::string> ReservationsTable(const v1::ListReservationsResponse& list) {
  if (list.reservations().empty()) return {"no reservations"};
  std::vector<std::vector<std::string>> rows;
  for (const v1::Reservation& r : list.reservations()) {
    rows.push_back({r.id(), r.idempotency_key(), ReservationStateName(r.state()),
                    r.device_id().empty() ? "-" : ShortId(r.device_id()),
                    r.has_ended_at() ? "ended " + TimestampText(r.ended_at())
                                     : "expires " + TimestampText(r.expires_at())});
  }
  return FormatTable({"RESERVATION", "KEY", "STATE", "DEVICE", "WHEN"}, rows);
}

std::string DeviceLabel(const v1::Device& d) {
  std::vector<std::string> parts;
  for (const std::string* p : {&d.vendor(), &d.model(), &d.serial()}) {
    if (!p->empty()) parts.push_back(*p);
  }
  return absl::StrJoin(parts, " ");
}

std::vector<std::string> SiteText(const v1::Site& site) {
  return KeyValues({{"site", site.id()}, {"name", site.name()},
                    {"created", TimestampText(site.created_at())}});
}

std::vector<std::string> SitesTable(const v1::ListSitesResponse& list) {
  if (list.sites().empty()) return {"no sites"};
  std::vector<std::vector<std::string>> rows;
  for (const v1::Site& s : list.sites()) rows.push_back({s.id(), s.name()});
  return FormatTable({"SITE", "NAME"}, rows);
}

namespace {
std::string GeometryText(const v1::RackGeometry& g) {
  return absl::StrCat(g.unit_count(), " units from U", g.first_unit(), ", ",
                      g.numbering() == v1::NUMBERING_DESCENDING ? "descending" : "ascending",
                      g.has_rear() ? ", front and rear" : ", front only (open frame)");
}
std::string Budget(int value, const char* unit) {
  return value == 0 ? "none known" : absl::StrCat(value, " ", unit);
}
std::string OptionalFigure(bool has, int value, const char* unit) {
  return has ? absl::StrCat(value, " ", unit) : "unknown";
}
}  // namespace

std::vector<std::string> RackRecordText(const v1::RackRecord& r) {
  return KeyValues(
      {{"rack", r.id()},
       {"name", r.name()},
       {"site", r.site_id()},
       {"geometry", GeometryText(r.geometry())},
       {"power budget", Budget(r.power_budget_watts(), "W")},
       {"weight budget", Budget(r.weight_budget_kg(), "kg")},
       {"cooling budget", Budget(r.cooling_budget_watts(), "W")},
       {"airflow", Or(AirflowName(r.airflow()))},
       {"power feeds", r.power_feeds().empty() ? "none" : absl::StrJoin(PowerFeedsText(r), "; ")},
       {"switch ports",
        r.switch_ports().empty() ? "none recorded" : PortCountsText(r.switch_ports())},
       {"created", TimestampText(r.created_at())}});
}

std::vector<std::string> RacksTable(const v1::ListRacksResponse& list) {
  if (list.racks().empty()) return {"no racks"};
  std::vector<std::vector<std::string>> rows;
  for (const v1::RackRecord& r : list.racks()) {
    rows.push_back({r.id(), r.name(), ShortId(r.site_id()), GeometryText(r.geometry())});
  }
  return FormatTable({"RACK", "NAME", "SITE", "GEOMETRY"}, rows);
}

std::vector<std::string> DeviceText(const v1::Device& d) {
  std::vector<std::pair<std::string, std::string>> rows = {
      {"device", d.id()},
      {"site", d.site_id()},
      {"vendor", Or(d.vendor())},
      {"model", Or(d.model())},
      {"hardware profile", Or(d.hardware_profile())},
      {"serial", Or(d.serial())},
      {"height", absl::StrCat(d.height_units(), "U")},
      {"depth", DepthClassName(d.depth_class())},
      {"state", d.decommissioned() ? "decommissioned" : ProcessStateName(d.process_state())},
      {"power draw", OptionalFigure(d.has_power_draw_watts(), d.power_draw_watts(), "W")},
      {"weight", OptionalFigure(d.has_weight_kg(), d.weight_kg(), "kg")},
      {"power ports", d.has_power_port_count() ? absl::StrCat(d.power_port_count()) : "unknown"},
      {"airflow", Or(AirflowName(d.airflow()))},
      {"network ports", d.network_ports_known() ? PortCountsText(d.network_ports()) : "unknown"},
      {"created", TimestampText(d.created_at())},
  };
  if (d.decommissioned()) rows.push_back({"decommissioned", TimestampText(d.decommissioned_at())});
  return KeyValues(rows);
}

std::vector<std::string> DevicesTable(const v1::ListDevicesResponse& list) {
  if (list.devices().empty()) return {"no devices"};
  std::vector<std::vector<std::string>> rows;
  for (const v1::Device& d : list.devices()) {
    rows.push_back({d.id(), Or(d.vendor()), Or(d.model()), Or(d.serial()),
                    absl::StrCat(d.height_units(), "U"), DepthClassName(d.depth_class()),
                    d.decommissioned() ? "decommissioned" : ProcessStateName(d.process_state())});
  }
  return FormatTable({"DEVICE", "VENDOR", "MODEL", "SERIAL", "HEIGHT", "DEPTH", "STATE"}, rows);
}

}  // namespace dcl::admin
