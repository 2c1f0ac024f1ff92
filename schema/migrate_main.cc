// migrate: brings a dcl database up to the schema compiled into this binary.
//   migrate --database_url=postgresql://...   (or DCL_DATABASE_URL)
#include <cstdio>

#include <spdlog/spdlog.h>

#include "services/common/command_line.h"
#include "schema/migrator.h"
#include "services/common/logging.h"
#include "services/common/service_main.h"

int main(int argc, char** argv) {
  dcl::ParseCommandLineOrExit(
      argc, argv,
      {"migrate",
       "migrate: brings a dcl database up to the schema compiled into this binary (exit 0 = "
       "up to date, 1 = failed, 2 = bad configuration).\n  migrate --database_url=CONNINFO",
       __FILE__, {dcl::SharedFlags::kDatabaseUrl, dcl::SharedFlags::kLogFormat}});
  dcl::InitLogging("migrate", dcl::LogFormatFromFlags());
  absl::StatusOr<std::string> url = dcl::DatabaseUrlFromFlags();
  if (!url.ok()) {
    spdlog::critical("{}", std::string(url.status().message()));
    return dcl::kExitConfigurationError;
  }
  auto migrations = dcl::ParseMigrations(dcl::EmbeddedMigrationFiles());
  if (!migrations.ok()) {
    spdlog::critical("{}", migrations.status().ToString());
    return dcl::kExitConfigurationError;
  }
  auto result = dcl::Migrate(*url, *migrations);
  if (!result.ok()) {
    spdlog::critical("{}", result.status().ToString());
    return 1;
  }
  spdlog::info("schema up to date: {} applied now, {} already applied", result->applied,
               result->already_applied);
  return 0;
}
