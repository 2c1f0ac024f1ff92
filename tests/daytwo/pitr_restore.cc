// Backups restored, proven (issue 25): a cluster archiving its WAL (deploy/pg-backup
// enable-archiving), migrated and filled with a generated volume; a base backup (pg-backup base);
// then Reserve, Cancel and PlaceDevice calls through the real servers, each recorded with its
// wall-clock start and answer; a target time in the middle of the load; the archive closed; a
// restore of the base backup to the target time in a fresh cluster (pg-backup restore); and the
// audit of the restored database against the history:
//   - every write acknowledged before the target time is there (a hold, its cancellation, a
//     placement), and no write started after it (calls in flight at the target time may go
//     either way; calls without an answer are not counted);
//   - every invariant of the data holds (the mixed workload's audit, tests/support).
// It prints the restore time. Exit 0 = PASS.
//   pitr_restore [--devices=2000] [--booking_slots=10000] [--seconds=16] [--reserve_clients=3]
//                [--place_clients=2] [--keep]
// Production volume (run by hand on a quiet machine, from the checkout's root):
//   bazel build //tests/daytwo:pitr_restore
//   bazel-bin/tests/daytwo/pitr_restore --devices=1000000 --booking_slots=5000000 --seconds=60
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <thread>

#include <pqxx/pqxx>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "schema/migrator.h"
#include "tests/daytwo/daytwo_support.h"
#include "tests/daytwo/volume.h"
#include "tests/daytwo/write_load.h"
#include "tests/support/mixed_workload.h"
#include "tests/support/suite_processes.h"

ABSL_FLAG(int64_t, devices, 2000, "machines in the generated site");
ABSL_FLAG(int64_t, booking_slots, 10000, "booking slot rows in the generated database");
ABSL_FLAG(double, seconds, 16, "length of the load; the target time is in its middle");
ABSL_FLAG(int, reserve_clients, 3, "clients calling Reserve (and Cancel)");
ABSL_FLAG(int, place_clients, 2, "clients calling PlaceDevice");
ABSL_FLAG(bool, keep, false, "keep the clusters' folder (its path is printed)");

namespace dcl::daytwo {
namespace {

using workload::Reader;
using workload::Report;

// Closes the current WAL segment and waits until the archive holds it: everything committed
// so far is then in the archive.
void ArchiveEverything(const std::string& url) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  const std::string segment =
      tx.exec1("SELECT pg_walfile_name(pg_switch_wal())")[0].as<std::string>();
  for (int i = 0; i < 600; ++i) {
    const pqxx::row row = tx.exec1("SELECT coalesce(last_archived_wal, ''), failed_count, "
                                   "coalesce(last_failed_wal, '') FROM pg_stat_archiver");
    if (row[0].as<std::string>() >= segment) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw std::runtime_error("the archive did not receive " + segment + " within 60 s");
}

int Run() {
  ScratchDir scratch(absl::GetFlag(FLAGS_keep));
  const std::string archive = scratch.path() + "/archive";
  std::unique_ptr<Cluster> source =
      std::make_unique<Cluster>(scratch.path() + "/source", archive);
  Shell("/usr/lib/postgresql/15/bin/psql '" + source->Url("postgres") +
        "' -qc 'CREATE DATABASE dcl'");
  const std::string url = source->Url();
  auto migrations = ParseMigrations(EmbeddedMigrationFiles());
  if (!migrations.ok()) throw std::runtime_error(migrations.status().ToString());
  if (auto migrated = Migrate(url, *migrations); !migrated.ok()) {
    throw std::runtime_error(migrated.status().ToString());
  }
  VolumeSpec spec;
  spec.devices = absl::GetFlag(FLAGS_devices);
  spec.booking_slots = absl::GetFlag(FLAGS_booking_slots);
  const Volume volume = GenerateVolume(url, spec);
  std::printf("generated %lld devices, %lld booking slots in %.1f s\n",
              static_cast<long long>(volume.devices), static_cast<long long>(volume.booking_slots),
              volume.seconds);

  const auto backup_start = std::chrono::steady_clock::now();
  const std::string base = std::string(absl::StripAsciiWhitespace(
      Shell(DeployScript("pg-backup") + " base '" + url + "' " + scratch.path() + "/backups")));
  std::printf("base backup %s in %.1f s\n", base.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - backup_start)
                  .count());

  WriteLog log;
  WallClock::time_point target;
  {
    testing::SuiteOptions options;
    options.database_url = url;
    options.replicas = 1;
    options.sweepers = 0;  // holds stay held: what the audit reads is what the clients did
    testing::SuiteProcesses suite(options);
    const int reservation = suite.Port(suite.ReplicasOf(testing::SuiteService::kReservation)[0]);
    const int occupancy = suite.Port(suite.ReplicasOf(testing::SuiteService::kOccupancy)[0]);
    const auto half = std::chrono::duration<double>(absl::GetFlag(FLAGS_seconds) / 2);
    // Placements spread over the whole load, so that some are acknowledged on each side of
    // the target time: each client's share of the free positions over the load's length.
    const int place_clients = absl::GetFlag(FLAGS_place_clients);
    const size_t positions =
        std::min(volume.unplaced_devices.size(), volume.free_racks.size() * 21);
    const auto place_pause = std::chrono::milliseconds(static_cast<int64_t>(
        1300 * absl::GetFlag(FLAGS_seconds) / std::max<size_t>(1, positions / place_clients)));
    WriteLoad load(volume, reservation, occupancy, absl::GetFlag(FLAGS_reserve_clients),
                   place_clients, log, place_pause);
    std::this_thread::sleep_for(half);
    target = WallClock::now();
    std::this_thread::sleep_for(half);
    load.Stop();
  }
  ArchiveEverything(url);
  source.reset();  // the source is gone: only the backup and the archive are left

  const int restored_port =
      std::stoi(std::string(absl::StripAsciiWhitespace(Shell(DeployScript("free-port")))));
  const std::string restored_dir = scratch.path() + "/restored";
  // pg-backup starts the restored cluster; this object stops it.
  Cluster restored(restored_dir, restored_port);
  const std::string restore_output =
      Shell(absl::StrCat(DeployScript("pg-backup"), " restore ", base, " ", archive, " ",
                         restored_dir, " ", restored_port, " '", PostgresTime(target), "'"));
  std::printf("target time %s; %s", PostgresTime(target).c_str(), restore_output.c_str());
  Reader db(restored.Url());
  Report report;

  // What each reservation's state must be: present or absent, held or cancelled.
  std::map<std::string, std::string> state_before;                 // id → "held" / "cancelled"
  int before = 0, after = 0, in_flight = 0, unknown = 0;
  std::map<std::string, int> per_op_before, per_op_after;
  for (const Write& write : log.writes()) {
    if (write.unknown) {
      ++unknown;
      continue;
    }
    if (!write.acknowledged) continue;
    const bool acked_before = write.answered < target;
    const bool started_after = write.started > target;
    if (acked_before) {
      ++before;
      ++per_op_before[write.op];
    } else if (started_after) {
      ++after;
      ++per_op_after[write.op];
    } else {
      ++in_flight;
    }
    const std::string table = write.op == "place" ? "bookings" : "reservations";
    if (write.op == "reserve" || write.op == "place") {
      const int64_t present = db.Count(
          absl::StrCat("SELECT count(*) FROM ", table, " WHERE id = '", write.id, "'"));
      if (acked_before && present != 1) {
        report.Fail(absl::StrCat("2. ", write.op, " ", write.id,
                                 " acknowledged before the target time is missing"));
      }
      if (started_after && present != 0) {
        report.Fail(absl::StrCat("2. ", write.op, " ", write.id,
                                 " started after the target time is in the restore"));
      }
      if (write.op == "reserve" && acked_before) state_before.emplace(write.id, "held");
    } else if (write.op == "cancel") {
      if (acked_before) state_before[write.id] = "cancelled";
      if (started_after && state_before.count(write.id) > 0 &&
          db.Scalar(absl::StrCat("SELECT coalesce((SELECT state FROM reservations WHERE id = '",
                                write.id, "'), 'missing')")) !=
              "held") {
        report.Fail(absl::StrCat("2. cancel of ", write.id,
                                 " started after the target time is in the restore"));
      }
    }
  }
  for (const auto& [id, state] : state_before) {
    if (state != "cancelled") continue;
    const std::string restored_state =
        db.Scalar(absl::StrCat("SELECT coalesce((SELECT state FROM reservations WHERE id = '",
                               id, "'), 'missing')"));
    if (restored_state != "cancelled") {
      report.Fail(absl::StrCat("2. cancel of ", id, " acknowledged before the target time: ",
                               restored_state));
    }
  }
  // A history with nothing on one side of the target time proves nothing.
  for (const char* op : {"reserve", "cancel", "place"}) {
    if (per_op_before[op] < 3 || per_op_after[op] < 3) {
      report.Fail(absl::StrCat("0. too few acknowledged ", op, " calls around the target time (",
                               per_op_before[op], " before, ", per_op_after[op], " after)"));
    }
  }
  workload::AuditInvariants(db, report);
  std::printf("acknowledged writes: %d before the target time (all checked present), %d "
              "started after it (all checked absent), %d in flight at it; %d without answer\n",
              before, after, in_flight, unknown);
  report.Print();
  return report.failed() ? 1 : 0;
}

}  // namespace
}  // namespace dcl::daytwo

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  try {
    return dcl::daytwo::Run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pitr_restore: %s\n", e.what());
    return 1;
  }
}
