// Shared set-up of the reservation tests: an organization with a site, the logic on a real
// pool, request builders, and a runner that releases N calls at once through a barrier.
#ifndef DCL_TESTS_RESERVATION_RESERVATION_TEST_UTIL_H_
#define DCL_TESTS_RESERVATION_RESERVATION_TEST_UTIL_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "services/common/status.h"
#include "services/reservation/reservation_logic.h"
#include "tests/support/barrier.h"
#include "tests/support/fixtures.h"
#include "tests/support/test_db.h"

namespace dcl::reservation {

struct ReservationEnv {
  explicit ReservationEnv(int pool_size = 16, ReservationOptions options = {})
      : org(testing::CreateOrg(db, "acme")),
        site(testing::CreateSite(db, org, "FRA1")),
        pool(db.MakePool(pool_size)),
        logic(*pool, options),
        commerce(testing::PrincipalFor(org, Role::kCommerce)) {}

  std::string Device(testing::DeviceSpec spec = {}) const {
    return testing::CreateDevice(db, org, site, spec);
  }
  std::string DeviceAt(const std::string& at_site, testing::DeviceSpec spec = {}) const {
    return testing::CreateDevice(db, org, at_site, spec);
  }
  std::string Service(const std::string& kind = "dedicated") {
    v1::CreateServiceRequest request;
    request.set_kind(kind);
    request.set_customer("customer-1");
    v1::Service service;
    absl::Status status = logic.CreateService(commerce, request, &service);
    if (!status.ok()) throw std::runtime_error(status.ToString());
    return service.id();
  }

  testing::TestDatabase db;
  const std::string org;
  const std::string site;
  std::unique_ptr<DbPool> pool;
  ReservationLogic logic;
  Principal commerce;
};

inline v1::ReserveRequest ReserveRequest(const std::string& key, const std::string& site,
                                         const std::string& model = "", int ttl = 0) {
  v1::ReserveRequest request;
  request.set_idempotency_key(key);
  request.mutable_criteria()->set_site_id(site);
  request.mutable_criteria()->set_model(model);
  if (ttl != 0) request.set_ttl_seconds(ttl);  // 0 here: leave it unset (the default)
  return request;
}

inline v1::ReservationRef ById(const std::string& id) {
  v1::ReservationRef ref;
  ref.set_reservation_id(id);
  return ref;
}

struct CallResult {
  absl::Status status;
  v1::ReserveResponse response;
};

// Runs fn(i) for i in [0, n) on n threads released together by a barrier.
inline std::vector<CallResult> RunTogether(int n, const std::function<CallResult(int)>& fn) {
  std::vector<CallResult> results(n);
  testing::Barrier barrier(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      barrier.ArriveAndWait();
      results[i] = fn(i);
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

inline bool IsContended(const absl::Status& s) {
  return s.code() == absl::StatusCode::kAborted && ReasonOf(s) == v1::CONTENDED;
}
inline bool IsNoCapacity(const absl::Status& s) {
  return s.code() == absl::StatusCode::kFailedPrecondition && ReasonOf(s) == v1::NO_CAPACITY;
}

// The count of an exclusion reason in a NO_CAPACITY answer (0 when absent).
inline int ExclusionCountOf(const absl::Status& s, const std::string& reason) {
  auto detail = GetErrorDetail(s);
  if (!detail) return -1;
  for (const auto& c : detail->exclusion_counts()) {
    if (c.reason() == reason) return c.count();
  }
  return 0;
}

}  // namespace dcl::reservation

#endif  // DCL_TESTS_RESERVATION_RESERVATION_TEST_UTIL_H_
