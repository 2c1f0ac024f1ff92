// The reservation benchmark's world (reservation_bench.h): the service and the echo-insert floor
// on in-process gRPC servers, the organizations, tokens and sites the scenarios seed, and the
// SQL helpers that seed them and clear holds between measured phases.
#include "tests/bench/reservation_bench.h"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <pqxx/pqxx>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "services/common/auth.h"
#include "services/common/db.h"
#include "services/common/rpc_gate.h"
#include "services/common/server.h"
#include "services/reservation/reservation_logic.h"
#include "services/reservation/reservation_service.h"
#include "tests/bench/echo_insert_service.h"

namespace dcl::bench::reservation_bench {

Bench::Bench(const std::string& url) : url_(url) {
  DbOptions options;
  options.url = url;
  options.pool_size = absl::GetFlag(FLAGS_pool_size);
  pool_ = std::make_unique<DbPool>(options);
  tokens_ = StartTokenCacheFromFlags(url);
  gate_ = std::make_unique<RpcGate>(*pool_, tokens_.get());
  logic_ =
      std::make_unique<reservation::ReservationLogic>(*pool_, reservation::ReservationOptions{});
  service_ = std::make_unique<reservation::ReservationServiceImpl>(*gate_, *logic_);
  // The floor is admitted as Reserve: the same token lookup, role check and metrics.
  EchoInsertServiceImpl::CreateTable(url);
  echo_ = std::make_unique<EchoInsertServiceImpl>(*gate_, *pool_, Rpc::kReserve);
  ServerConfig config;
  config.listen_address = "127.0.0.1:0";
  config.reflection = false;
  auto runtime = ServerRuntime::Start(
      config, pool_.get(),
      {{"dcl.v1.ReservationService", service_.get()}, {kEchoInsertServiceName, echo_.get()}});
  if (!runtime.ok()) Die(runtime.status().ToString());
  runtime_ = std::move(*runtime);
  channels_ = DistinctChannels(runtime_->port(), 4);
  if (tokens_ != nullptr) {
    // The same services, pool and logic behind a gate without the cache, on a port of its own:
    // the token-cache scenario takes turns between the two in one run.
    uncached_gate_ = std::make_unique<RpcGate>(*pool_);
    uncached_service_ =
        std::make_unique<reservation::ReservationServiceImpl>(*uncached_gate_, *logic_);
    uncached_echo_ =
        std::make_unique<EchoInsertServiceImpl>(*uncached_gate_, *pool_, Rpc::kReserve);
    auto uncached = ServerRuntime::Start(config, pool_.get(),
                                         {{"dcl.v1.ReservationService", uncached_service_.get()},
                                          {kEchoInsertServiceName, uncached_echo_.get()}});
    if (!uncached.ok()) Die(uncached.status().ToString());
    uncached_runtime_ = std::move(*uncached);
    uncached_channels_ = DistinctChannels(uncached_runtime_->port(), 4);
  }
}

Bench::~Bench() {
  if (uncached_runtime_) uncached_runtime_->Shutdown();
  runtime_->Shutdown();
}

void Bench::Die(const std::string& why) {
  std::fprintf(stderr, "reservation_bench: %s\n", why.c_str());
  std::exit(1);
}

void Bench::Sql(const std::string& sql) {
  pqxx::connection conn(url_);
  pqxx::work tx(conn);
  tx.exec(sql);
  tx.commit();
}

void Bench::Vacuum(const char* statement) {
  pqxx::connection conn(url_);
  pqxx::nontransaction tx(conn);
  tx.exec(statement);
}

void Bench::CancelHoldsAndVacuum(const std::string& site) {
  CancelHolds(site);
  Vacuum("VACUUM");
}

std::string Bench::Scalar(const std::string& sql) {
  pqxx::connection conn(url_);
  pqxx::work tx(conn);
  pqxx::row row = tx.exec1(sql);
  tx.commit();
  return row[0].is_null() ? "" : row[0].as<std::string>();
}

Bench::Org Bench::NewOrg(const std::string& label) {
  const std::string name = absl::StrCat(
      "bench-", label, "-", std::chrono::system_clock::now().time_since_epoch().count());
  Org org;
  org.id =
      Scalar(absl::StrCat("INSERT INTO organizations (name) VALUES ('", name, "') RETURNING id"));
  Sql("UPDATE feature_settings SET enabled = true WHERE feature = 'datacenter'");
  Sql(absl::StrCat("INSERT INTO organization_feature_settings (org_id, feature, enabled) VALUES ('",
                   org.id, "', 'datacenter', true)"));
  auto token = CreateToken(*pool_, org.id, Role::kCommerce, "", "bench");
  if (!token.ok()) Die(token.status().ToString());
  org.token = token->token;
  return org;
}

void Bench::SetUpOrg() {
  Org org = NewOrg("main");
  org_ = org.id;
  token_ = org.token;
}

std::string Bench::NewSite(const std::string& name, int machines, bool analyze,
                           const std::string& in_org) {
  const std::string org = in_org.empty() ? org_ : in_org;
  const std::string site = Scalar(absl::StrCat("INSERT INTO sites (org_id, name) VALUES ('", org,
                                               "', '", name, "') RETURNING id"));
  Sql(absl::StrCat(
      "INSERT INTO devices (org_id, site_id, vendor, model, height_units, "
      "depth_class) SELECT '",
      org, "', '", site, "', 'Dell', 'R650', 1, 'full' FROM generate_series(1, ", machines, ")"));
  if (analyze) Sql("ANALYZE devices");
  return site;
}

void Bench::CancelHolds(const std::string& site) {
  Sql(
      absl::StrCat("UPDATE reservations SET state = 'cancelled', end_reason = 'cancelled', "
                   "ended_at = now(), ended_by = 'bench' WHERE state = 'held' AND "
                   "criteria_site_id = '",
                   site, "'"));
}

}  // namespace dcl::bench::reservation_bench
