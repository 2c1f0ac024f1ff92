// The audit after the mixed workload. 1: every invariant over the whole database; 2: every
// acknowledged write of the clients present with the acknowledged values, refused writes absent;
// 3: (the watch, checked as the clients go); 4: every process runs unless killed on purpose,
// every server serves.
#ifndef DCL_TESTS_SUPPORT_WORKLOAD_AUDIT_H_
#define DCL_TESTS_SUPPORT_WORKLOAD_AUDIT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "dcl/v1/moves.pb.h"
#include "tests/support/suite_processes.h"
#include "tests/support/workload_move_driver.h"
#include "tests/support/workload_occupancy_client.h"
#include "tests/support/workload_report.h"
#include "tests/support/workload_reservation_client.h"

namespace dcl::workload {

// One connection for the audit's many small reads (a connection per read would take longer
// than the load).
class Reader {
 public:
  explicit Reader(const std::string& url) : conn_(url) {}
  pqxx::result Exec(const std::string& sql) {
    pqxx::nontransaction tx(conn_);
    return tx.exec(sql);
  }
  std::string Scalar(const std::string& sql) {
    const pqxx::result result = Exec(sql);
    if (result.size() != 1) throw std::runtime_error("expected one row from: " + sql);
    return result[0][0].is_null() ? "" : result[0][0].c_str();
  }
  int64_t Count(const std::string& sql) { return std::stoll(Scalar(sql)); }

 private:
  pqxx::connection conn_;
};

std::vector<std::string> Column(Reader& db, const std::string& sql);
// Every location history row's id and digest, to prove later that none changed or vanished.
std::map<std::string, std::string> HistoryDigests(Reader& db);
v1::MoveState StateFromName(const std::string& name);

// The audit. 1: every invariant over the whole database; 2: every acknowledged write of the
// clients present with the acknowledged values, refused writes absent.
void AuditInvariants(Reader& db, Report& report);
void AuditHolds(Reader& db, const std::string& org,
                const std::vector<std::unique_ptr<ReservationClient>>& clients, Report& report);
void AuditBookings(Reader& db, const std::string& org,
                   const std::vector<std::unique_ptr<OccupancyClient>>& clients, Report& report);
void AuditMoves(Reader& db, const std::vector<const MoveRecord*>& moves, Report& report);
// 1. Location history rows as `seen` earlier (HistoryDigests) still there, unchanged; `when`
// names the moment they were seen.
void AuditHistoryUnchanged(Reader& db, const std::map<std::string, std::string>& seen,
                           const std::string& when, Report& report);
// 4. Every process runs unless killed on purpose, every server serves.
void AuditProcesses(SuiteProcesses& suite, Report& report);

}  // namespace dcl::workload

#endif  // DCL_TESTS_SUPPORT_WORKLOAD_AUDIT_H_
