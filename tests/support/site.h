// The seeded site most database tests start from: a fresh test database with one organization
// ("acme", module on), one site ("FRA1"), its racks (one 42-unit rack unless told otherwise), a
// dc-operator's Principal for calling domain logic directly, and helpers that add devices and
// count what the write paths wrote.
#ifndef DCL_TESTS_SUPPORT_SITE_H_
#define DCL_TESTS_SUPPORT_SITE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "services/common/auth.h"
#include "tests/support/fixtures.h"
#include "tests/support/test_db.h"

namespace dcl::testing {

struct Site {
  // The racks are created in order; `rack` is the first one's id.
  explicit Site(const std::vector<RackSpec>& rack_specs = {RackSpec{}});
  Site(const Site&) = delete;
  Site& operator=(const Site&) = delete;

  // A device of this site; power -1 leaves its draw unknown (NULL).
  std::string Device(int height = 1, const std::string& depth = "half", int power = -1);

  int64_t Bookings() const;
  // Slot rows not released yet.
  int64_t ActiveSlots() const;

  TestDatabase db;
  std::string org;
  std::string site;
  std::vector<std::string> racks;
  std::string rack;
  Principal op;
};

}  // namespace dcl::testing

#endif  // DCL_TESTS_SUPPORT_SITE_H_
