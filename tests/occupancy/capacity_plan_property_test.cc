// The planners read what the database decides (schema 0038, 0039): over 1,000 generated racks
// (fixed seeds, so a failure replays) with power, weight and cooling budgets or none, device
// bookings with and without figures, reservations with and without figures, and racks that stood
// over their budget or with devices of unknown figures when the database began deciding them
// (adopted as the migration adopts them, then partly released), the planner's answer to "does one
// more booking with these figures fit" (RackTakes, over LoadDeliveryRacks' reading) equals whether
// the booking write path accepts that booking, written through CreateBooking in a transaction
// rolled back.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/occupancy/booking_store.h"
#include "services/occupancy/delivery_plan.h"
#include "services/occupancy/delivery_store.h"
#include "tests/support/site.h"

namespace dcl::occupancy {
namespace {

constexpr int kRacks = 1000;
constexpr int kCandidateUnit = 12;  // never booked while a rack is built

int Uniform(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}
bool Chance(std::mt19937& rng, int percent) { return Uniform(rng, 1, 100) <= percent; }

std::optional<int64_t> Figure(std::mt19937& rng, int lo, int hi, int unknown_percent) {
  if (Chance(rng, unknown_percent)) return std::nullopt;
  return Uniform(rng, lo, hi);
}

std::string Sql(std::optional<int64_t> v) { return v ? std::to_string(*v) : "NULL"; }

// How a rack came to have its budgets.
enum class Origin {
  kNone,     // no budget
  kBuilt,    // budgeted before anything was booked: every booking judged
  kAdopted,  // booked freely, then budgeted as 0039 adopted the racks that stood before it
};

struct BuiltRack {
  std::string id;
  Origin origin = Origin::kNone;
  std::optional<int64_t> power_budget;
  std::optional<int64_t> weight_budget;
  std::optional<int64_t> cooling_budget;  // only racks budgeted before anything was booked
  std::vector<std::pair<std::string, v1::BookingKind>> bookings;
};

std::string InsertDevice(pqxx::transaction_base& tx, const testing::Site& s,
                         std::optional<int64_t> power, std::optional<int64_t> weight) {
  return tx
      .exec1(absl::StrCat("INSERT INTO devices (org_id, site_id, vendor, model, height_units, "
                          "depth_class, power_draw_watts, weight_kg) VALUES ('",
                          s.org, "', '", s.site, "', 'Dell', 'R650', 1, 'half', ", Sql(power), ", ",
                          Sql(weight), ") RETURNING id::text"))[0]
      .as<std::string>();
}

BookingSpec Reservation(const std::string& rack, int unit, std::optional<int64_t> power,
                        std::optional<int64_t> weight) {
  BookingSpec spec = UnitRangeSpec(v1::BOOKING_RESERVATION, rack, v1::SIDE_FRONT, false, unit, unit,
                                   "order", 3600);
  spec.power_watts = power;
  spec.weight_kg = weight;
  return spec;
}

// One rack of 12 units: bookings on U1..U8 (a refused one is simply not there), U12 free.
BuiltRack Build(pqxx::transaction_base& tx, const testing::Site& s, int index, std::mt19937& rng) {
  BuiltRack r;
  const int origin = Uniform(rng, 0, 9);
  r.origin = origin < 2 ? Origin::kNone : origin < 7 ? Origin::kBuilt : Origin::kAdopted;
  if (r.origin != Origin::kNone) {
    if (Chance(rng, 70)) r.power_budget = Uniform(rng, 1, 6000);  // a budget is positive
    if (Chance(rng, 60)) r.weight_budget = Uniform(rng, 1, 500);
  }
  // A cooling budget is never adopted over (0038 refuses a rack whose heat is over it).
  if (r.origin == Origin::kBuilt && Chance(rng, 40)) r.cooling_budget = Uniform(rng, 1, 6000);
  r.id = tx.exec1(absl::StrCat(
      "INSERT INTO racks (org_id, site_id, name, first_unit, unit_count, "
      "numbering, has_rear) VALUES ('",
      s.org, "', '", s.site, "', 'P", index, "', 1, 12, 'ascending', true) RETURNING id::text"))[0]
             .as<std::string>();
  if (r.origin == Origin::kBuilt && (r.power_budget || r.weight_budget || r.cooling_budget)) {
    tx.exec0(absl::StrCat("UPDATE racks SET power_budget_watts = ", Sql(r.power_budget),
                          ", weight_budget_kg = ", Sql(r.weight_budget),
                          ", cooling_budget_watts = ", Sql(r.cooling_budget), " WHERE id = '", r.id,
                          "'"));
  }
  const int bookings = Uniform(rng, 0, 8);
  for (int unit = 1; unit <= bookings; ++unit) {
    const int what = Uniform(rng, 0, 9);
    BookingSpec spec;
    if (what < 5) {
      const std::string device =
          InsertDevice(tx, s, Figure(rng, 0, 2000, 15), Figure(rng, 0, 150, 15));
      spec = DeviceFootprintSpec(v1::BOOKING_PLACEMENT, r.id, device, v1::SIDE_FRONT, unit, "x");
    } else if (what < 9) {
      spec = Reservation(r.id, unit, Figure(rng, 0, 2000, 40), Figure(rng, 0, 150, 40));
    } else {
      spec = UnitRangeSpec(v1::BOOKING_BLOCKING, r.id, v1::SIDE_FRONT, false, unit, unit, "x", 0);
    }
    // Over a budget, or a device without a figure the budget needs: refused, and not there.
    absl::StatusOr<v1::Booking> booking = CreateBooking(tx, s.op, spec);
    if (booking.ok()) r.bookings.emplace_back(booking->id(), booking->kind());
  }
  return r;
}

TEST_CASE("over 1,000 generated racks the planner's fit is the database's decision") {
  testing::Site s(std::vector<testing::RackSpec>{});
  std::unique_ptr<pqxx::connection> conn = s.db.Connect();  // as the owner: fixtures too
  std::mt19937 rng(20261206);
  std::vector<BuiltRack> racks;
  for (int i = 0; i < kRacks; ++i) {
    pqxx::work tx(*conn);
    racks.push_back(Build(tx, s, i, rng));
    tx.commit();
  }
  // The racks that stood before the database decided their budgets: the budget set without the
  // rebuild (which would refuse them), then adopted exactly as migration 0039 adopts them.
  {
    pqxx::work tx(*conn);
    tx.exec0("ALTER TABLE racks DISABLE TRIGGER racks_rebuild_budgets");
    for (const BuiltRack& r : racks) {
      if (r.origin != Origin::kAdopted) continue;
      tx.exec0(absl::StrCat("UPDATE racks SET power_budget_watts = ", Sql(r.power_budget),
                            ", weight_budget_kg = ", Sql(r.weight_budget), " WHERE id = '", r.id,
                            "'"));
    }
    tx.exec0("ALTER TABLE racks ENABLE TRIGGER racks_rebuild_budgets");
    for (const BuiltRack& r : racks) {
      if (r.origin == Origin::kAdopted) {
        tx.exec(absl::StrCat("SELECT dcl_rack_budgets_adopt('", r.id, "')"));
      }
    }
    tx.commit();
  }
  // Some of their bookings released since: an allowance shrinks, an unknown count drops.
  for (const BuiltRack& r : racks) {
    if (r.origin != Origin::kAdopted) continue;
    pqxx::work tx(*conn);
    for (const auto& [id, kind] : r.bookings) {
      if (Chance(rng, 30)) REQUIRE(ReleaseBooking(tx, s.op, id, kind, "gone").ok());
    }
    tx.commit();
  }

  std::map<std::string, DeliveryRack> read;
  {
    pqxx::work tx(*conn);
    absl::StatusOr<std::vector<DeliveryRack>> loaded = LoadDeliveryRacks(tx, s.org, s.site);
    REQUIRE(loaded.ok());
    for (DeliveryRack& r : *loaded) read[r.id] = std::move(r);
  }
  REQUIRE(read.size() == racks.size());

  std::map<std::string, int> seen;  // how often each situation came up
  for (const BuiltRack& built : racks) {
    const DeliveryRack& rack = read.at(built.id);
    // One more booking: a reservation or a device, with or without figures; now and then
    // exactly what is left of a budget, or one more than that.
    const bool device = Chance(rng, 40);
    std::optional<int64_t> power = Figure(rng, 0, 3000, 25);
    std::optional<int64_t> weight = Figure(rng, 0, 300, 25);
    int64_t used_power = 0;
    for (const LoadFigure& f : rack.power) used_power += f.value.value_or(0);
    if (rack.power_budget_watts && Chance(rng, 20)) {
      const int64_t left = *rack.power_budget_watts + rack.power_allowance_watts - used_power;
      power = std::max<int64_t>(0, left + Uniform(rng, 0, 1));
    } else if (rack.cooling_budget_watts && Chance(rng, 30)) {
      const int64_t left = *rack.cooling_budget_watts + rack.cooling_allowance_watts - used_power;
      power = std::max<int64_t>(0, left + Uniform(rng, 0, 1));
    }
    const bool fits = RackTakes(rack, power, weight, device);

    pqxx::work tx(*conn);
    BookingSpec spec;
    if (device) {
      spec =
          DeviceFootprintSpec(v1::BOOKING_PLACEMENT, built.id, InsertDevice(tx, s, power, weight),
                              v1::SIDE_FRONT, kCandidateUnit, "one more");
    } else {
      spec = Reservation(built.id, kCandidateUnit, power, weight);
    }
    const absl::StatusOr<v1::Booking> written = CreateBooking(tx, s.op, spec);
    tx.abort();
    INFO("rack " << rack.name << " (" << static_cast<int>(built.origin) << "): power " << used_power
                 << " of " << Sql(rack.power_budget_watts) << " + allowance "
                 << rack.power_allowance_watts << (rack.power_load_unknown ? ", load unknown" : "")
                 << "; weight budget " << Sql(rack.weight_budget_kg) << " + allowance "
                 << rack.weight_allowance_kg << (rack.weight_load_unknown ? ", load unknown" : "")
                 << "; cooling budget " << Sql(rack.cooling_budget_watts) << "; one more "
                 << (device ? "device" : "reservation") << " of " << Sql(power) << " W, "
                 << Sql(weight) << " kg; the database: " << written.status());
    CHECK(written.ok() == fits);
    ++seen[fits ? "fits" : "refused"];
    if (rack.power_load_unknown || rack.weight_load_unknown) ++seen["load unknown"];
    if (rack.power_allowance_watts > 0 || rack.weight_allowance_kg > 0) ++seen["allowance"];
    if (rack.cooling_budget_watts) {
      const bool heat_fits = BudgetTakes(rack.cooling_budget_watts, rack.cooling_allowance_watts,
                                         false, used_power, power.value_or(0), 0);
      ++seen[heat_fits ? "cooling budget takes it" : "cooling budget refuses it"];
    }
    if (!device && (!power || !weight)) ++seen["reservation without a figure"];
    if (device && ((rack.power_budget_watts && !power) || (rack.weight_budget_kg && !weight))) {
      ++seen["device without a figure the budget needs"];
    }
  }
  for (const auto& [situation, n] : seen) WARN(situation << ": " << n);
  // Every situation the rules distinguish came up often enough to have been judged.
  for (const char* situation :
       {"fits", "refused", "load unknown", "allowance", "reservation without a figure",
        "device without a figure the budget needs", "cooling budget takes it",
        "cooling budget refuses it"}) {
    INFO(situation);
    CHECK(seen[situation] >= 20);
  }
}

}  // namespace
}  // namespace dcl::occupancy
