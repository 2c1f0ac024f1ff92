// dclctl's delivery printers and item parser, pure: what an operator types and reads.
#include "dclctl/format/delivery_format.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/match.h"

namespace dcl::admin {
namespace {

TEST_CASE("an item is a device id or a spec with its figures, nothing guessed") {
  const std::string id = "0b6a3c1e-1f4e-4c8e-9a61-2f6b1d7a9e01";
  absl::StatusOr<v1::DeliveryItem> device = ParseDeliveryItem(id);
  REQUIRE(device.ok());
  CHECK(device->device_id() == id);

  absl::StatusOr<v1::DeliveryItem> spec = ParseDeliveryItem("2U/full/800W/25kg/x4/R650");
  REQUIRE(spec.ok());
  CHECK(spec->spec().height_units() == 2);
  CHECK(spec->spec().depth_class() == v1::DEPTH_FULL);
  CHECK(spec->spec().power_draw_watts() == 800);
  CHECK(spec->spec().weight_kg() == 25);
  CHECK(spec->spec().count() == 4);
  CHECK(spec->spec().label() == "R650");

  // A figure left out is unknown, not zero.
  absl::StatusOr<v1::DeliveryItem> bare = ParseDeliveryItem("1U/unknown");
  REQUIRE(bare.ok());
  CHECK_FALSE(bare->spec().has_power_draw_watts());
  CHECK_FALSE(bare->spec().has_weight_kg());

  for (const char* bad : {"R650", "2U", "2U/deep", "0U/full", "2U/full/800W/900W",
                          "2U/full/x0", "2U/full/a/b", "U/full"}) {
    INFO(bad);
    CHECK_FALSE(ParseDeliveryItem(bad).ok());
  }
}

v1::DeliveryPlan SamplePlan() {
  v1::DeliveryPlan plan;
  plan.set_strategy("first-fit decreasing by height");
  v1::PlannedDeliveryItem* p = plan.add_planned();
  p->set_name("R650 #1");
  p->set_rack_id("rack-1");
  p->set_rack_name("R101");
  p->set_side(v1::SIDE_FRONT);
  p->set_unit(5);
  for (v1::Side side : {v1::SIDE_FRONT, v1::SIDE_REAR}) {
    for (int u : {5, 6}) {
      v1::Slot* s = p->add_slots();
      s->set_side(side);
      s->set_unit(u);
    }
  }
  v1::DeliveryRack* r = plan.add_racks();
  r->set_rack_id("rack-1");
  r->set_rack_name("R101");
  r->set_free_front_before(40);
  r->set_free_front_after(38);
  r->set_free_rear_before(40);
  r->set_free_rear_after(38);
  r->set_items_planned(1);
  r->mutable_power_watts()->set_budget_known(true);
  r->mutable_power_watts()->set_budget(6000);
  r->mutable_power_watts()->set_known_before(4600);
  r->mutable_power_watts()->set_used_after(5400);
  r->mutable_weight_kg()->set_known_before(10000);
  r->mutable_weight_kg()->set_used_after(10025);
  r->mutable_weight_kg()->add_unknown("device 42");
  v1::UnplacedDeliveryItem* u = plan.add_unplaced();
  u->set_name("R650 #2");
  u->add_reasons("R101: units free, power 5,400 of 6,000 W + 800 W over budget");
  return plan;
}

bool HasLine(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& l : lines) {
    if (absl::StrContains(l, part)) return true;
  }
  return false;
}

TEST_CASE("the plan reads as tables: items, racks with the counted figures, and why not") {
  const std::vector<std::string> lines = DeliveryPlanText(SamplePlan());
  CHECK(lines[0] == "1 of 2 items planned (first-fit decreasing by height)");
  CHECK(HasLine(lines, "R650 #1  R101  front  U5    front U5..U6, rear U5..U6"));
  CHECK(HasLine(lines, "4,600 → 5,400 of 6,000"));
  CHECK(HasLine(lines, "10,000 → 10,025 (no budget), 1 unknown"));
  CHECK(HasLine(lines, "R101 weight unknown: device 42"));
  CHECK(HasLine(lines, "R650 #2 fits nowhere:"));
  CHECK(HasLine(lines, "  R101: units free, power 5,400 of 6,000 W + 800 W over budget"));
}

TEST_CASE("a reservation's table names the reservation each item is placed into") {
  v1::DeliveryReservation r;
  *r.mutable_plan() = SamplePlan();
  r.add_reservations()->set_id("5e0c1f2a-0000-4000-8000-000000000001");
  const std::vector<std::string> lines = DeliveryReservationText(r);
  CHECK(HasLine(lines, "5e0c1f2a-0000-4000-8000-000000000001"));
  CHECK(HasLine(lines, "dclctl delivery place RESERVATION_ID"));
}

TEST_CASE("the picture puts every rack involved side by side with the planned items drawn in") {
  std::vector<v1::Rack> racks(2);
  for (int i = 0; i < 2; ++i) {
    racks[i].set_id(i == 0 ? "rack-1" : "rack-2");
    racks[i].set_name(i == 0 ? "R101" : "R102");
    racks[i].mutable_geometry()->set_first_unit(1);
    racks[i].mutable_geometry()->set_unit_count(10);
    racks[i].mutable_geometry()->set_numbering(v1::NUMBERING_ASCENDING);
    racks[i].mutable_geometry()->set_has_rear(true);
  }
  const v1::DeliveryPlan plan = SamplePlan();
  const std::string svg = DeliverySvg(racks, plan.planned());
  CHECK(absl::StartsWith(svg, "<?xml"));
  CHECK(absl::StrContains(svg, "<svg x=\"0\" y=\"0\""));
  CHECK(absl::StrContains(svg, "R102"));
  CHECK(absl::StrContains(svg, "planned"));
  // One XML declaration, three <svg> elements (the picture and two racks).
  size_t count = 0;
  for (size_t at = svg.find("<svg"); at != std::string::npos; at = svg.find("<svg", at + 1)) {
    ++count;
  }
  CHECK(count == 3);
  CHECK(svg.find("<?xml", 1) == std::string::npos);
}

}  // namespace
}  // namespace dcl::admin
