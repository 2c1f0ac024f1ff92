#include "tests/fuzz/org_fingerprint.h"

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace dcl::fuzz {
namespace {

struct ForeignKey {
  std::string table;
  std::vector<std::string> columns;
  std::string referenced_table;
  std::vector<std::string> referenced_columns;
};

// pg_constraint's column arrays come back as "{a,b}".
std::vector<std::string> ParseNameArray(const std::string& literal) {
  std::string inner = literal.substr(1, literal.size() - 2);
  return absl::StrSplit(inner, ',', absl::SkipEmpty());
}

class ConditionBuilder {
 public:
  ConditionBuilder(std::set<std::string> org_tables, std::string org_table,
                   std::string org_table_key, std::vector<ForeignKey> keys, std::string org_id)
      : org_tables_(std::move(org_tables)),
        org_table_(std::move(org_table)),
        org_table_key_(std::move(org_table_key)),
        keys_(std::move(keys)),
        org_id_(std::move(org_id)) {}

  // The rows of `table` (as `alias`) that belong to the organization; "" when none can.
  std::string Owned(const std::string& table, const std::string& alias, int depth) {
    std::vector<std::string> terms;
    const std::string quoted_org = absl::StrCat("'", org_id_, "'::uuid");
    if (org_tables_.count(table) > 0)
      terms.push_back(absl::StrCat(alias, ".org_id = ", quoted_org));
    if (table == org_table_) {
      terms.push_back(absl::StrCat(alias, ".", org_table_key_, " = ", quoted_org));
    }
    if (depth > 0) {
      for (const ForeignKey& key : keys_) {
        // org_id → organizations is the first rule already; a self reference adds nothing.
        if (key.table != table || key.referenced_table == org_table_ ||
            key.referenced_table == table) {
          continue;
        }
        const std::string inner_alias = absl::StrCat(alias, "_", depth, "_", counter_++);
        const std::string inner = Owned(key.referenced_table, inner_alias, depth - 1);
        if (inner.empty()) continue;
        std::vector<std::string> join;
        for (size_t i = 0; i < key.columns.size(); ++i) {
          join.push_back(absl::StrCat(inner_alias, ".", key.referenced_columns[i], " = ", alias,
                                      ".", key.columns[i]));
        }
        terms.push_back(absl::StrCat("EXISTS (SELECT 1 FROM ", key.referenced_table, " ",
                                     inner_alias, " WHERE ", absl::StrJoin(join, " AND "), " AND ",
                                     inner, ")"));
      }
    }
    if (terms.empty()) return "";
    return absl::StrCat("(", absl::StrJoin(terms, " OR "), ")");
  }

 private:
  std::set<std::string> org_tables_;
  std::string org_table_;
  std::string org_table_key_;
  std::vector<ForeignKey> keys_;
  std::string org_id_;
  int counter_ = 0;
};

}  // namespace

OrgFingerprint::OrgFingerprint(const testing::TestDatabase& db, const std::string& org_id)
    : conn_(db.Connect()) {
  pqxx::nontransaction tx(*conn_);
  std::vector<std::string> tables;
  for (const auto& row :
       tx.exec("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
               "AND table_type = 'BASE TABLE' ORDER BY table_name")) {
    tables.push_back(row[0].as<std::string>());
  }
  std::set<std::string> org_tables;
  for (const auto& row :
       tx.exec("SELECT table_name FROM information_schema.columns WHERE table_schema = 'public' "
               "AND column_name = 'org_id'")) {
    org_tables.insert(row[0].as<std::string>());
  }
  std::vector<ForeignKey> keys;
  for (const auto& row :
       tx.exec("SELECT c.conrelid::regclass::text, c.confrelid::regclass::text, "
               "  ARRAY(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k(n, i) "
               "        JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n "
               "        ORDER BY k.i)::text, "
               "  ARRAY(SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY k(n, i) "
               "        JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n "
               "        ORDER BY k.i)::text "
               "FROM pg_constraint c JOIN pg_namespace ns ON ns.oid = c.connamespace "
               "WHERE c.contype = 'f' AND ns.nspname = 'public' ORDER BY c.conname")) {
    keys.push_back({row[0].as<std::string>(), ParseNameArray(row[2].as<std::string>()),
                    row[1].as<std::string>(), ParseNameArray(row[3].as<std::string>())});
  }
  // The organizations table is whatever an org_id column refers to.
  std::string org_table, org_table_key;
  for (const ForeignKey& key : keys) {
    if (key.columns.size() == 1 && key.columns[0] == "org_id") {
      org_table = key.referenced_table;
      org_table_key = key.referenced_columns[0];
      break;
    }
  }
  if (org_table.empty()) throw std::runtime_error("no foreign key from an org_id column found");

  ConditionBuilder builder(org_tables, org_table, org_table_key, keys, org_id);
  for (const std::string& table : tables) {
    std::string condition = builder.Owned(table, "t", 2);
    conditions_[table] = condition.empty() ? "true" : condition;
  }
}

std::map<std::string, std::string> OrgFingerprint::Take() {
  std::vector<std::string> parts;
  for (const auto& [table, condition] : conditions_) {
    parts.push_back(
        absl::StrCat("SELECT '", table,
                     "', count(*)::text || ':' || md5(coalesce(string_agg(md5(t::text), ',' "
                     "ORDER BY md5(t::text)), '')) FROM ",
                     table, " t WHERE ", condition));
  }
  pqxx::nontransaction tx(*conn_);
  std::map<std::string, std::string> out;
  for (const auto& row : tx.exec(absl::StrJoin(parts, " UNION ALL "))) {
    out[row[0].as<std::string>()] = row[1].as<std::string>();
  }
  return out;
}

}  // namespace dcl::fuzz
