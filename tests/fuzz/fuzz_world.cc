#include "tests/fuzz/fuzz_world.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/common/auth.h"
#include "tests/support/fixtures.h"

namespace dcl::fuzz {

bool SeededObject::HasTag(const std::string& tag) const {
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

std::vector<const SeededObject*> SeededOrg::Find(const std::string& kind,
                                                 const std::string& tags) const {
  std::vector<std::string> wanted = absl::StrSplit(tags, ',', absl::SkipEmpty());
  std::vector<const SeededObject*> out;
  for (const SeededObject& object : objects) {
    if (object.kind != kind) continue;
    bool all = true;
    for (const std::string& tag : wanted) all = all && object.HasTag(tag);
    if (all) out.push_back(&object);
  }
  return out;
}

namespace {

struct RackShape {
  std::string name;
  int first_unit;
  int unit_count;
  bool descending;
  bool has_rear;
  bool second_site;
};

// Every geometry the schema allows is represented: ascending and descending, first unit 0, 1
// and 2, open frames, 1, 20, 42, 48 and 100 units, and a rack at a second site.
const std::vector<RackShape>& RackShapes() {
  static const std::vector<RackShape> shapes = {
      {"asc42", 1, 42, false, true, false},        {"desc42", 1, 42, true, true, false},
      {"asc0-48", 0, 48, false, true, false},      {"desc2-open20", 2, 20, true, false, false},
      {"asc2-open42", 2, 42, false, false, false}, {"one-unit", 1, 1, false, true, false},
      {"desc0-100", 0, 100, true, true, false},    {"other-site", 1, 42, false, true, true},
  };
  return shapes;
}

// The units a booking of `height` anchored at `anchor` covers, lowest first.
std::pair<int, int> Span(const RackShape& rack, int anchor, int height) {
  return rack.descending ? std::make_pair(anchor - height + 1, anchor)
                         : std::make_pair(anchor, anchor + height - 1);
}

class OrgSeeder {
 public:
  OrgSeeder(const testing::TestDatabase& db, SeededOrg& org) : db_(db), org_(org) {}

  std::string Add(const std::string& kind, const std::string& id,
                  std::vector<std::string> tags = {}) {
    org_.objects.push_back({id, kind, std::move(tags)});
    return id;
  }

  std::string Site(const std::string& name) {
    return Add("site", testing::CreateSite(db_, org_.id, name));
  }

  std::string Rack(const std::string& site, const RackShape& shape) {
    testing::RackSpec spec;
    spec.name = shape.name;
    spec.first_unit = shape.first_unit;
    spec.unit_count = shape.unit_count;
    spec.numbering = shape.descending ? "descending" : "ascending";
    spec.has_rear = shape.has_rear;
    spec.power_budget_watts = shape.name == "asc42" ? 8000 : 0;
    spec.weight_budget_kg = shape.name == "asc42" ? 1200 : 0;
    std::vector<std::string> tags = {shape.name, shape.descending ? "desc" : "asc",
                                     shape.has_rear ? "rear" : "open"};
    if (!shape.second_site) tags.push_back("site1");
    return Add("rack", testing::CreateRack(db_, org_.id, site, spec), tags);
  }

  std::string Device(const std::string& site, int height, const std::string& depth,
                     const std::string& state, std::vector<std::string> tags, int power = -1,
                     int weight = -1) {
    testing::DeviceSpec spec;
    spec.vendor = height == 1 ? "Dell" : "HP";
    spec.model = height == 1 ? "R650" : "DL380";
    spec.hardware_profile = depth == "half" ? "edge" : "";
    spec.height_units = height;
    spec.depth_class = depth;
    spec.process_state = state;
    spec.power_draw_watts = power;
    spec.weight_kg = weight;
    tags.push_back(absl::StrCat(height, "U"));
    tags.push_back(depth);
    tags.push_back(state);
    return Add("device", testing::CreateDevice(db_, org_.id, site, spec), tags);
  }

  // A booking header and its slot rows, exactly as the write path lays them out.
  std::string Booking(const std::string& site, const std::string& rack_id, const RackShape& rack,
                      const std::string& kind, const std::string& device_id, bool front, bool rear,
                      int low, int high, const std::string& expires, bool released,
                      std::vector<std::string> tags) {
    const std::string device = device_id.empty() ? "NULL" : absl::StrCat("'", device_id, "'");
    const std::string id = db_.Scalar(absl::StrCat(
        "INSERT INTO bookings (org_id, site_id, rack_id, kind, device_id, front, rear, "
        "first_unit, last_unit, expires_at, created_by, reason, released_at, released_by, "
        "release_reason) VALUES ('",
        org_.id, "', '", site, "', '", rack_id, "', '", kind, "', ", device, ", ",
        front ? "true" : "false", ", ", rear ? "true" : "false", ", ", low, ", ", high, ", ",
        expires, ", 'seed', 'fixture', ",
        released ? "now(), 'seed', 'fixture'" : "NULL, NULL, NULL", ") RETURNING id"));
    for (const char* side : {"front", "rear"}) {
      if ((std::string(side) == "front" && !front) || (std::string(side) == "rear" && !rear)) {
        continue;
      }
      db_.Exec(
          absl::StrCat("INSERT INTO booking_slots (booking_id, rack_id, side, unit, "
                       "released_at) SELECT '",
                       id, "', '", rack_id, "', '", side, "', u, ", released ? "now()" : "NULL",
                       " FROM generate_series(", low, ", ", high, ") u"));
    }
    tags.push_back(kind);
    tags.push_back(released ? "released" : "active");
    (void)rack;
    return Add("booking", id, tags);
  }

  std::string Service(const std::string& kind, const std::string& customer,
                      std::vector<std::string> tags) {
    tags.push_back(kind);
    return Add("service",
               db_.Scalar(absl::StrCat(
                   "INSERT INTO services (org_id, kind, customer, created_by) VALUES ('", org_.id,
                   "', '", kind, "', '", customer, "', 'seed') RETURNING id")),
               tags);
  }

  std::string Reservation(const std::string& key, const std::string& device_id,
                          const std::string& site, const std::string& state,
                          const std::string& service_id) {
    std::string end = "NULL, NULL, NULL";
    std::string created = "now()";
    std::string expires = "now() + interval '1 hour'";
    if (state == "converted") end = "now(), 'converted', 'seed'";
    if (state == "cancelled") end = "now(), 'cancelled', 'seed'";
    if (state == "expired") {
      end = "now(), 'expired_by_sweeper', 'sweeper'";
      created = "now() - interval '2 hours'";
      expires = "now() - interval '1 hour'";
    }
    const std::string service = service_id.empty() ? "NULL" : absl::StrCat("'", service_id, "'");
    return Add("reservation",
               db_.Scalar(absl::StrCat(
                   "INSERT INTO reservations (org_id, idempotency_key, device_id, state, "
                   "criteria_site_id, selection_reason, created_at, created_by, expires_at, "
                   "ended_at, end_reason, ended_by, service_id) VALUES ('",
                   org_.id, "', '", key, "', '", device_id, "', '", state, "', '", site,
                   "', '{\"seed\": true}', ", created, ", 'seed', ", expires, ", ", end, ", ",
                   service, ") RETURNING id")),
               {state});
  }

  std::string Binding(const std::string& service_id, const std::string& device_id,
                      const std::string& reservation_id, bool ended) {
    const std::string reservation =
        reservation_id.empty() ? "NULL" : absl::StrCat("'", reservation_id, "'");
    return Add("binding",
               db_.Scalar(absl::StrCat(
                   "INSERT INTO service_bindings (org_id, service_id, device_id, reservation_id, "
                   "started_by, ended_at, ended_by) VALUES ('",
                   org_.id, "', '", service_id, "', '", device_id, "', ", reservation, ", 'seed', ",
                   ended ? "now(), 'seed'" : "NULL, NULL", ") RETURNING id")),
               {ended ? "ended" : "active"});
  }

  // A move row with its job, events and location history; `states` is the path it took.
  std::string Move(const std::string& device_id, const std::string& site,
                   const std::string& source_rack, const std::string& source_booking,
                   const std::string& destination_rack, const std::string& side, int unit,
                   const std::string& hold_booking, const std::vector<std::string>& states) {
    const std::string state = states.back();
    const bool terminal = state == "completed" || state == "cancelled" || state == "failed";
    const std::string job = db_.Scalar(absl::StrCat(
        "INSERT INTO jobs (org_id, kind, status, finished_at) VALUES ('", org_.id, "', 'move', ",
        terminal ? "'cancelled', now()" : "'running', NULL", ") RETURNING id"));
    const std::string id = db_.Scalar(absl::StrCat(
        "INSERT INTO moves (org_id, device_id, source_site_id, source_rack_id, source_booking_id, "
        "destination_site_id, destination_rack_id, destination_side, destination_unit, "
        "move_hold_booking_id, state, preflight, job_id, note, created_by, updated_by, ended_at) "
        "VALUES ('",
        org_.id, "', '", device_id, "', '", site, "', '", source_rack, "', '", source_booking,
        "', '", site, "', '", destination_rack, "', '", side, "', ", unit, ", '", hold_booking,
        "', '", state, "', '{\"process_state\": \"normal\"}', '", job,
        "', 'seeded', 'seed', 'seed', ", terminal ? "now()" : "NULL", ") RETURNING id"));
    for (size_t i = 0; i < states.size(); ++i) {
      db_.Exec(absl::StrCat(
          "INSERT INTO move_events (move_id, org_id, sequence, from_state, to_state, actor) "
          "VALUES ('",
          id, "', '", org_.id, "', ", i + 1, ", ",
          i == 0 ? "NULL" : absl::StrCat("'", states[i - 1], "'"), ", '", states[i], "', 'seed')"));
      db_.Exec(absl::StrCat(
          "INSERT INTO location_history (org_id, device_id, site_id, rack_id, event, move_id, "
          "move_state, booking_id, actor) VALUES ('",
          org_.id, "', '", device_id, "', '", site, "', '", source_rack, "', 'move_", states[i],
          "', '", id, "', '", states[i], "', '", source_booking, "', 'seed')"));
    }
    return Add("move", id, {terminal ? "terminal" : "open", state});
  }

  void Tokens() {
    for (Role role : {Role::kCommerce, Role::kDcOperator, Role::kCustomer, Role::kAdmin}) {
      org_.tokens[role] = testing::CreateTokenFor(db_, org_.id, role, "bob");
    }
  }

 private:
  const testing::TestDatabase& db_;
  SeededOrg& org_;
};

// Everything an organization can own, in every state the services distinguish.
void SeedFullOrg(const testing::TestDatabase& db, SeededOrg& org) {
  OrgSeeder s(db, org);
  const std::string site1 = s.Site("FRA1");
  const std::string site2 = s.Site("AMS1");
  std::map<std::string, std::string> racks;
  std::map<std::string, RackShape> shapes;
  for (const RackShape& shape : RackShapes()) {
    racks[shape.name] = s.Rack(shape.second_site ? site2 : site1, shape);
    shapes[shape.name] = shape;
  }
  auto place = [&](const std::string& device, const std::string& rack, int anchor, int height,
                   bool half, const std::string& side) {
    const auto [low, high] = Span(shapes[rack], anchor, height);
    const bool front = !half || side == "front";
    const bool rear = shapes[rack].has_rear && (!half || side == "rear");
    const std::string site = shapes[rack].second_site ? site2 : site1;
    return s.Booking(site, racks[rack], shapes[rack], "placement", device, front, rear, low, high,
                     "NULL", false, {"placement"});
  };

  // Unplaced devices of several heights and depths (also the stock Reserve picks from).
  s.Device(site1, 1, "full", "normal", {"unplaced"}, 350, 18);
  s.Device(site1, 2, "full", "normal", {"unplaced"});
  s.Device(site1, 2, "half", "normal", {"unplaced"}, 200, -1);
  s.Device(site1, 4, "unknown", "normal", {"unplaced"});
  s.Device(site1, 20, "full", "normal", {"unplaced"});
  s.Device(site1, 1, "half", "staging", {"unplaced"});
  s.Device(site1, 1, "full", "in_transit", {"unplaced"});
  const std::string held_device = s.Device(site1, 1, "full", "normal", {"unplaced", "held"});
  const std::string cancelled_device = s.Device(site1, 1, "full", "normal", {"unplaced"});
  const std::string expired_device = s.Device(site1, 1, "full", "normal", {"unplaced"});
  const std::string ended_device = s.Device(site1, 2, "full", "normal", {"unplaced"});
  s.Device(site2, 1, "full", "normal", {"unplaced", "site2"});

  // Placed devices: a bound one, a half-depth one on the rear of a descending rack, one at the
  // second site, and the devices with moves.
  const std::string bound = s.Device(site1, 1, "full", "normal", {"placed", "bound"}, 400, 25);
  place(bound, "asc42", 5, 1, false, "front");
  const std::string half = s.Device(site1, 2, "half", "normal", {"placed"});
  place(half, "desc42", 10, 2, true, "rear");
  const std::string tall = s.Device(site1, 4, "full", "normal", {"placed"});
  place(tall, "desc0-100", 80, 4, false, "front");
  const std::string open_frame = s.Device(site1, 2, "full", "normal", {"placed"});
  place(open_frame, "asc2-open42", 2, 2, false, "front");
  const std::string far = s.Device(site2, 2, "full", "normal", {"placed", "site2"});
  place(far, "other-site", 1, 2, false, "front");

  // A blocking and two rack reservations, one of them lapsed.
  s.Booking(site1, racks["asc42"], shapes["asc42"], "blocking", "", true, false, 40, 41, "NULL",
            false, {});
  s.Booking(site1, racks["asc42"], shapes["asc42"], "reservation", "", true, true, 20, 22,
            "now() + interval '4 hours'", false, {});
  s.Booking(site1, racks["desc42"], shapes["desc42"], "reservation", "", true, false, 30, 31,
            "now() - interval '1 hour'", false, {"lapsed"});

  // Moves: in progress (device 'moving', a move hold at the destination), planned, cancelled.
  // Devices booked into asc42, whose power and weight budgets the database enforces (0039),
  // carry both figures.
  const std::string moving = s.Device(site1, 1, "full", "moving", {"placed"}, 350, 20);
  const std::string moving_from = place(moving, "asc0-48", 3, 1, false, "front");
  const std::string moving_hold = s.Booking(site1, racks["asc42"], shapes["asc42"], "move_hold",
                                            moving, true, true, 30, 30, "NULL", false, {});
  s.Move(moving, site1, racks["asc0-48"], moving_from, racks["asc42"], "front", 30, moving_hold,
         {"planned", "approved", "in_progress"});
  const std::string planned = s.Device(site1, 2, "full", "normal", {"placed"});
  const std::string planned_from = place(planned, "desc0-100", 50, 2, false, "front");
  const std::string planned_hold =
      s.Booking(site1, racks["desc0-100"], shapes["desc0-100"], "move_hold", planned, true, true,
                59, 60, "NULL", false, {});
  s.Move(planned, site1, racks["desc0-100"], planned_from, racks["desc0-100"], "front", 60,
         planned_hold, {"planned"});
  const std::string stayed = s.Device(site1, 1, "full", "normal", {"placed"}, 300, 20);
  const std::string stayed_at = place(stayed, "asc42", 12, 1, false, "front");
  const std::string stayed_hold = s.Booking(site1, racks["asc42"], shapes["asc42"], "move_hold",
                                            stayed, true, true, 14, 14, "NULL", true, {});
  s.Move(stayed, site1, racks["asc42"], stayed_at, racks["asc42"], "front", 14, stayed_hold,
         {"planned", "cancelled"});

  // Services, reservations in every state, bindings active and ended.
  const std::string bob = s.Service("dedicated", "bob", {"bound"});
  s.Service("dedicated", "carol", {"unbound"});
  s.Service("vps", "dave", {"unbound"});
  const std::string erin = s.Service("dedicated", "erin", {"unbound"});
  s.Reservation("order-held", held_device, site1, "held", "");
  const std::string converted = s.Reservation("order-converted", bound, site1, "converted", bob);
  s.Reservation("order-cancelled", cancelled_device, site1, "cancelled", "");
  s.Reservation("order-expired", expired_device, site1, "expired", "");
  s.Binding(bob, bound, converted, false);
  s.Binding(erin, ended_device, "", true);
  s.Tokens();
}

// An organization with a little of everything, for callers that are neither A nor V.
void SeedSmallOrg(const testing::TestDatabase& db, SeededOrg& org) {
  OrgSeeder s(db, org);
  const std::string site = s.Site("FRA1");
  s.Rack(site, RackShapes()[0]);
  s.Device(site, 1, "full", "normal", {"unplaced"});
  s.Service("dedicated", "bob", {"unbound"});
  s.Tokens();
}

}  // namespace

World SeedWorld(const testing::TestDatabase& db) {
  World world;
  world.attacker.name = "attacker";
  world.victim.name = "victim";
  world.third.name = "third";
  world.dormant.name = "dormant";
  world.attacker.id = testing::CreateOrg(db, world.attacker.name);
  world.victim.id = testing::CreateOrg(db, world.victim.name);
  world.third.id = testing::CreateOrg(db, world.third.name);
  world.dormant.id = testing::CreateOrg(db, world.dormant.name, /*module_enabled=*/false);
  SeedFullOrg(db, world.attacker);
  SeedFullOrg(db, world.victim);
  SeedSmallOrg(db, world.third);
  SeedSmallOrg(db, world.dormant);

  {
    auto pool = db.MakePool(1);
    auto issued = CreateToken(*pool, world.attacker.id, Role::kCommerce, "", "revoked");
    if (!issued.ok() || !RevokeToken(*pool, issued->id).ok()) {
      throw std::runtime_error("could not create and revoke a token");
    }
    world.revoked_token = issued->token;
  }
  world.seeded_keys = {"order-held", "order-converted", "order-cancelled", "order-expired"};

  std::set<int> edges;
  for (const RackShape& shape : RackShapes()) {
    const int first = shape.first_unit;
    const int last = shape.first_unit + shape.unit_count - 1;
    for (int unit :
         {first - 1, first, first + 1, last - 1, last, last + 1, first + shape.unit_count}) {
      edges.insert(unit);
    }
  }
  world.rack_edges.assign(edges.begin(), edges.end());
  return world;
}

}  // namespace dcl::fuzz
