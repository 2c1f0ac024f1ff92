// Migrations under load (issue 25): a database at migration 0027 filled with a generated
// volume, the real servers serving Reserve (and Cancel) and PlaceDevice from several clients,
// and then the newest migrations applied by the migrator while the load runs. It prints the
// longest a write call was in flight while the migration ran (the stall a deploy causes), and
// checks that every acknowledged write is in the database.
//   --migrations=online     schema/migrations 0028 and 0029 as rewritten by the online rules
//                           (tests/daytwo/migrations 9001-9004: CONCURRENTLY, NOT VALID then
//                           VALIDATE, swap, contract); the resulting indexes and constraints
//                           are compared with what 0028 and 0029 make (they must be the same)
//   --migrations=original   0028 and 0029 as they are (index builds and a validated key inside
//                           the migration's transaction): the figure the rewrite is measured
//                           against
// Exit 1 when the stall exceeds --max_stall_ms (0: no limit), an acknowledged write is
// missing, or the online rewrite's schema differs.
//   migration_under_load [--devices=3000] [--booking_slots=15000] [--migrations=online]
// Production volume (by hand, on a quiet machine, from the checkout's root):
//   bazel build //tests/daytwo:migration_under_load
//   bazel-bin/tests/daytwo/migration_under_load --devices=1000000 --booking_slots=5000000
//       --migrations=original        (then the same with --migrations=online)
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <pqxx/pqxx>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "schema/migrator.h"
#include "tests/daytwo/daytwo_support.h"
#include "tests/daytwo/volume.h"
#include "tests/daytwo/write_load.h"
#include "tests/support/suite_processes.h"

ABSL_FLAG(int64_t, devices, 3000, "machines in the generated site");
ABSL_FLAG(int64_t, booking_slots, 15000, "booking slot rows in the generated database");
ABSL_FLAG(std::string, migrations, "online", "online (the rewrite) or original (0028, 0029)");
ABSL_FLAG(int, max_stall_ms, 0, "fail when a write call stalls longer (0: only print)");
ABSL_FLAG(int, ddl_lock_timeout_ms, 500, "the migrator's lock_timeout (migrate's flag)");
ABSL_FLAG(int, reserve_clients, 4, "clients calling Reserve (and Cancel)");
ABSL_FLAG(int, place_clients, 2, "clients calling PlaceDevice");
ABSL_FLAG(double, settle_seconds, 2, "load before and after the migration");
ABSL_FLAG(bool, keep, false, "keep the cluster's folder (its path is printed)");

namespace dcl::daytwo {
namespace {

constexpr int kBaseVersion = 27;  // the schema the previous release serves

std::vector<MigrationFile> RewriteFiles() {
  std::string dir;
  for (const char* root_var : {"TEST_SRCDIR", "RUNFILES_DIR"}) {
    if (const char* root = std::getenv(root_var); root != nullptr && *root != '\0') {
      dir = std::string(root) + "/dcl/tests/daytwo/migrations";
      if (access(dir.c_str(), R_OK) == 0) break;
      dir.clear();
    }
  }
  if (dir.empty()) dir = "tests/daytwo/migrations";
  std::vector<MigrationFile> files;
  DIR* listing = opendir(dir.c_str());
  if (listing == nullptr) throw std::runtime_error("cannot read " + dir);
  while (const dirent* entry = readdir(listing)) {
    const std::string name = entry->d_name;
    if (name.size() < 5 || name.substr(name.size() - 4) != ".sql") continue;
    std::ifstream in(dir + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    files.push_back({name, text.str()});
  }
  closedir(listing);
  if (files.size() != 4) throw std::runtime_error("expected 4 migrations in " + dir);
  return files;
}

std::vector<Migration> Parse(const std::vector<MigrationFile>& files) {
  auto parsed = ParseMigrations(files);
  if (!parsed.ok()) throw std::runtime_error(parsed.status().ToString());
  return *parsed;
}

// The indexes and constraints of the tables 0028 and 0029 change, as definitions.
std::vector<std::string> SchemaOf(const std::string& url) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  std::vector<std::string> lines;
  const char* tables = "('reservations', 'moves', 'sites', 'racks', 'devices')";
  for (const auto& row : tx.exec(absl::StrCat(
           "SELECT c.relname || ': ' || pg_get_indexdef(i.indexrelid) || "
           "CASE WHEN i.indisvalid THEN '' ELSE ' INVALID' END FROM pg_index i "
           "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid "
           "WHERE t.relname IN ",
           tables,
           " UNION ALL SELECT conname || ': ' || pg_get_constraintdef(k.oid) || CASE WHEN "
           "k.convalidated THEN '' ELSE ' NOT VALIDATED' END FROM pg_constraint k JOIN pg_class "
           "t ON t.oid = k.conrelid WHERE t.relname IN ",
           tables, " ORDER BY 1"))) {
    lines.push_back(row[0].as<std::string>());
  }
  return lines;
}

int Run() {
  const std::string mode = absl::GetFlag(FLAGS_migrations);
  if (mode != "online" && mode != "original") throw std::invalid_argument("--migrations");
  ScratchDir scratch(absl::GetFlag(FLAGS_keep));
  Cluster cluster(scratch.path() + "/cluster", "");
  Shell("/usr/lib/postgresql/15/bin/psql '" + cluster.Url("postgres") +
        "' -qc 'CREATE DATABASE dcl' -c 'CREATE DATABASE reference'");
  const std::string url = cluster.Url();

  const std::vector<Migration> all = Parse(EmbeddedMigrationFiles());
  std::vector<Migration> base, target;
  for (const Migration& m : all) {
    if (m.version <= kBaseVersion) base.push_back(m);
  }
  target = base;
  if (mode == "original") {
    for (const Migration& m : all) {
      if (m.version == 28 || m.version == 29) target.push_back(m);
    }
  } else {
    for (const Migration& m : Parse(RewriteFiles())) target.push_back(m);
  }
  if (auto migrated = Migrate(url, base); !migrated.ok()) {
    throw std::runtime_error(migrated.status().ToString());
  }
  VolumeSpec spec;
  spec.devices = absl::GetFlag(FLAGS_devices);
  spec.booking_slots = absl::GetFlag(FLAGS_booking_slots);
  const Volume volume = GenerateVolume(url, spec);
  std::printf("generated %lld devices, %lld booking slots in %.1f s\n",
              static_cast<long long>(volume.devices), static_cast<long long>(volume.booking_slots),
              volume.seconds);

  WriteLog log;
  WallClock::time_point from, to;
  absl::StatusOr<MigrateResult> result;
  {
    testing::SuiteOptions options;
    options.database_url = url;
    options.replicas = 1;
    options.sweepers = 0;
    testing::SuiteProcesses suite(options);
    WriteLoad load(volume, suite.Port(suite.ReplicasOf(testing::SuiteService::kReservation)[0]),
                   suite.Port(suite.ReplicasOf(testing::SuiteService::kOccupancy)[0]),
                   absl::GetFlag(FLAGS_reserve_clients), absl::GetFlag(FLAGS_place_clients), log);
    const auto settle = std::chrono::duration<double>(absl::GetFlag(FLAGS_settle_seconds));
    std::this_thread::sleep_for(settle);
    MigrateOptions migrate_options;
    migrate_options.lock_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_ddl_lock_timeout_ms));
    from = WallClock::now();
    result = Migrate(url, target, migrate_options);
    to = WallClock::now();
    std::this_thread::sleep_for(settle);
    load.Stop();
  }
  if (!result.ok()) throw std::runtime_error(result.status().ToString());

  std::vector<std::string> failures;
  const std::vector<Write> writes = log.writes();
  const Stall stall = LongestStall(writes, from, to);
  const Stall reserve_stall = LongestStall(
      [&] {
        std::vector<Write> some;
        for (const Write& w : writes) if (w.op != "place") some.push_back(w);
        return some;
      }(),
      from, to);
  const Stall place_stall = LongestStall(
      [&] {
        std::vector<Write> some;
        for (const Write& w : writes) if (w.op == "place") some.push_back(w);
        return some;
      }(),
      from, to);
  int acknowledged = 0, unknown = 0, refused = 0;
  {
    pqxx::connection conn(url);
    pqxx::nontransaction tx(conn);
    for (const Write& write : writes) {
      if (write.unknown) ++unknown;
      if (!write.acknowledged) {
        ++refused;
        continue;
      }
      ++acknowledged;
      if (write.op == "cancel") continue;
      const std::string table = write.op == "place" ? "bookings" : "reservations";
      if (tx.exec_params1(absl::StrCat("SELECT count(*) FROM ", table, " WHERE id = $1"),
                          write.id)[0]
              .as<int>() != 1) {
        failures.push_back(write.op + " " + write.id + " acknowledged, not in the database");
      }
    }
  }
  if (unknown > 0) failures.push_back(absl::StrCat(unknown, " calls without an answer"));
  if (stall.calls == 0) failures.push_back("no write call overlapped the migration");

  if (mode == "online") {
    // The reference is what the rewrite stands for, 0028 and 0029 on the same base, not every
    // migration there is: later ones change these tables too.
    const std::string reference = cluster.Url("reference");
    std::vector<Migration> original = base;
    for (const Migration& m : all) {
      if (m.version == 28 || m.version == 29) original.push_back(m);
    }
    if (auto migrated = Migrate(reference, original); !migrated.ok()) {
      throw std::runtime_error(migrated.status().ToString());
    }
    const std::vector<std::string> got = SchemaOf(url), want = SchemaOf(reference);
    if (got != want) {
      failures.push_back(absl::StrCat("the online rewrite's schema differs from 0028+0029's:\n  ",
                                      absl::StrJoin(got, "\n  "), "\nwanted:\n  ",
                                      absl::StrJoin(want, "\n  ")));
    }
  }

  const double migration_seconds = std::chrono::duration<double>(to - from).count();
  std::printf(
      "migrations=%s: applied %d migrations in %.2f s (%d lock timeouts retried, lock_timeout "
      "%d ms)\n"
      "write calls in flight during the migration: %d; longest stall of a write call: %.3f s "
      "(%s); Reserve/Cancel %.3f s, PlaceDevice %.3f s\n"
      "calls over the whole load: %d acknowledged (all checked present), %d refused, %d "
      "without an answer\n",
      mode.c_str(), result->applied, migration_seconds, result->lock_timeouts,
      absl::GetFlag(FLAGS_ddl_lock_timeout_ms), stall.calls, stall.seconds, stall.op.c_str(),
      reserve_stall.seconds, place_stall.seconds, acknowledged, refused - unknown, unknown);
  const int max_stall_ms = absl::GetFlag(FLAGS_max_stall_ms);
  if (max_stall_ms > 0 && stall.seconds * 1000 > max_stall_ms) {
    failures.push_back(absl::StrCat("a write call stalled ", stall.seconds, " s, over the ",
                                    max_stall_ms, " ms allowed"));
  }
  for (const std::string& failure : failures) std::printf("FAIL: %s\n", failure.c_str());
  std::printf("RESULT: %s\n", failures.empty() ? "PASS" : "FAIL");
  return failures.empty() ? 0 : 1;
}

}  // namespace
}  // namespace dcl::daytwo

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  try {
    return dcl::daytwo::Run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "migration_under_load: %s\n", e.what());
    return 1;
  }
}
