#include "tests/bench/echo_insert_service.h"

#include <pqxx/pqxx>

#include "absl/status/statusor.h"

namespace dcl::bench {

void EchoInsertServiceImpl::CreateTable(const std::string& url) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  // A row like a hold's: a uuid key, the organization, a text and a timestamp.
  tx.exec(
      "CREATE TABLE IF NOT EXISTS bench_echo_insert (id bigserial PRIMARY KEY, "
      "org_id uuid NOT NULL, payload text NOT NULL, "
      "created_at timestamptz NOT NULL DEFAULT now())");
}

grpc::Status EchoInsertServiceImpl::Insert(grpc::ServerContext* ctx,
                                           const EchoInsertRequest* request,
                                           EchoInsertResponse* response) {
  return gate_.Run(ctx, admitted_as_, *request, [&](const Principal& p) -> absl::Status {
    const int reads = request->round_trips() == ROUND_TRIPS_PLACE_DEVICE      ? 1
                      : request->round_trips() == ROUND_TRIPS_RELEASE_BOOKING ? 4
                                                                              : 0;
    auto insert = [&](pqxx::transaction_base& tx) -> absl::StatusOr<int64_t> {
      return ExecCached(tx,
                        "INSERT INTO bench_echo_insert (org_id, payload) "
                        "VALUES ($1::uuid, $2) RETURNING id",
                        p.org_id, request->payload())[0][0]
          .as<int64_t>();
    };
    absl::StatusOr<int64_t> id =
        reads == 0 ? pool_.AutocommitIdempotent(insert)
                   : pool_.Transact([&](pqxx::work& tx) -> absl::StatusOr<int64_t> {
                       for (int i = 0; i < reads; ++i) ExecCached(tx, "SELECT $1::uuid", p.org_id);
                       return insert(tx);
                     });
    if (!id.ok()) return id.status();
    response->set_id(*id);
    return absl::OkStatus();
  });
}

}  // namespace dcl::bench
