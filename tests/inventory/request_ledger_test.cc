// The request ledger against a real PostgreSQL: claim, completion and replay in one transaction,
// refusal of reuse (other parameters, other RPC), scoping per organization, a failed write
// leaving no claim, a claim without an answer refused at commit, a concurrent claim waiting on
// the first and replaying its answer, and a write refused at commit after its caller's deadline.
#include "services/common/request_ledger.h"

#include <catch2/catch.hpp>

#include <future>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "dcl/v1/inventory.pb.h"
#include "services/common/call_deadline.h"
#include "services/common/status.h"
#include "tests/support/fixtures.h"
#include "tests/support/test_db.h"

namespace dcl {
namespace {

constexpr char kId[] = "2b0c9a4e-9a51-4f0e-8d1e-4d5cb1e1f001";

v1::CreateSiteRequest SiteRequest(const std::string& name) {
  v1::CreateSiteRequest req;
  req.set_request_id(kId);
  req.set_name(name);
  return req;
}

v1::Site SiteAnswer(const std::string& name) {
  v1::Site site;
  site.set_id("9d0c9a4e-9a51-4f0e-8d1e-4d5cb1e1f0aa");
  site.set_name(name);
  return site;
}

// One claimed-and-completed call, committed.
void Complete(pqxx::connection& conn, const std::string& org, const v1::CreateSiteRequest& req,
              const v1::Site& answer) {
  pqxx::work tx(conn);
  absl::StatusOr<request_ledger::Claim> claim =
      request_ledger::Begin(tx, org, Rpc::kCreateSite, req.request_id(), req);
  REQUIRE(claim.ok());
  REQUIRE_FALSE(claim->replay);
  REQUIRE(request_ledger::Finish(tx, *claim, answer).ok());
  tx.commit();
}

TEST_CASE("the parameters digest ignores the request id and nothing else") {
  v1::CreateSiteRequest a = SiteRequest("FRA1");
  v1::CreateSiteRequest b = a;
  b.set_request_id("another-id");
  CHECK(request_ledger::ParamsDigest(a) == request_ledger::ParamsDigest(b));
  CHECK(request_ledger::ParamsDigest(a).size() == 32);
  b.set_name("FRA2");
  CHECK(request_ledger::ParamsDigest(a) != request_ledger::ParamsDigest(b));
  // A request without a request_id field is hashed whole.
  v1::GetSiteRequest get;
  get.set_site_id("x");
  CHECK(request_ledger::ParamsDigest(get).size() == 32);
}

TEST_CASE("a completed request id replays its answer; other parameters or another RPC are "
          "REQUEST_ID_REUSED; another organization's same id is its own") {
  testing::TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  const std::string other = testing::CreateOrg(db, "globex");
  auto conn = db.Connect();
  Complete(*conn, org, SiteRequest("FRA1"), SiteAnswer("FRA1"));

  {
    pqxx::work tx(*conn);
    const v1::CreateSiteRequest again = SiteRequest("FRA1");
    absl::StatusOr<request_ledger::Claim> claim =
        request_ledger::Begin(tx, org, Rpc::kCreateSite, kId, again);
    REQUIRE(claim.ok());
    CHECK(claim->replay);
    v1::Site replayed;
    bool flag = false;
    REQUIRE(claim->Replay(&replayed, &flag).ok());
    CHECK(flag);
    CHECK(replayed.SerializeAsString() == SiteAnswer("FRA1").SerializeAsString());
  }
  {
    pqxx::work tx(*conn);
    absl::StatusOr<request_ledger::Claim> claim =
        request_ledger::Begin(tx, org, Rpc::kCreateSite, kId, SiteRequest("FRA2"));
    REQUIRE_FALSE(claim.ok());
    CHECK(claim.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(ReasonOf(claim.status()) == v1::REQUEST_ID_REUSED);
    CHECK(GetErrorDetail(claim.status())->metadata().at("request_id") == kId);
  }
  {
    pqxx::work tx(*conn);
    v1::GetSiteRequest get;
    absl::StatusOr<request_ledger::Claim> claim =
        request_ledger::Begin(tx, org, Rpc::kUpdateRack, kId, get);
    REQUIRE_FALSE(claim.ok());
    CHECK(ReasonOf(claim.status()) == v1::REQUEST_ID_REUSED);
    CHECK(GetErrorDetail(claim.status())->metadata().at("rpc") ==
          "/dcl.v1.InventoryService/CreateSite");
  }
  {
    pqxx::work tx(*conn);
    absl::StatusOr<request_ledger::Claim> claim =
        request_ledger::Begin(tx, other, Rpc::kCreateSite, kId, SiteRequest("FRA2"));
    REQUIRE(claim.ok());
    CHECK_FALSE(claim->replay);  // scoped per organization: a fresh claim
  }
  CHECK(db.Count("SELECT count(*) FROM client_requests") == 1);
}

TEST_CASE("a write that fails rolls its claim back, so its retry runs again") {
  testing::TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  auto conn = db.Connect();
  {
    pqxx::work tx(*conn);
    absl::StatusOr<request_ledger::Claim> claim =
        request_ledger::Begin(tx, org, Rpc::kCreateSite, kId, SiteRequest("FRA1"));
    REQUIRE(claim.ok());
    tx.abort();  // what pool.Transact does with a non-OK result
  }
  CHECK(db.Count("SELECT count(*) FROM client_requests") == 0);
  Complete(*conn, org, SiteRequest("FRA1"), SiteAnswer("FRA1"));  // not a replay: runs again
  CHECK(db.Count("SELECT count(*) FROM client_requests") == 1);
}

TEST_CASE("a claim without an answer cannot commit") {
  testing::TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  auto conn = db.Connect();
  pqxx::work tx(*conn);
  REQUIRE(request_ledger::Begin(tx, org, Rpc::kCreateSite, kId, SiteRequest("FRA1")).ok());
  CHECK_THROWS(tx.commit());
  CHECK(db.Count("SELECT count(*) FROM client_requests") == 0);
}

TEST_CASE("without a request id nothing is claimed or stored") {
  testing::TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  auto conn = db.Connect();
  pqxx::work tx(*conn);
  v1::CreateSiteRequest req = SiteRequest("FRA1");
  req.clear_request_id();
  absl::StatusOr<request_ledger::Claim> claim =
      request_ledger::Begin(tx, org, Rpc::kCreateSite, "", req);
  REQUIRE(claim.ok());
  CHECK_FALSE(claim->replay);
  REQUIRE(request_ledger::Finish(tx, *claim, SiteAnswer("FRA1")).ok());
  tx.commit();
  CHECK(db.Count("SELECT count(*) FROM client_requests") == 0);
}

TEST_CASE("a concurrent claim of the same id waits for the first and replays its answer") {
  testing::TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  auto first_conn = db.Connect();
  auto second_conn = db.Connect();
  pqxx::work first(*first_conn);
  absl::StatusOr<request_ledger::Claim> first_claim =
      request_ledger::Begin(first, org, Rpc::kCreateSite, kId, SiteRequest("FRA1"));
  REQUIRE(first_claim.ok());

  auto second = std::async(std::launch::async, [&]() -> absl::StatusOr<std::string> {
    pqxx::work tx(*second_conn);
    absl::StatusOr<request_ledger::Claim> claim =
        request_ledger::Begin(tx, org, Rpc::kCreateSite, kId, SiteRequest("FRA1"));
    if (!claim.ok()) return claim.status();
    if (!claim->replay) return std::string("claimed twice");
    return claim->stored_response;
  });
  // The second call is parked on the primary key while the first is open.
  CHECK(second.wait_for(std::chrono::milliseconds(500)) == std::future_status::timeout);
  REQUIRE(request_ledger::Finish(first, *first_claim, SiteAnswer("FRA1")).ok());
  first.commit();
  absl::StatusOr<std::string> answer = second.get();
  REQUIRE(answer.ok());
  CHECK(*answer == SiteAnswer("FRA1").SerializeAsString());
  CHECK(db.Count("SELECT count(*) FROM client_requests") == 1);
}

TEST_CASE(
    "a write committed after its caller's deadline: the database refuses it (DEADLINE_EXCEEDED "
    "CALLER_DEADLINE_PASSED), no claim, nothing written; in time it commits") {
  testing::TestDatabase db;
  const std::string org = testing::CreateOrg(db, "acme");
  std::unique_ptr<DbPool> pool = db.MakePool(2);
  // The write: an organization row, then a wait in the database (a lock wait, a slow
  // statement) that outlasts a 200 ms deadline.
  auto write = [&](const std::string& name, double seconds) {
    return [&, name, seconds](pqxx::work& tx) -> absl::Status {
      tx.exec_params("INSERT INTO organizations (name) VALUES ($1)", name);
      tx.exec_params("SELECT pg_sleep($1)", seconds);
      return absl::OkStatus();
    };
  };
  v1::Site out;
  bool replayed = false;
  absl::Status late;
  {
    CallDeadlineScope deadline(absl::Now() + absl::Milliseconds(200));
    late = request_ledger::TransactOnce(*pool, org, Rpc::kCreateSite, kId, SiteRequest("FRA1"),
                                        &out, &replayed, write("late", 0.4));
  }
  INFO(absl::StatusCodeToString(late.code()) << ": " << late.message());
  CHECK(late.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(ReasonOf(late) == v1::CALLER_DEADLINE_PASSED);
  CHECK(db.Count("SELECT count(*) FROM client_requests") == 0);
  CHECK(db.Count("SELECT count(*) FROM organizations WHERE name = 'late'") == 0);

  // The retry with the same id, in time, runs the write afresh; so does a call without one.
  {
    CallDeadlineScope deadline(absl::Now() + absl::Seconds(30));
    REQUIRE(request_ledger::TransactOnce(*pool, org, Rpc::kCreateSite, kId, SiteRequest("FRA1"),
                                         &out, &replayed, write("in-time", 0))
                .ok());
    CHECK_FALSE(replayed);
  }
  REQUIRE(request_ledger::TransactOnce(*pool, org, Rpc::kCreateSite, "", SiteRequest("FRA1"), &out,
                                       &replayed, write("no-deadline", 0.3))
              .ok());
  CHECK(db.Count("SELECT count(*) FROM client_requests") == 1);
  CHECK(db.Count("SELECT count(*) FROM organizations WHERE name IN ('in-time', 'no-deadline')") ==
        2);
}

}  // namespace
}  // namespace dcl
