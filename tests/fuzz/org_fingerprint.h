// A digest of every row that belongs to one organization, per table, for the fuzzer's "no row
// of another organization changes" assertion. The tables are read from the catalog
// (information_schema and pg_constraint) when the fingerprint is built, so a table added by a
// later migration is covered without touching this code:
//   * a table with an org_id column: its rows with that org_id;
//   * the table org_id columns refer to (organizations): the organization's own row;
//   * any table, also: rows whose foreign keys point at such rows, two levels deep (the slots of
//     the organization's bookings, another organization's row naming this organization's
//     device);
//   * a table with no path to an organization (settings, sweeper status): all of its rows.
#ifndef DCL_TESTS_FUZZ_ORG_FINGERPRINT_H_
#define DCL_TESTS_FUZZ_ORG_FINGERPRINT_H_

#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <string>

#include "tests/support/test_db.h"

namespace dcl::fuzz {

class OrgFingerprint {
 public:
  OrgFingerprint(const testing::TestDatabase& db, const std::string& org_id);

  // table → "<row count>:<md5 over the rows' text>".
  std::map<std::string, std::string> Take();
  // table → the condition that selects the organization's rows (for the report).
  const std::map<std::string, std::string>& conditions() const { return conditions_; }

 private:
  std::unique_ptr<pqxx::connection> conn_;
  std::map<std::string, std::string> conditions_;
};

}  // namespace dcl::fuzz

#endif  // DCL_TESTS_FUZZ_ORG_FINGERPRINT_H_
