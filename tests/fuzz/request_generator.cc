#include "tests/fuzz/request_generator.h"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <stdexcept>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "services/common/rpc_catalog.h"

namespace dcl::fuzz {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::MethodDescriptor;
using google::protobuf::Reflection;

constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int32_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

// Requests that would succeed for organization A, per RPC, in text format. Placeholders:
// {kind} or {kind:tag,tag} an A object, {side}, {unit} a unit inside some rack, {unit+} the
// last {unit} plus 0..3, {int:a..b}, {bool}, {key} an idempotency key, {enum:full.Name}.
const std::map<std::string, std::vector<std::string>>& Templates() {
  static const std::map<std::string, std::vector<std::string>> templates = {
      {"dcl.v1.ReservationService.Reserve",
       {R"(idempotency_key: "{key}" criteria { site_id: "{site}" })",
        R"(idempotency_key: "{key}" criteria { site_id: "{site}" vendor: "Dell" model: "R650" }
           ttl_seconds: {int:1..3600})"}},
      {"dcl.v1.ReservationService.Convert",
       {R"(request_id: "{key}"
           reservation { reservation_id: "{reservation:held}" } service_id: "{service:unbound}")",
        R"(reservation { idempotency_key: "{key}" } service_id: "{service}")"}},
      {"dcl.v1.ReservationService.Cancel",
       {R"(request_id: "{key}"
           reservation { reservation_id: "{reservation}" } reason: "changed plans")",
        R"(reservation { idempotency_key: "{key}" })"}},
      {"dcl.v1.ReservationService.GetReservation",
       {R"(reservation { reservation_id: "{reservation}" })",
        R"(reservation { idempotency_key: "{key}" })"}},
      {"dcl.v1.ReservationService.ListReservations",
       {R"(state: {enum:dcl.v1.ReservationState} page_size: {int:0..5})", ""}},
      {"dcl.v1.ReservationService.CreateService",
       {R"(request_id: "{key}" kind: "dedicated" customer: "bob")",
        R"(kind: "vps" customer: "carol")"}},
      {"dcl.v1.ReservationService.EndBinding",
       {R"(request_id: "{key}" binding_id: "{binding}")", R"(binding_id: "{binding}")"}},
      {"dcl.v1.ReservationService.GetServiceLocation", {R"(service_id: "{service}")"}},
      {"dcl.v1.OccupancyService.GetRack", {R"(rack_id: "{rack}")"}},
      {"dcl.v1.OccupancyService.GetRackCapacity", {R"(rack_id: "{rack}")"}},
      {"dcl.v1.OccupancyService.PlanBooking",
       {R"(booking { rack_id: "{rack}" kind: BOOKING_PLACEMENT device_id: "{device}" side: {side}
                     first_unit: {unit} })",
        R"(booking { rack_id: "{rack}" kind: BOOKING_BLOCKING side: {side} both_sides: {bool}
                     first_unit: {unit} last_unit: {unit+} reason: "plan" })",
        R"(booking { rack_id: "{rack}" kind: BOOKING_RESERVATION side: {side}
                     first_unit: {unit} last_unit: {unit+} })"}},
      {"dcl.v1.OccupancyService.PlaceDevice",
       {R"(request_id: "{key}"
           rack_id: "{rack:site1}" device_id: "{device:unplaced}" side: {side} unit: {unit})",
        R"(rack_id: "{rack}" device_id: "{device}" side: {side} unit: {unit} reason: "racked")",
        R"(request_id: "{key}" rack_id: "{rack:site1}" device_id: "{device:unplaced}" side: {side}
           unit: {unit} reservation_id: "{booking:reservation}")"}},
      {"dcl.v1.OccupancyService.PlaceDevices",
       {R"(requests { request_id: "{key}" rack_id: "{rack:site1}" device_id: "{device:unplaced}"
                      side: {side} unit: {unit} }
           requests { request_id: "{key}" rack_id: "{rack:site1}" device_id: "{device:unplaced}"
                      side: {side} unit: {unit} })",
        R"(requests { rack_id: "{rack}" device_id: "{device}" side: {side} unit: {unit} })"}},
      {"dcl.v1.OccupancyService.BlockUnits",
       {R"(request_id: "{key}" rack_id: "{rack}" side: {side} both_sides: {bool} first_unit: {unit}
           last_unit: {unit+} reason: "cabling")",
        R"(rack_id: "{rack}" side: {side} both_sides: {bool} first_unit: {unit}
           last_unit: {unit+} reason: "cabling")"}},
      {"dcl.v1.OccupancyService.ReserveUnits",
       {R"(request_id: "{key}" rack_id: "{rack}" side: {side} both_sides: {bool} first_unit: {unit}
           last_unit: {unit+} reason: "delivery" ttl_seconds: {int:0..86400})",
        R"(rack_id: "{rack}" side: {side} both_sides: {bool} first_unit: {unit}
           last_unit: {unit+} reason: "delivery" ttl_seconds: {int:0..86400})"}},
      {"dcl.v1.OccupancyService.ReleaseBooking",
       {R"(request_id: "{key}" booking_id: "{booking:active}" reason: "done")",
        R"(booking_id: "{booking}" expected_kind: {enum:dcl.v1.BookingKind})"}},
      {"dcl.v1.OccupancyService.PlanDelivery",
       {R"(site_id: "{site}" items { device_id: "{device:unplaced}" }
           items { spec { height_units: {int:1..4} depth_class: {enum:dcl.v1.DepthClass}
                          power_draw_watts: {int:0..900} count: {int:0..3} label: "srv" } }
           constraints { keep_together: {bool} side: {side} power_headroom_watts: {int:0..500} })",
        R"(site_id: "{site}" items { spec { height_units: {int:1..4} depth_class: DEPTH_HALF } }
           constraints { rack_ids: "{rack}" max_per_rack: {int:0..3} })"}},
      {"dcl.v1.OccupancyService.ReserveDelivery",
       {R"(request_id: "{key}" ttl_seconds: {int:0..86400} reason: "delivery"
           plan_request { site_id: "{site}" items { device_id: "{device:unplaced}" }
             items { spec { height_units: {int:1..2} depth_class: DEPTH_HALF count: {int:0..2} } } })",
        R"(planned { items { rack_id: "{rack}" name: "x" side: {side} unit: {unit}
                             slots { side: {side} unit: {unit} } } })"}},
      {"dcl.v1.OccupancyService.GetSiteCapacity",
       {R"(site_id: "{site}")",
        R"(site_id: "{site}" window_days: {int:0..365} typical_power_watts: {int:0..2000}
           typical_weight_kg: {int:0..60})"}},
      {"dcl.v1.MoveService.StartMove",
       {R"(request_id: "{key}" device_id: "{device:placed}" destination_rack_id: "{rack:site1}"
           destination_side: {side} destination_unit: {unit} as_draft: {bool} note: "fuzz")",
        R"(device_id: "{device:placed}" destination_rack_id: "{rack:site1}"
           destination_side: {side} destination_unit: {unit} as_draft: {bool} note: "fuzz")"}},
      {"dcl.v1.MoveService.AdvanceMove",
       {R"(request_id: "{key}" move_id: "{move}" target: {enum:dcl.v1.MoveState} note: "next")",
        R"(move_id: "{move}" target: {enum:dcl.v1.MoveState}
           observation: {enum:dcl.v1.Observation})"}},
      {"dcl.v1.MoveService.CancelMove",
       {R"(request_id: "{key}" move_id: "{move}" note: "abort")",
        R"(move_id: "{move}" note: "abort")"}},
      {"dcl.v1.MoveService.GetMove", {R"(move_id: "{move}")"}},
      {"dcl.v1.MoveService.ListMoves",
       {R"(state: {enum:dcl.v1.MoveState} page_size: {int:0..5})",
        R"(device_id: "{device}" page_size: {int:0..5})"}},
      {"dcl.v1.MoveService.WatchMove", {R"(move_id: "{move}")"}},
      {"dcl.v1.InventoryService.CreateSite", {R"(request_id: "{key}" name: "FZ{int:1..60}")"}},
      {"dcl.v1.InventoryService.GetSite", {R"(site_id: "{site}")"}},
      {"dcl.v1.InventoryService.ListSites", {R"(page_size: {int:0..5})"}},
      {"dcl.v1.InventoryService.CreateRack",
       {R"(request_id: "{key}" site_id: "{site}" name: "FR{int:1..60}"
           geometry { first_unit: {int:0..3} unit_count: {int:1..48}
                      numbering: {enum:dcl.v1.Numbering} has_rear: {bool} }
           power_budget_watts: {int:0..9000})"}},
      {"dcl.v1.InventoryService.GetRack", {R"(rack_id: "{rack}")"}},
      {"dcl.v1.InventoryService.ListRacks", {R"(site_id: "{site}" page_size: {int:0..5})", ""}},
      {"dcl.v1.InventoryService.UpdateRack",
       {R"(request_id: "{key}" rack_id: "{rack}" name: "renamed{int:1..60}")",
        R"(request_id: "{key}" rack_id: "{rack}"
           geometry { first_unit: {int:0..3} unit_count: {int:1..48}
                      numbering: {enum:dcl.v1.Numbering} has_rear: {bool} })"}},
      {"dcl.v1.InventoryService.SetPowerFeeds",
       {R"(request_id: "{key}" rack_id: "{rack}"
           feeds { name: "A" voltage: {int:1..400} amperage: {int:1..63}
                   phase: {enum:dcl.v1.PowerPhase} max_utilization: {int:0..100} }
           feeds { name: "B" voltage: {int:1..400} amperage: {int:1..63} })",
        R"(request_id: "{key}" rack_id: "{rack}")"}},
      {"dcl.v1.InventoryService.RegisterDevice",
       {R"(request_id: "{key}" site_id: "{site}" vendor: "Dell" model: "R650"
           height_units: {int:1..4} depth_class: {enum:dcl.v1.DepthClass}
           power_draw_watts: {int:0..900})"}},
      {"dcl.v1.InventoryService.RegisterDevices",
       {R"(requests { request_id: "{key}" site_id: "{site}" vendor: "Dell" model: "R650"
                      height_units: {int:1..4} depth_class: {enum:dcl.v1.DepthClass} }
           requests { request_id: "{key}" site_id: "{site}" vendor: "HPE" model: "DL360"
                      height_units: {int:1..4} power_draw_watts: {int:0..900} })"}},
      {"dcl.v1.InventoryService.GetDevice", {R"(device_id: "{device}")"}},
      {"dcl.v1.InventoryService.ListDevices",
       {R"(site_id: "{site}" vendor: "Dell" page_size: {int:0..5})", ""}},
      {"dcl.v1.InventoryService.UpdateDevice",
       {R"(request_id: "{key}" device_id: "{device}" height_units: {int:1..4})",
        R"(request_id: "{key}" device_id: "{device}" power_draw_unknown: true)"}},
      {"dcl.v1.InventoryService.SetDeviceState",
       {R"(request_id: "{key}" device_id: "{device}" state: {enum:dcl.v1.ProcessState})"}},
      {"dcl.v1.InventoryService.DecommissionDevice",
       {R"(request_id: "{key}" device_id: "{device:unplaced}" reason: "retired")"}},
      {"dcl.v1.MoveService.ListLocationHistory",
       {R"(device_id: "{device}" page_size: {int:0..5})"}},
      {"dcl.v1.MoveService.CorrectLocation",
       {R"(request_id: "{key}"
           corrects_id: {int:1..40} reason: "miscounted" rack_id: "{rack}" side: {side}
           first_unit: {unit} last_unit: {unit+})",
        R"(corrects_id: {int:1..40} reason: "lost track" position_unknown: true)"}},
  };
  return templates;
}

template <typename T>
const T& Pick(const std::vector<T>& values, Rng& rng) {
  return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
}

int64_t Uniform(Rng& rng, int64_t low, int64_t high) {
  return std::uniform_int_distribution<int64_t>(low, high)(rng);
}

bool Chance(Rng& rng, double p) { return std::bernoulli_distribution(p)(rng); }

// "rack" for rack_id and destination_rack_id, "" for id.
std::string IdKind(const std::string& field_name) {
  if (!absl::EndsWith(field_name, "_id")) return "";
  const std::string stem = field_name.substr(0, field_name.size() - 3);
  const size_t underscore = stem.rfind('_');
  return underscore == std::string::npos ? stem : stem.substr(underscore + 1);
}

// A field naming an object. A client request id names none: it is the caller's own token for
// a retry, compared only with the caller's earlier ids, so it is fuzzed as text.
bool IsIdField(const FieldDescriptor* field) {
  return field->type() == FieldDescriptor::TYPE_STRING && field->name() != "request_id" &&
         (field->name() == "id" || absl::EndsWith(field->name(), "_id"));
}

const SeededObject* PickObject(const SeededOrg& org, const std::string& kind,
                               const std::string& tags, Rng& rng) {
  std::vector<const SeededObject*> found = org.Find(kind, tags);
  if (found.empty()) found = org.Find(kind, "");
  if (found.empty()) {
    for (const SeededObject& object : org.objects) found.push_back(&object);
  }
  if (found.empty()) return nullptr;
  return Pick(found, rng);
}

// Every id field of `message` and its sub-messages, with `fn(message, field, index)` (index -1
// for a singular field).
template <typename Fn>
void ForEachIdField(Message* message, Fn&& fn) {
  const Reflection* reflection = message->GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(*message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
          ForEachIdField(reflection->MutableRepeatedMessage(message, field, i), fn);
        }
      } else {
        ForEachIdField(reflection->MutableMessage(message, field), fn);
      }
    } else if (IsIdField(field) && field->name() != "request_id") {
      // A client request id names no object: another organization's object id there is just a
      // new request id, and the same write sent again with a fresh one is a second write.
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(*message, field); ++i) fn(message, field, i);
      } else {
        fn(message, field, -1);
      }
    }
  }
}

}  // namespace

RequestGenerator::RequestGenerator(
    const World& world, const std::vector<const google::protobuf::ServiceDescriptor*>& services)
    : world_(world), templates_(Templates()) {
  for (const auto* service : services) {
    for (int i = 0; i < service->method_count(); ++i) methods_.push_back(service->method(i));
  }
  for (const SeededObject& object : world.victim.objects) {
    victim_ids_.insert(absl::AsciiStrToLower(object.id));
  }
  victim_ids_.insert(absl::AsciiStrToLower(world.victim.id));

  const std::string some_id = world.attacker.objects.front().id;
  text_pool_ = {
      "",
      "x",
      "bob",
      "dedicated",
      "vps",
      std::string(200, 'a'),
      std::string(201, 'a'),
      std::string(2000, 'n'),
      std::string(2001, 'n'),
      std::string(10 * 1024, 'z'),
      std::string("nul\0inside", 10),
      std::string("\0", 1),
      "\xc3\xbc\xc3\xb1\xc3\xaf \xe2\x9c\x93 \xf0\x9f\x9a\x80",  // valid multi-byte UTF-8
      "'; DROP TABLE bookings; --",
      "%s%s%n%x",
      "{\"json\": [1, 2]}",
      "  ",
      "\t\r\n",
      "order-held",
      some_id,
  };
  invalid_utf8_ = {
      "\xff\xfe\xfd",           "\xc3\x28 broken sequence",
      "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 beyond U+10FFFF",
      "\xc0\xaf overlong",
  };
  malformed_ids_ = {
      "",
      "not-a-uuid",
      absl::AsciiStrToUpper(some_id),
      absl::StrCat("{", some_id, "}"),
      absl::StrCat(some_id, "0"),
      absl::StrCat(" ", some_id),
      absl::StrReplaceAll(some_id, {{"-", ""}}),
      "00000000-0000-0000-0000-000000000000",
      "ffffffff-ffff-ffff-ffff-ffffffffffff",
      "zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz",
      std::string(10 * 1024, '7'),
      std::string("00000000-0000-4000-8000-00000000000\0", 36),
      "\xff\xfe\xfd\xfc",
      "' OR '1'='1",
      "1",
  };
  // Rack edges, and the integers where unit arithmetic overflows (anchor + height - 1 for
  // heights 1..20, from either end).
  for (int edge : world.rack_edges) rack_edges_.push_back(edge);
  for (int64_t v : {int64_t{kInt32Max}, int64_t{kInt32Max} - 1, int64_t{kInt32Max} - 2,
                    int64_t{kInt32Max} - 19, int64_t{kInt32Min}, int64_t{kInt32Min} + 1,
                    int64_t{kInt32Min} + 19, int64_t{1} << 30, -(int64_t{1} << 30)}) {
    overflow_units_.push_back(v);
  }
  int_pool_ = {0,
               1,
               -1,
               2,
               10,
               50,
               100,
               500,
               501,
               1000,
               3600,
               86400,
               7776000,
               7776001,
               4 * 3600,
               kInt32Max,
               kInt32Max - 1,
               kInt32Min,
               kInt32Min + 1,
               1 << 16,
               -(1 << 16)};
}

std::string RequestGenerator::RandomUuid(Rng& rng) {
  const uint64_t hi = rng();
  const uint64_t lo = rng();
  char buffer[37];
  std::snprintf(buffer, sizeof(buffer), "%08x-%04x-4%03x-%04x-%012llx",
                static_cast<unsigned>(hi >> 32), static_cast<unsigned>((hi >> 16) & 0xffff),
                static_cast<unsigned>(hi & 0x0fff),
                static_cast<unsigned>(((lo >> 48) & 0x3fff) | 0x8000),
                static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return buffer;
}

std::vector<std::string> RequestGenerator::MethodsWithoutTemplates() const {
  std::vector<std::string> out;
  for (const MethodDescriptor* method : methods_) {
    if (templates_.count(method->full_name()) == 0) out.push_back(method->full_name());
  }
  return out;
}

GeneratedCall RequestGenerator::Next(Rng& rng) const {
  GeneratedCall call;
  call.method = Pick(methods_, rng);
  call.caller = PickCaller(*call.method, rng);
  const double kind = std::uniform_real_distribution<double>(0, 1)(rng);
  if (kind < 0.15) {
    call.request.reset(google::protobuf::MessageFactory::generated_factory()
                           ->GetPrototype(call.method->input_type())
                           ->New());
    Randomize(call.request.get(), rng, 0);
    call.origin = "random";
  } else {
    call.request = FromTemplate(*call.method, rng);
    call.origin = "template";
    if (kind < 0.9) {
      std::string changed = Mutate(call.request.get(), rng);
      if (Chance(rng, 0.3)) absl::StrAppend(&changed, ",", Mutate(call.request.get(), rng));
      call.origin = absl::StrCat("mutated(", changed, ")");
    }
  }
  return call;
}

Caller RequestGenerator::PickCaller(const MethodDescriptor& method, Rng& rng) const {
  // Which roles may call this RPC, from the gate's own table; an RPC missing there is denied
  // by the gate, so any role will do.
  const std::string full_name =
      absl::StrCat("/", method.service()->full_name(), "/", method.name());
  std::vector<Role> allowed, denied;
  const Rpc* rpc = nullptr;
  for (const RpcInfo& info : kRpcTable) {
    if (full_name == info.full_name) rpc = &info.rpc;
  }
  for (Role role : {Role::kCommerce, Role::kDcOperator, Role::kCustomer, Role::kAdmin}) {
    (rpc != nullptr && RoleMayCall(role, *rpc) ? allowed : denied).push_back(role);
  }
  if (allowed.empty()) allowed = denied;
  auto with = [](const SeededOrg& org, Role role) {
    return Caller{true, absl::StrCat("Bearer ", org.tokens.at(role)),
                  absl::StrCat(org.name, "/", RoleName(role))};
  };
  const double p = std::uniform_real_distribution<double>(0, 1)(rng);
  if (p < 0.80) return with(world_.attacker, Pick(allowed, rng));
  if (p < 0.85 && !denied.empty()) return with(world_.attacker, Pick(denied, rng));
  // The victim's own tokens only with roles the gate must refuse: an admitted call of V would
  // change V's rows legitimately.
  if (p < 0.88 && !denied.empty()) return with(world_.victim, Pick(denied, rng));
  if (p < 0.91) {
    return with(world_.third, Pick(std::vector<Role>{Role::kCommerce, Role::kDcOperator,
                                                     Role::kCustomer, Role::kAdmin},
                                   rng));
  }
  if (p < 0.94) return with(world_.dormant, Pick(allowed, rng));
  if (p < 0.96)
    return Caller{true, absl::StrCat("Bearer ", world_.revoked_token),
                  absl::StrCat(world_.attacker.name, "/revoked")};
  const std::string token = world_.attacker.tokens.at(Pick(allowed, rng));
  const std::vector<Caller> bogus = {
      {false, "", "bogus/no-header"},
      {true, "", "bogus/empty"},
      {true, "Bearer ", "bogus/bearer-nothing"},
      {true, "Bearer dcl_00000000000000000000000000000000", "bogus/unknown"},
      {true, absl::StrCat("Basic ", token), "bogus/basic-scheme"},
      {true, token, "bogus/no-scheme"},
      {true, absl::StrCat("Bearer ", token, "x"), "bogus/one-char-more"},
      // Below gRPC's 8 KB limit on all metadata, which the transport enforces itself.
      {true, absl::StrCat("Bearer ", std::string(4 * 1024, 'k')), "bogus/4KB"},
      {true, absl::StrCat("Bearer  ", token, " "), "bogus/extra-spaces"},
      {true, absl::StrCat("bearer ", token), "bogus/lower-case-scheme"},
  };
  return Pick(bogus, rng);
}

std::unique_ptr<Message> RequestGenerator::FromTemplate(const MethodDescriptor& method,
                                                        Rng& rng) const {
  std::unique_ptr<Message> request(google::protobuf::MessageFactory::generated_factory()
                                       ->GetPrototype(method.input_type())
                                       ->New());
  auto it = templates_.find(method.full_name());
  if (it == templates_.end()) return request;  // a new RPC: mutations of an empty request
  const std::string text = Expand(Pick(it->second, rng), rng);
  if (!google::protobuf::TextFormat::ParseFromString(text, request.get())) {
    throw std::runtime_error(
        absl::StrCat("template of ", method.full_name(), " does not parse: ", text));
  }
  return request;
}

std::string RequestGenerator::Expand(const std::string& text, Rng& rng) const {
  std::string out;
  int64_t last_unit = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t open = text.find('{', pos);
    // A '{' followed by a space or newline is text-format syntax, not a placeholder.
    if (open == std::string::npos) {
      out += text.substr(pos);
      break;
    }
    const size_t close = text.find('}', open);
    const std::string inner = text.substr(open + 1, close - open - 1);
    if (close == std::string::npos || inner.empty() || inner[0] == ' ' || inner[0] == '\n' ||
        inner.find(' ') != std::string::npos) {
      out += text.substr(pos, open + 1 - pos);
      pos = open + 1;
      continue;
    }
    out += text.substr(pos, open - pos);
    pos = close + 1;
    const std::vector<std::string> parts = absl::StrSplit(inner, absl::MaxSplits(':', 1));
    const std::string& name = parts[0];
    const std::string arg = parts.size() > 1 ? parts[1] : "";
    if (name == "side") {
      out += Chance(rng, 0.6) ? "SIDE_FRONT" : "SIDE_REAR";
    } else if (name == "unit") {
      last_unit = Uniform(rng, 0, 101);
      absl::StrAppend(&out, last_unit);
    } else if (name == "unit+") {
      absl::StrAppend(&out, last_unit + Uniform(rng, 0, 3));
    } else if (name == "bool") {
      out += Chance(rng, 0.5) ? "true" : "false";
    } else if (name == "int") {
      const std::vector<std::string> bounds = absl::StrSplit(arg, "..");
      int64_t low = 0, high = 0;
      if (bounds.size() != 2 || !absl::SimpleAtoi(bounds[0], &low) ||
          !absl::SimpleAtoi(bounds[1], &high)) {
        throw std::runtime_error("bad placeholder {" + inner + "}");
      }
      absl::StrAppend(&out, Uniform(rng, low, high));
    } else if (name == "key") {
      out += Chance(rng, 0.4) ? Pick(world_.seeded_keys, rng)
                              : absl::StrCat("fuzz-", Uniform(rng, 0, 40));
    } else if (name == "enum") {
      const EnumDescriptor* type =
          google::protobuf::DescriptorPool::generated_pool()->FindEnumTypeByName(arg);
      if (type == nullptr) throw std::runtime_error("unknown enum in {" + inner + "}");
      out += type->value(Uniform(rng, 0, type->value_count() - 1))->name();
    } else {
      const SeededObject* object = PickObject(world_.attacker, name, arg, rng);
      if (object == nullptr) throw std::runtime_error("no seeded object for {" + inner + "}");
      out += object->id;
    }
  }
  return out;
}

void RequestGenerator::Randomize(Message* message, Rng& rng, int depth) const {
  const Descriptor* type = message->GetDescriptor();
  for (int i = 0; i < type->oneof_decl_count(); ++i) {
    const auto* oneof = type->oneof_decl(i);
    if (oneof->is_synthetic()) continue;  // proto3 optional: handled as a plain field below
    const int choice = static_cast<int>(Uniform(rng, -1, oneof->field_count() - 1));
    if (choice >= 0) SetRandomValue(message, oneof->field(choice), rng, depth);
  }
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* field = type->field(i);
    if (field->real_containing_oneof() != nullptr) continue;
    if (Chance(rng, 0.65)) SetRandomValue(message, field, rng, depth);
  }
}

std::string RequestGenerator::Mutate(Message* message, Rng& rng) const {
  // Every field reachable through singular sub-messages, as a path from the top.
  std::vector<std::vector<const FieldDescriptor*>> paths;
  std::vector<const FieldDescriptor*> prefix;
  std::function<void(const Descriptor*, int)> collect = [&](const Descriptor* type, int depth) {
    for (int i = 0; i < type->field_count(); ++i) {
      const FieldDescriptor* field = type->field(i);
      prefix.push_back(field);
      paths.push_back(prefix);
      if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !field->is_repeated() &&
          depth < 3) {
        collect(field->message_type(), depth + 1);
      }
      prefix.pop_back();
    }
  };
  collect(message->GetDescriptor(), 0);
  if (paths.empty()) return "nothing";
  // The "interesting values" operator of mutation fuzzers: one singular integer field pushed to
  // an extreme of its type, where arithmetic on it overflows.
  std::vector<const std::vector<const FieldDescriptor*>*> integer_paths;
  for (const auto& candidate : paths) {
    const FieldDescriptor* leaf = candidate.back();
    if (!leaf->is_repeated() && (leaf->cpp_type() == FieldDescriptor::CPPTYPE_INT32 ||
                                 leaf->cpp_type() == FieldDescriptor::CPPTYPE_INT64)) {
      integer_paths.push_back(&candidate);
    }
  }
  const bool extreme = !integer_paths.empty() && Chance(rng, 0.15);
  const std::vector<const FieldDescriptor*>& path =
      extreme ? *Pick(integer_paths, rng) : Pick(paths, rng);
  Message* target = message;
  std::string name;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    target = target->GetReflection()->MutableMessage(target, path[i]);
    absl::StrAppend(&name, path[i]->name(), ".");
  }
  const FieldDescriptor* field = path.back();
  absl::StrAppend(&name, field->name());
  if (extreme) {
    const Reflection* reflection = target->GetReflection();
    const int pick = static_cast<int>(Uniform(rng, 0, 3));
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_INT32) {
      const int32_t values[] = {kInt32Max, kInt32Min, kInt32Max - 1, kInt32Min + 1};
      reflection->SetInt32(target, field, values[pick]);
    } else {
      const int64_t values[] = {kInt64Max, kInt64Min, kInt64Max - 1, kInt64Min + 1};
      reflection->SetInt64(target, field, values[pick]);
    }
    return absl::StrCat(name, "=extreme");
  }
  if (Chance(rng, 0.1)) {
    target->GetReflection()->ClearField(target, field);
    return absl::StrCat(name, "=cleared");
  }
  SetRandomValue(target, field, rng, static_cast<int>(path.size()));
  return name;
}

void RequestGenerator::SetRandomValue(Message* message, const FieldDescriptor* field, Rng& rng,
                                      int depth) const {
  const Reflection* reflection = message->GetReflection();
  if (field->is_map()) {
    reflection->ClearField(message, field);
    const int entries = static_cast<int>(Uniform(rng, 0, 2));
    for (int i = 0; i < entries; ++i) {
      Randomize(reflection->AddMessage(message, field), rng, depth + 1);
    }
    return;
  }
  if (field->is_repeated()) {
    reflection->ClearField(message, field);
    const int count = static_cast<int>(Uniform(rng, 0, 3));
    for (int i = 0; i < count; ++i) {
      switch (field->cpp_type()) {
        case FieldDescriptor::CPPTYPE_MESSAGE:
          if (depth < 4) Randomize(reflection->AddMessage(message, field), rng, depth + 1);
          break;
        case FieldDescriptor::CPPTYPE_STRING:
          reflection->AddString(message, field, StringValue(field, rng));
          break;
        case FieldDescriptor::CPPTYPE_ENUM:
          reflection->AddEnumValue(message, field, EnumValue(field->enum_type(), rng));
          break;
        case FieldDescriptor::CPPTYPE_BOOL:
          reflection->AddBool(message, field, Chance(rng, 0.5));
          break;
        case FieldDescriptor::CPPTYPE_INT32:
          reflection->AddInt32(message, field, static_cast<int32_t>(IntValue(field, rng)));
          break;
        case FieldDescriptor::CPPTYPE_INT64:
          reflection->AddInt64(message, field, IntValue(field, rng));
          break;
        case FieldDescriptor::CPPTYPE_UINT32:
          reflection->AddUInt32(message, field, static_cast<uint32_t>(IntValue(field, rng)));
          break;
        case FieldDescriptor::CPPTYPE_UINT64:
          reflection->AddUInt64(message, field, static_cast<uint64_t>(IntValue(field, rng)));
          break;
        case FieldDescriptor::CPPTYPE_DOUBLE:
          reflection->AddDouble(message, field, static_cast<double>(IntValue(field, rng)));
          break;
        case FieldDescriptor::CPPTYPE_FLOAT:
          reflection->AddFloat(message, field, static_cast<float>(IntValue(field, rng)));
          break;
      }
    }
    return;
  }
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_MESSAGE: {
      Message* sub = reflection->MutableMessage(message, field);
      sub->Clear();
      if (depth < 4) Randomize(sub, rng, depth + 1);
      break;
    }
    case FieldDescriptor::CPPTYPE_STRING:
      reflection->SetString(message, field, StringValue(field, rng));
      break;
    case FieldDescriptor::CPPTYPE_ENUM:
      reflection->SetEnumValue(message, field, EnumValue(field->enum_type(), rng));
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      reflection->SetBool(message, field, Chance(rng, 0.5));
      break;
    case FieldDescriptor::CPPTYPE_INT32:
      reflection->SetInt32(message, field, static_cast<int32_t>(IntValue(field, rng)));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      reflection->SetInt64(message, field, IntValue(field, rng));
      break;
    case FieldDescriptor::CPPTYPE_UINT32:
      reflection->SetUInt32(message, field, static_cast<uint32_t>(IntValue(field, rng)));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      reflection->SetUInt64(message, field, static_cast<uint64_t>(IntValue(field, rng)));
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      const std::vector<double> doubles = {0.0,
                                           -0.0,
                                           1e308,
                                           -1e308,
                                           std::numeric_limits<double>::infinity(),
                                           std::numeric_limits<double>::quiet_NaN()};
      reflection->SetDouble(message, field, Pick(doubles, rng));
      break;
    }
    case FieldDescriptor::CPPTYPE_FLOAT:
      reflection->SetFloat(message, field, static_cast<float>(IntValue(field, rng)));
      break;
  }
}

std::string RequestGenerator::IdValue(const std::string& field_name, Rng& rng) const {
  const std::string kind = IdKind(field_name);
  const double p = std::uniform_real_distribution<double>(0, 1)(rng);
  auto object_of = [&](const SeededOrg& org, const std::string& wanted_kind) {
    const SeededObject* object = PickObject(org, wanted_kind, "", rng);
    return object != nullptr ? object->id : RandomUuid(rng);
  };
  if (p < 0.40) return object_of(world_.attacker, kind);
  if (p < 0.65) return object_of(world_.victim, kind);
  if (p < 0.70) return object_of(world_.third, kind);
  if (p < 0.80) return RandomUuid(rng);
  if (p < 0.85) {
    // Kind confusion: an object of any kind where a rack (say) is expected.
    const SeededOrg& org = Chance(rng, 0.5) ? world_.attacker : world_.victim;
    return Pick(org.objects, rng).id;
  }
  return Pick(malformed_ids_, rng);
}

std::string RequestGenerator::StringValue(const FieldDescriptor* field, Rng& rng) const {
  if (IsIdField(field)) return IdValue(field->name(), rng);
  const std::string& name = field->name();
  const double p = std::uniform_real_distribution<double>(0, 1)(rng);
  if (name == "idempotency_key" && p < 0.5) {
    return Chance(rng, 0.5) ? Pick(world_.seeded_keys, rng)
                            : absl::StrCat("fuzz-", Uniform(rng, 0, 40));
  }
  if (name == "page_token" && p < 0.6) {
    const std::vector<std::string> tokens = {
        absl::StrCat(Uniform(rng, 0, kInt64Max), "_", RandomUuid(rng)),
        absl::StrCat(Uniform(rng, 0, kInt64Max), ".", RandomUuid(rng)),
        absl::StrCat("-1.", RandomUuid(rng)),
        absl::StrCat("99999999999999999999_", RandomUuid(rng)),
        absl::StrCat("9223372036854775807.", RandomUuid(rng)),
        absl::StrCat("-9223372036854775808_", RandomUuid(rng)),
        "_",
        ".",
        "1_2_3",
        "1.not-a-uuid"};
    return Pick(tokens, rng);
  }
  // Not UTF-8 at all: the runtime refuses to parse the request before any service code runs,
  // so these are kept rare enough for the other values to reach the logic.
  if (p < 0.04) {
    std::string bytes(static_cast<size_t>(Uniform(rng, 0, 64)), '\0');
    for (char& c : bytes) c = static_cast<char>(Uniform(rng, 0, 255));
    return bytes;
  }
  if (p < 0.10) return Pick(invalid_utf8_, rng);
  return Pick(text_pool_, rng);
}

int64_t RequestGenerator::IntValue(const FieldDescriptor* field, Rng& rng) const {
  const double p = std::uniform_real_distribution<double>(0, 1)(rng);
  const bool is64 = field->cpp_type() == FieldDescriptor::CPPTYPE_INT64 ||
                    field->cpp_type() == FieldDescriptor::CPPTYPE_UINT64;
  if (is64 && p < 0.15) {
    const std::vector<int64_t> wide = {kInt64Max,
                                       kInt64Min,
                                       kInt64Max - 1,
                                       kInt64Min + 1,
                                       int64_t{kInt32Max} + 1,
                                       int64_t{kInt32Min} - 1};
    return Pick(wide, rng);
  }
  if (absl::StrContains(field->name(), "unit")) {
    // Overflow-prone values often: a unit is interesting at the extremes and at the edges.
    if (p < 0.35) return Pick(overflow_units_, rng);
    if (p < 0.80) return Pick(rack_edges_, rng);
    return Uniform(rng, -2, 102);
  }
  if (p < 0.7) return Pick(int_pool_, rng);
  if (p < 0.9) return Uniform(rng, -1000, 100000);
  return static_cast<int32_t>(rng());
}

int RequestGenerator::EnumValue(const EnumDescriptor* type, Rng& rng) const {
  const double p = std::uniform_real_distribution<double>(0, 1)(rng);
  if (p < 0.6)
    return type->value(static_cast<int>(Uniform(rng, 0, type->value_count() - 1)))->number();
  if (p < 0.75) return 0;
  int max = 0;
  for (int i = 0; i < type->value_count(); ++i) max = std::max(max, type->value(i)->number());
  // Open enums: numbers the enum does not define.
  const std::vector<int> unknown = {max + 1, 99, -1, kInt32Max, kInt32Min};
  return Pick(unknown, rng);
}

std::set<std::string> RequestGenerator::VictimIdsIn(const Message& request) const {
  std::unique_ptr<Message> copy(request.New());
  copy->CopyFrom(request);
  std::set<std::string> found;
  ForEachIdField(copy.get(), [&](Message* message, const FieldDescriptor* field, int index) {
    const Reflection* reflection = message->GetReflection();
    const std::string value =
        absl::AsciiStrToLower(index < 0 ? reflection->GetString(*message, field)
                                        : reflection->GetRepeatedString(*message, field, index));
    if (victim_ids_.count(value) > 0) found.insert(value);
  });
  return found;
}

void RequestGenerator::ReplaceIds(Message* request,
                                  const std::map<std::string, std::string>& replacements) {
  ForEachIdField(request, [&](Message* message, const FieldDescriptor* field, int index) {
    const Reflection* reflection = message->GetReflection();
    const std::string value = index < 0 ? reflection->GetString(*message, field)
                                        : reflection->GetRepeatedString(*message, field, index);
    auto it = replacements.find(absl::AsciiStrToLower(value));
    if (it == replacements.end()) return;
    if (index < 0) {
      reflection->SetString(message, field, it->second);
    } else {
      reflection->SetRepeatedString(message, field, index, it->second);
    }
  });
}

}  // namespace dcl::fuzz
