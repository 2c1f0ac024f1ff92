// The echo-insert floor (issue 26): the least a dcl service can spend to commit one row. It runs
// on the same server runtime as the RPC it is compared with, in the same process: the gate
// (token lookup, role check, module switch, request limits, logging, metrics), the same pool
// and its autocommit path, a prepared statement, the same gRPC server. Its work is one
// INSERT of one row, committed; so a real RPC's calls/s and CPU per call divided by the floor's
// say what the decision itself costs on this stack. Asked to (`round_trips`), it sends the same
// INSERT in a write path's transaction with reads that touch no table: what that transaction's
// round trips alone cost, before any statement in it does work.
//
// testonly: a served binary cannot depend on it (Bazel refuses a non-testonly target that does).
#ifndef DCL_TESTS_BENCH_ECHO_INSERT_SERVICE_H_
#define DCL_TESTS_BENCH_ECHO_INSERT_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <string>

#include "services/common/db.h"
#include "services/common/rpc_catalog.h"
#include "services/common/rpc_gate.h"
#include "tests/bench/echo_insert.grpc.pb.h"

namespace dcl::bench {

inline constexpr char kEchoInsertServiceName[] = "dcl.bench.EchoInsertService";

class EchoInsertServiceImpl final : public EchoInsertService::Service {
 public:
  // `admitted_as`: the RPC whose role check the gate applies (and whose label its log line and
  // metrics carry): the floor borrows the compared RPC's admission, so both pay the same. The
  // served RPC table (rpc_catalog.h) has no entry for the floor, and must not.
  EchoInsertServiceImpl(RpcGate& gate, DbPool& pool, Rpc admitted_as)
      : gate_(gate), pool_(pool), admitted_as_(admitted_as) {}

  // The floor's table, in the benchmark's disposable database (not a migration: it is not
  // part of the schema).
  static void CreateTable(const std::string& url);

  grpc::Status Insert(grpc::ServerContext* ctx, const EchoInsertRequest* request,
                      EchoInsertResponse* response) override;

 private:
  RpcGate& gate_;
  DbPool& pool_;
  const Rpc admitted_as_;
};

}  // namespace dcl::bench

#endif  // DCL_TESTS_BENCH_ECHO_INSERT_SERVICE_H_
