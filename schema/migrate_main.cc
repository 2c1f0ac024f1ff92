// migrate: brings a dcl database up to the schema compiled into this binary.
//   migrate --database_url=postgresql://...   (or DCL_DATABASE_URL)
#include <cstdio>

#include <spdlog/spdlog.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "schema/migrator.h"
#include "services/common/logging.h"
#include "services/common/service_main.h"

ABSL_DECLARE_FLAG(std::string, database_url);

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  dcl::InitLogging("migrate", dcl::LogFormatFromFlags());
  const std::string url =
      dcl::FlagOrEnv(absl::GetFlag(FLAGS_database_url), "DCL_DATABASE_URL", "");
  if (url.empty()) {
    spdlog::critical("no database: set --database_url or DCL_DATABASE_URL");
    return 2;
  }
  auto migrations = dcl::ParseMigrations(dcl::EmbeddedMigrationFiles());
  if (!migrations.ok()) {
    spdlog::critical("{}", migrations.status().ToString());
    return 2;
  }
  auto result = dcl::Migrate(url, *migrations);
  if (!result.ok()) {
    spdlog::critical("{}", result.status().ToString());
    return 1;
  }
  spdlog::info("schema up to date: {} applied now, {} already applied", result->applied,
               result->already_applied);
  return 0;
}
