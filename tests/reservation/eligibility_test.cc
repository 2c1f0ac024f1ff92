// Candidate eligibility, exhaustively over the facts that decide it: no database.
#include "services/reservation/eligibility.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

namespace dcl::reservation {
namespace {

Criteria AnyAt(const std::string& site) { return Criteria{site, "", "", ""}; }

DeviceFacts ReadyDevice() {
  DeviceFacts d;
  d.id = "d1";
  d.site_id = "s1";
  d.vendor = "Dell";
  d.model = "R650";
  d.hardware_profile = "gpu";
  d.process_state = "normal";
  return d;
}

TEST_CASE("a ready, free device at the site matching every criterion is eligible") {
  CHECK(Classify(Criteria{"s1", "Dell", "R650", "gpu"}, ReadyDevice()) == Exclusion::kEligible);
  CHECK(Classify(AnyAt("s1"), ReadyDevice()) == Exclusion::kEligible);
}

TEST_CASE("each single fact that disqualifies a device is reported as its own reason") {
  const Criteria c{"s1", "Dell", "R650", "gpu"};
  DeviceFacts d = ReadyDevice();
  SECTION("another site") {
    d.site_id = "s2";
    CHECK(Classify(c, d) == Exclusion::kWrongSite);
  }
  SECTION("another vendor") {
    d.vendor = "HPE";
    CHECK(Classify(c, d) == Exclusion::kWrongVendor);
  }
  SECTION("another model") {
    d.model = "R750";
    CHECK(Classify(c, d) == Exclusion::kWrongModel);
  }
  SECTION("another hardware profile") {
    d.hardware_profile = "storage";
    CHECK(Classify(c, d) == Exclusion::kWrongHardwareProfile);
  }
  SECTION("decommissioned, in any process state") {
    d.decommissioned = true;
    CHECK(Classify(c, d) == Exclusion::kDecommissioned);
    d.process_state = "staging";
    CHECK(Classify(c, d) == Exclusion::kDecommissioned);
  }
  SECTION("staging") {
    d.process_state = "staging";
    CHECK(Classify(c, d) == Exclusion::kStaging);
  }
  SECTION("moving") {
    d.process_state = "moving";
    CHECK(Classify(c, d) == Exclusion::kMoving);
  }
  SECTION("in transit") {
    d.process_state = "in_transit";
    CHECK(Classify(c, d) == Exclusion::kInTransit);
  }
  SECTION("a process state this code does not know is not sellable") {
    d.process_state = "quarantine";
    CHECK(Classify(c, d) == Exclusion::kUnknownProcessState);
  }
  SECTION("bound to a service") {
    d.bound = true;
    CHECK(Classify(c, d) == Exclusion::kBoundToService);
  }
  SECTION("held by another order") {
    d.held = true;
    CHECK(Classify(c, d) == Exclusion::kHeldByAnotherOrder);
  }
}

TEST_CASE("empty criteria fields match anything, and matching is exact otherwise") {
  DeviceFacts d = ReadyDevice();
  CHECK(Classify(Criteria{"s1", "", "R650", ""}, d) == Exclusion::kEligible);
  CHECK(Classify(Criteria{"s1", "dell", "", ""}, d) == Exclusion::kWrongVendor);
  d.hardware_profile = "";
  CHECK(Classify(Criteria{"s1", "", "", ""}, d) == Exclusion::kEligible);
  CHECK(Classify(Criteria{"s1", "", "", "gpu"}, d) == Exclusion::kWrongHardwareProfile);
}

TEST_CASE(
    "over every combination of facts, a device is eligible exactly when nothing disqualifies it, "
    "and the first failing check is the reason") {
  const Criteria c{"s1", "Dell", "R650", "gpu"};
  const char* states[] = {"normal", "staging", "moving", "in_transit", "other"};
  int eligible = 0, combinations = 0;
  for (int mask = 0; mask < 128; ++mask) {
    for (const char* state : states) {
      DeviceFacts d = ReadyDevice();
      if (mask & 1) d.site_id = "s2";
      if (mask & 2) d.vendor = "HPE";
      if (mask & 4) d.model = "X";
      if (mask & 8) d.hardware_profile = "Y";
      if (mask & 16) d.bound = true;
      if (mask & 32) d.held = true;
      if (mask & 64) d.decommissioned = true;
      d.process_state = state;
      ++combinations;
      Exclusion expected = Exclusion::kEligible;
      if (mask & 1) {
        expected = Exclusion::kWrongSite;
      } else if (mask & 2) {
        expected = Exclusion::kWrongVendor;
      } else if (mask & 4) {
        expected = Exclusion::kWrongModel;
      } else if (mask & 8) {
        expected = Exclusion::kWrongHardwareProfile;
      } else if (mask & 64) {
        expected = Exclusion::kDecommissioned;
      } else if (std::string(state) == "staging") {
        expected = Exclusion::kStaging;
      } else if (std::string(state) == "moving") {
        expected = Exclusion::kMoving;
      } else if (std::string(state) == "in_transit") {
        expected = Exclusion::kInTransit;
      } else if (std::string(state) == "other") {
        expected = Exclusion::kUnknownProcessState;
      } else if (mask & 16) {
        expected = Exclusion::kBoundToService;
      } else if (mask & 32) {
        expected = Exclusion::kHeldByAnotherOrder;
      }
      CHECK(Classify(c, d) == expected);
      if (Classify(c, d) == Exclusion::kEligible) ++eligible;
    }
  }
  CHECK(combinations == 640);
  CHECK(eligible == 1);
}

TEST_CASE("every exclusion has a distinct client-facing name") {
  std::set<std::string> names;
  for (size_t i = 0; i < kExclusionCount; ++i) {
    const std::string name = ExclusionName(static_cast<Exclusion>(i));
    CHECK(name != "unknown");
    names.insert(name);
  }
  CHECK(names.size() == kExclusionCount);
}

}  // namespace
}  // namespace dcl::reservation
