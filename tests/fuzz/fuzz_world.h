// The data the RPC fuzzer runs against: an attacker organization A (whose tokens make almost
// every call), a victim organization V (whose rows must never change and whose ids must read
// exactly like unknown ids), a third organization W and an organization D with the module
// switched off. Written with plain SQL (not through the code under test), so that the fixtures
// hold whatever shapes the schema allows: racks of every geometry, devices of several heights and
// depths, placements, blockings, rack reservations (active and lapsed), reservations held,
// converted, cancelled and expired, services and bindings, and moves planned, in progress and
// cancelled.
#ifndef DCL_TESTS_FUZZ_FUZZ_WORLD_H_
#define DCL_TESTS_FUZZ_FUZZ_WORLD_H_

#include <map>
#include <string>
#include <vector>

#include "services/common/rpc_catalog.h"
#include "tests/support/test_db.h"

namespace dcl::fuzz {

// One seeded object: its id, its kind (the word an id field is named after: "rack" for rack_id
// and destination_rack_id) and tags that templates select by ("asc", "placed", "held", ...).
struct SeededObject {
  std::string id;
  std::string kind;
  std::vector<std::string> tags;
  bool HasTag(const std::string& tag) const;
};

struct SeededOrg {
  std::string name;
  std::string id;
  std::vector<SeededObject> objects;
  std::map<Role, std::string> tokens;  // a token per role (customer: subject "bob")
  // The objects of `kind` carrying every tag of `tags` (comma separated; "" = any).
  std::vector<const SeededObject*> Find(const std::string& kind, const std::string& tags) const;
};

struct World {
  SeededOrg attacker;         // A
  SeededOrg victim;           // V: nothing may change here
  SeededOrg third;            // W: another enabled organization, calling with its own tokens
  SeededOrg dormant;          // D: the module is switched off
  std::string revoked_token;  // A's, revoked before the run
  // The idempotency keys the seed used (the same in every organization).
  std::vector<std::string> seeded_keys;
  // Every geometry edge of the seeded racks: first-1, first, first+1, last-1, last, last+1 and
  // first+unit_count; the integer pools draw unit numbers from these.
  std::vector<int> rack_edges;
};

World SeedWorld(const testing::TestDatabase& db);

}  // namespace dcl::fuzz

#endif  // DCL_TESTS_FUZZ_FUZZ_WORLD_H_
