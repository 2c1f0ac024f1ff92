// The move workflow against a real PostgreSQL: promotion keeps the booking id, the destination
// is never free, races decided by the database, the table's refusals, the frozen preflight,
// the append-only history, the job reference and the one-site CHECK.
#include "services/moves/move_logic.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/db.h"
#include "schema/migrator.h"
#include "services/common/status.h"
#include "tests/moves/move_test_world.h"
#include "tests/support/barrier.h"

namespace dcl::moves {
namespace {

using testing::MoveWorld;

std::set<std::string> ActiveSlots(const MoveWorld& w, const std::string& booking_id) {
  std::set<std::string> slots;
  for (const auto& row : w.db.Exec(
           absl::StrCat("SELECT rack_id::text || '/' || side || '/' || unit FROM booking_slots "
                        "WHERE booking_id = '",
                        booking_id, "' AND released_at IS NULL"))) {
    slots.insert(row[0].as<std::string>());
  }
  return slots;
}

void AdvanceToAwaitingVerification(MoveWorld& w, const std::string& id) {
  w.MustAdvance(id, v1::MOVE_APPROVED);
  w.MustAdvance(id, v1::MOVE_IN_PROGRESS);
  w.MustAdvance(id, v1::MOVE_AWAITING_VERIFICATION);
}

TEST_CASE(
    "completing a move promotes the hold: same booking id, old placement released, "
    "in one transaction") {
  MoveWorld w;
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 20);
  REQUIRE(move.ok());
  CHECK(move->state() == v1::MOVE_PLANNED);
  const std::string hold = move->move_hold_booking_id();
  REQUIRE(!hold.empty());
  CHECK(w.db.Scalar(absl::StrCat("SELECT kind FROM bookings WHERE id = '", hold, "'")) ==
        "move_hold");
  const std::set<std::string> held = ActiveSlots(w, hold);
  CHECK(held.size() == 4);  // 2U, full depth: front and rear

  AdvanceToAwaitingVerification(w, move->id());
  // Another session samples (hold kind, old placement active, move state) in one snapshot for
  // as long as the completion runs: it sees the state before or the state after, never a mix.
  std::atomic<bool> stop{false};
  std::set<std::string> observed;
  std::thread observer([&] {
    auto conn = w.db.Connect();
    const std::string sample = absl::StrCat(
        "SELECT (SELECT kind FROM bookings WHERE id = '", hold,
        "') || '/' || "
        "(SELECT (released_at IS NULL)::text FROM bookings WHERE id = '",
        w.source_booking, "') || '/' || (SELECT state FROM moves WHERE id = '", move->id(), "')");
    do {
      pqxx::nontransaction tx(*conn);
      observed.insert(tx.exec1(sample)[0].as<std::string>());
    } while (!stop.load());
  });
  v1::Move done = w.MustAdvance(move->id(), v1::MOVE_COMPLETED);
  stop = true;
  observer.join();
  CHECK(done.state() == v1::MOVE_COMPLETED);
  for (const std::string& seen : observed) {
    INFO(seen);
    CHECK((seen == "move_hold/true/awaiting_verification" || seen == "placement/false/completed"));
  }
  CHECK(done.move_hold_booking_id() == hold);

  // The same booking, now the placement, with exactly the same slot rows, never released.
  CHECK(w.db.Scalar(absl::StrCat("SELECT kind || '/' || (expires_at IS NULL) || '/' || "
                                 "(released_at IS NULL) FROM bookings WHERE id = '",
                                 hold, "'")) == "placement/true/true");
  CHECK(ActiveSlots(w, hold) == held);
  CHECK(w.db.Count(absl::StrCat("SELECT count(*) FROM booking_slots WHERE booking_id = '", hold,
                                "'")) == 4);
  // The old placement is released; the device has exactly one active placement, the hold.
  CHECK(w.db.Scalar(absl::StrCat("SELECT released_at IS NOT NULL FROM bookings WHERE id = '",
                                 w.source_booking, "'")) == "t");
  CHECK(ActiveSlots(w, w.source_booking).empty());
  CHECK(w.db.Scalar(absl::StrCat("SELECT id::text FROM bookings WHERE device_id = '", w.device,
                                 "' AND kind = 'placement' AND released_at IS NULL")) == hold);
  // One transaction: the release of the old placement and the move's end carry the same now()
  // (the transaction's start time), and an observer never saw a mix (see below).
  CHECK(w.db.Scalar(absl::StrCat(
            "SELECT b.released_at = m.ended_at FROM bookings b, moves m WHERE b.id = '",
            w.source_booking, "' AND m.id = '", move->id(), "'")) == "t");
  // The history ends at the destination.
  CHECK(w.db.Scalar(absl::StrCat("SELECT rack_id::text || '/' || event FROM location_history "
                                 "WHERE device_id = '",
                                 w.device, "' ORDER BY id DESC LIMIT 1")) ==
        absl::StrCat(w.rack_b, "/move_completed"));
  CHECK(w.db.Scalar(absl::StrCat("SELECT status FROM jobs WHERE id = '", done.job_id(), "'")) ==
        "succeeded");
}

TEST_CASE(
    "while a move is in progress, placing another device into its destination is "
    "UNIT_OCCUPIED") {
  MoveWorld w;
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 20);
  REQUIRE(move.ok());
  w.MustAdvance(move->id(), v1::MOVE_APPROVED);
  w.MustAdvance(move->id(), v1::MOVE_IN_PROGRESS);
  CHECK(w.ProcessState(w.device) == "moving");

  const std::string other = testing::CreateDevice(w.db, w.org, w.site);
  absl::StatusOr<v1::Booking> placed = w.TryPlace(other, w.rack_b, v1::SIDE_FRONT, 21);
  REQUIRE_FALSE(placed.ok());
  CHECK(ReasonOf(placed.status()) == v1::UNIT_OCCUPIED);
  auto detail = GetErrorDetail(placed.status());
  REQUIRE(detail.has_value());
  REQUIRE(detail->colliding_slots_size() >= 1);
  CHECK(detail->colliding_slots(0).unit() == 21);
}

TEST_CASE("during the promotion a concurrent placement into the destination never succeeds") {
  MoveWorld w;
  constexpr int kRounds = 12;
  int placements_won = 0;
  int completed = 0;
  for (int round = 0; round < kRounds; ++round) {
    // A fresh device and move per round; destinations do not overlap between rounds.
    testing::DeviceSpec spec;
    spec.height_units = 1;
    const std::string dev = testing::CreateDevice(w.db, w.org, w.site, spec);
    w.Place(dev, w.rack_a, v1::SIDE_FRONT, 20 + round);
    absl::StatusOr<v1::Move> move = w.Start(dev, w.rack_b, v1::SIDE_FRONT, 1 + round);
    REQUIRE(move.ok());
    AdvanceToAwaitingVerification(w, move->id());
    const std::string intruder = testing::CreateDevice(w.db, w.org, w.site, spec);

    testing::Barrier barrier(2);
    absl::Status promote_status, place_status;
    std::thread promoter([&] {
      barrier.ArriveAndWait();
      promote_status = w.Advance(move->id(), v1::MOVE_COMPLETED).status();
    });
    std::thread placer([&] {
      barrier.ArriveAndWait();
      place_status = w.TryPlace(intruder, w.rack_b, v1::SIDE_FRONT, 1 + round).status();
    });
    promoter.join();
    placer.join();
    CHECK(promote_status.ok());
    if (promote_status.ok()) ++completed;
    if (place_status.ok()) ++placements_won;
    CHECK(ReasonOf(place_status) == v1::UNIT_OCCUPIED);
  }
  CHECK(completed == kRounds);
  CHECK(placements_won == 0);
  // No slot of rack B is held twice.
  CHECK(w.db.Count(absl::StrCat("SELECT count(*) FROM (SELECT side, unit FROM booking_slots "
                                "WHERE rack_id = '",
                                w.rack_b,
                                "' AND released_at IS NULL "
                                "GROUP BY side, unit HAVING count(*) > 1) t")) == 0);
}

TEST_CASE("two StartMove for one device at once: one move, the other a readable rejection") {
  MoveWorld w;
  testing::Barrier barrier(2);
  absl::StatusOr<v1::Move> first, second;
  std::thread a([&] {
    barrier.ArriveAndWait();
    first = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 5);
  });
  std::thread b([&] {
    barrier.ArriveAndWait();
    second = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 30);
  });
  a.join();
  b.join();
  REQUIRE(first.ok() != second.ok());
  const absl::Status refused = first.ok() ? second.status() : first.status();
  CHECK(refused.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(ReasonOf(refused) == v1::MOVE_ALREADY_OPEN);
  CHECK(w.db.Count("SELECT count(*) FROM moves") == 1);
  CHECK(w.db.Count("SELECT count(*) FROM bookings WHERE kind = 'move_hold'") == 1);
}

TEST_CASE("two clients advancing one move at once: one change, the other INVALID_TRANSITION") {
  MoveWorld w;
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 5);
  REQUIRE(move.ok());
  testing::Barrier barrier(2);
  absl::Status first, second;
  std::thread a([&] {
    barrier.ArriveAndWait();
    first = w.Advance(move->id(), v1::MOVE_APPROVED).status();
  });
  std::thread b([&] {
    barrier.ArriveAndWait();
    second = w.Advance(move->id(), v1::MOVE_APPROVED).status();
  });
  a.join();
  b.join();
  REQUIRE(first.ok() != second.ok());
  CHECK(ReasonOf(first.ok() ? second : first) == v1::INVALID_TRANSITION);
  CHECK(w.db.Count(absl::StrCat("SELECT count(*) FROM move_events WHERE move_id = '", move->id(),
                                "'")) == 2);
}

TEST_CASE("the open-move index refuses a second open move even without the preflight") {
  MoveWorld w;
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 5);
  REQUIRE(move.ok());
  absl::StatusOr<GuardedResult> r = w.pool->Transact([&](pqxx::work& tx) {
    return absl::StatusOr<GuardedResult>(GuardedExec(
        tx,
        "INSERT INTO moves (org_id, device_id, source_site_id, source_rack_id, "
        "source_booking_id, destination_site_id, destination_rack_id, destination_side, "
        "destination_unit, move_hold_booking_id, state, preflight, created_by, updated_by) "
        "SELECT org_id, device_id, source_site_id, source_rack_id, source_booking_id, "
        "destination_site_id, destination_rack_id, destination_side, 30, move_hold_booking_id, "
        "'draft', preflight, 'x', 'x' FROM moves WHERE id = $1[1]::uuid RETURNING id",
        {move->id()}));
  });
  REQUIRE(r.ok());
  CHECK(r->violated_constraint == "moves_one_open_per_device");
}

TEST_CASE("invalid transitions are rejected with INVALID_TRANSITION and the allowed targets") {
  MoveWorld w;
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 20);
  REQUIRE(move.ok());
  w.MustAdvance(move->id(), v1::MOVE_APPROVED);
  w.MustAdvance(move->id(), v1::MOVE_IN_PROGRESS);

  for (v1::MoveState target : {v1::MOVE_CANCELLED, v1::MOVE_APPROVED, v1::MOVE_COMPLETED}) {
    INFO(v1::MoveState_Name(target));
    absl::StatusOr<v1::Move> refused = w.Advance(move->id(), target);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(ReasonOf(refused.status()) == v1::INVALID_TRANSITION);
    auto detail = GetErrorDetail(refused.status());
    REQUIRE(detail.has_value());
    CHECK(std::vector<std::string>(detail->allowed_targets().begin(),
                                   detail->allowed_targets().end()) ==
          std::vector<std::string>{"awaiting_verification", "needs_reconcile", "failed"});
  }
  // CancelMove is the same rule.
  v1::CancelMoveRequest cancel;
  cancel.set_move_id(move->id());
  v1::Move unused;
  CHECK(ReasonOf(w.logic.CancelMove(w.op, cancel, &unused)) == v1::INVALID_TRANSITION);
  // Nothing changed: still in progress, the hold still active, one event per accepted change.
  CHECK(w.db.Scalar(absl::StrCat("SELECT state FROM moves WHERE id = '", move->id(), "'")) ==
        "in_progress");
  CHECK(w.db.Count(absl::StrCat("SELECT count(*) FROM move_events WHERE move_id = '", move->id(),
                                "'")) == 3);
  // A terminal state lists no targets.
  w.MustAdvance(move->id(), v1::MOVE_FAILED);
  absl::StatusOr<v1::Move> after_end = w.Advance(move->id(), v1::MOVE_PLANNED);
  REQUIRE(ReasonOf(after_end.status()) == v1::INVALID_TRANSITION);
  CHECK(GetErrorDetail(after_end.status())->allowed_targets_size() == 0);
}

TEST_CASE("a device in staging goes back to staging after a completed move, not to normal") {
  MoveWorld w("staging");
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_REAR, 7);
  REQUIRE(move.ok());
  CHECK(w.db.Scalar(absl::StrCat("SELECT preflight->>'process_state' FROM moves WHERE id = '",
                                 move->id(), "'")) == "staging");
  w.MustAdvance(move->id(), v1::MOVE_APPROVED);
  w.MustAdvance(move->id(), v1::MOVE_IN_PROGRESS);
  CHECK(w.ProcessState(w.device) == "moving");
  w.MustAdvance(move->id(), v1::MOVE_AWAITING_VERIFICATION);
  w.MustAdvance(move->id(), v1::MOVE_COMPLETED);
  CHECK(w.ProcessState(w.device) == "staging");
}

TEST_CASE("the preflight keeps the state, the source placement and the destination it checked") {
  MoveWorld w("staging");
  // A rack whose first unit is 0: a zero unit is written out, not left away.
  testing::RackSpec from_zero{"C"};
  from_zero.first_unit = 0;
  const std::string rack_c = testing::CreateRack(w.db, w.org, w.site, from_zero);
  absl::StatusOr<v1::Move> move = w.Start(w.device, rack_c, v1::SIDE_FRONT, 0);
  REQUIRE(move.ok());
  // Key for key what the move returns and what the restore at the end reads (process_state).
  const std::string expected =
      absl::StrCat(R"({"process_state": "staging", "source": {"booking_id": ")", w.source_booking,
                   R"(", "rack_id": ")", w.rack_a, R"(", "site_id": ")", w.site,
                   R"(", "slots": [{"side": "front", "unit": 10}, {"side": "front", "unit": 11}, )",
                   R"({"side": "rear", "unit": 10}, {"side": "rear", "unit": 11}]}, )",
                   R"("destination": {"rack_id": ")", rack_c, R"(", "side": "front", "unit": 0}, )",
                   R"("checks": ["device_in_organization", "not_in_transit", "no_open_move", )",
                   R"("device_placed", "destination_rack_in_organization"]})");
  CHECK(w.db.Scalar(absl::StrCat("SELECT preflight::text FROM moves WHERE id = '", move->id(),
                                 "'")) == move->preflight_json());
  // The expected text as PostgreSQL spells that value (jsonb orders keys and spaces them).
  INFO(move->preflight_json());
  CHECK(w.db.Scalar(absl::StrCat("SELECT '", expected, "'::jsonb::text")) ==
        move->preflight_json());
}

TEST_CASE(
    "needs_reconcile settled as not moved fails the move: hold released, source kept, "
    "process state restored") {
  MoveWorld w("staging");
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 7);
  REQUIRE(move.ok());
  w.MustAdvance(move->id(), v1::MOVE_APPROVED);
  w.MustAdvance(move->id(), v1::MOVE_IN_PROGRESS);
  w.MustAdvance(move->id(), v1::MOVE_NEEDS_RECONCILE);
  // The destination stays held while nobody knows where the machine is.
  CHECK(ActiveSlots(w, move->move_hold_booking_id()).size() == 4);
  CHECK(w.db.Scalar(absl::StrCat("SELECT rack_id IS NULL FROM location_history WHERE "
                                 "move_state = 'needs_reconcile' AND move_id = '",
                                 move->id(), "'")) == "t");
  // Leaving needs_reconcile needs the observation, and the matching one.
  CHECK(ReasonOf(w.Advance(move->id(), v1::MOVE_FAILED).status()) == v1::INVALID_INPUT);
  CHECK(ReasonOf(w.Advance(move->id(), v1::MOVE_FAILED, v1::OBSERVATION_FOUND_AT_DESTINATION)
                     .status()) == v1::INVALID_INPUT);
  v1::Move failed = w.MustAdvance(move->id(), v1::MOVE_FAILED, v1::OBSERVATION_NOT_MOVED);
  CHECK(failed.state() == v1::MOVE_FAILED);
  CHECK(ActiveSlots(w, move->move_hold_booking_id()).empty());
  CHECK(ActiveSlots(w, w.source_booking).size() == 4);
  CHECK(w.ProcessState(w.device) == "staging");
  CHECK(w.db.Scalar(absl::StrCat("SELECT observation FROM move_events WHERE move_id = '",
                                 move->id(), "' ORDER BY sequence DESC LIMIT 1")) == "not_moved");
}

TEST_CASE("migration 0007 makes devices of moves opened under the old rule moving, and only those") {
  MoveWorld w("staging");
  absl::StatusOr<v1::Move> open = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 7);
  REQUIRE(open.ok());
  // A move opened before the rule left its device as it was; a device whose move ended keeps
  // its state.
  w.db.Exec(absl::StrCat("UPDATE devices SET process_state = 'staging' WHERE id = '", w.device,
                         "'"));
  const std::string ended = testing::CreateDevice(w.db, w.org, w.site);
  w.Place(ended, w.rack_a, v1::SIDE_FRONT, 30);
  absl::StatusOr<v1::Move> cancelled = w.Start(ended, w.rack_b, v1::SIDE_FRONT, 30);
  REQUIRE(cancelled.ok());
  w.MustAdvance(cancelled->id(), v1::MOVE_CANCELLED);
  REQUIRE(w.ProcessState(ended) == "normal");

  std::string migration;
  for (const MigrationFile& file : EmbeddedMigrationFiles()) {
    if (file.file_name == "0007_moving_while_held.sql") migration = file.sql;
  }
  REQUIRE_FALSE(migration.empty());
  w.db.Exec(migration);
  CHECK(w.ProcessState(w.device) == "moving");
  CHECK(w.ProcessState(ended) == "normal");
  // And the move still ends in the state the device had before it.
  w.MustAdvance(open->id(), v1::MOVE_CANCELLED);
  CHECK(w.ProcessState(w.device) == "staging");
}

TEST_CASE("needs_reconcile settled as found at destination completes by promotion") {
  MoveWorld w;
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 7);
  REQUIRE(move.ok());
  w.MustAdvance(move->id(), v1::MOVE_APPROVED);
  w.MustAdvance(move->id(), v1::MOVE_IN_PROGRESS);
  w.MustAdvance(move->id(), v1::MOVE_NEEDS_RECONCILE);
  v1::Move done =
      w.MustAdvance(move->id(), v1::MOVE_COMPLETED, v1::OBSERVATION_FOUND_AT_DESTINATION);
  CHECK(done.state() == v1::MOVE_COMPLETED);
  CHECK(w.db.Scalar(absl::StrCat("SELECT kind FROM bookings WHERE id = '",
                                 move->move_hold_booking_id(), "'")) == "placement");
  CHECK(w.ProcessState(w.device) == "normal");
}

TEST_CASE("the source placement cannot be released by hand while its move is open") {
  MoveWorld w;
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 7);
  REQUIRE(move.ok());
  AdvanceToAwaitingVerification(w, move->id());
  // The occupancy service refuses to release the move hold: only the move releases it.
  v1::ReleaseBookingRequest release_hold;
  release_hold.set_booking_id(move->move_hold_booking_id());
  v1::Booking unused;
  CHECK(ReasonOf(w.occupancy.ReleaseBooking(w.op, release_hold, &unused)) == v1::WRONG_STATE);
  // Nor the source placement: the machine may still stand there until the move ends.
  v1::ReleaseBookingRequest release;
  release.set_booking_id(w.source_booking);
  release.set_reason("took it out by hand");
  v1::Booking released;
  absl::Status refused = w.occupancy.ReleaseBooking(w.op, release, &released);
  CHECK(refused.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(ReasonOf(refused) == v1::MOVE_ALREADY_OPEN);
  CHECK(ActiveSlots(w, w.source_booking).size() == 4);
  v1::Move done = w.MustAdvance(move->id(), v1::MOVE_COMPLETED);
  CHECK(done.state() == v1::MOVE_COMPLETED);
  CHECK(w.db.Scalar(absl::StrCat("SELECT kind FROM bookings WHERE id = '",
                                 move->move_hold_booking_id(), "'")) == "placement");
  CHECK(ActiveSlots(w, w.source_booking).empty());  // released by the move, in its transaction
}

TEST_CASE("once the move is cancelled the source placement can be released by hand") {
  MoveWorld w;
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 7);
  REQUIRE(move.ok());
  v1::CancelMoveRequest cancel;
  cancel.set_move_id(move->id());
  v1::Move cancelled;
  REQUIRE(w.logic.CancelMove(w.op, cancel, &cancelled).ok());
  v1::ReleaseBookingRequest release;
  release.set_booking_id(w.source_booking);
  v1::Booking released;
  REQUIRE(w.occupancy.ReleaseBooking(w.op, release, &released).ok());
  CHECK(ActiveSlots(w, w.source_booking).empty());
}

TEST_CASE("cancelling a planned move releases the destination and keeps the placement") {
  MoveWorld w;
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 7, true);
  REQUIRE(move.ok());
  CHECK(move->state() == v1::MOVE_DRAFT);
  v1::CancelMoveRequest cancel;
  cancel.set_move_id(move->id());
  cancel.set_note("customer changed their mind");
  v1::Move cancelled;
  REQUIRE(w.logic.CancelMove(w.op, cancel, &cancelled).ok());
  CHECK(cancelled.state() == v1::MOVE_CANCELLED);
  CHECK(ActiveSlots(w, move->move_hold_booking_id()).empty());
  CHECK(ActiveSlots(w, w.source_booking).size() == 4);
  // The destination can be used again, and a new move for the device can start.
  CHECK(w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 7).ok());
}

TEST_CASE("an occupied destination is the booking path's UNIT_OCCUPIED and leaves nothing") {
  MoveWorld w;
  const std::string other = testing::CreateDevice(w.db, w.org, w.site);
  w.Place(other, w.rack_b, v1::SIDE_FRONT, 21);
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 20);
  REQUIRE_FALSE(move.ok());
  CHECK(ReasonOf(move.status()) == v1::UNIT_OCCUPIED);
  CHECK(w.db.Count("SELECT count(*) FROM moves") == 0);
  CHECK(w.db.Count("SELECT count(*) FROM jobs") == 0);
  CHECK(w.db.Count("SELECT count(*) FROM bookings WHERE kind = 'move_hold'") == 0);
  CHECK(w.db.Count("SELECT count(*) FROM location_history") == 0);
}

TEST_CASE("preflight refusals are readable and write nothing") {
  MoveWorld w;
  const std::string loose = testing::CreateDevice(w.db, w.org, w.site);
  CHECK(ReasonOf(w.Start(loose, w.rack_b, v1::SIDE_FRONT, 5).status()) == v1::DEVICE_NOT_PLACED);
  CHECK(ReasonOf(w.Start("00000000-0000-4000-8000-000000000001", w.rack_b, v1::SIDE_FRONT, 5)
                     .status()) == v1::NOT_FOUND);
  CHECK(ReasonOf(w.Start(w.device, "00000000-0000-4000-8000-000000000001", v1::SIDE_FRONT, 5)
                     .status()) == v1::NOT_FOUND);
  CHECK(ReasonOf(w.Start(w.device, w.rack_b, v1::SIDE_UNSPECIFIED, 5).status()) ==
        v1::INVALID_INPUT);
  CHECK(ReasonOf(w.Start("not-a-uuid", w.rack_b, v1::SIDE_FRONT, 5).status()) == v1::INVALID_INPUT);
  // Unit ranges are the gate's (kIntegerRanges, tests/common/request_limits_test); behind it the
  // planner still refuses a unit outside the rack, whatever the number.
  CHECK(ReasonOf(w.Start(w.device, w.rack_b, v1::SIDE_FRONT, -1).status()) == v1::OUT_OF_BOUNDS);
  CHECK(ReasonOf(w.Start(w.device, w.rack_b, v1::SIDE_FRONT, INT32_MAX).status()) ==
        v1::OUT_OF_BOUNDS);
  w.db.Exec(
      absl::StrCat("UPDATE devices SET process_state = 'in_transit' WHERE id = '", w.device, "'"));
  CHECK(ReasonOf(w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 5).status()) == v1::WRONG_STATE);
  CHECK(w.db.Count("SELECT count(*) FROM moves") == 0);
}

TEST_CASE("a move of another organization is NOT_FOUND") {
  MoveWorld w;
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 5);
  REQUIRE(move.ok());
  const std::string other_org = testing::CreateOrg(w.db, "globex");
  const Principal stranger = testing::PrincipalFor(other_org, Role::kDcOperator);
  v1::GetMoveRequest get;
  get.set_move_id(move->id());
  v1::Move out;
  CHECK(ReasonOf(w.logic.GetMove(stranger, get, &out)) == v1::NOT_FOUND);
  v1::AdvanceMoveRequest adv;
  adv.set_move_id(move->id());
  adv.set_target(v1::MOVE_APPROVED);
  CHECK(ReasonOf(w.logic.AdvanceMove(stranger, adv, &out)) == v1::NOT_FOUND);
  CHECK(ReasonOf(w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 5).status()) == v1::MOVE_ALREADY_OPEN);
}

TEST_CASE("move_events refuses UPDATE, DELETE and TRUNCATE, naming its trigger") {
  MoveWorld w;
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 5);
  REQUIRE(move.ok());
  w.MustAdvance(move->id(), v1::MOVE_APPROVED);
  const std::string before = w.db.Scalar(
      "SELECT string_agg(e::text, '|' ORDER BY id) FROM move_events e");
  CHECK_THROWS(w.db.Exec("UPDATE move_events SET note = 'rewritten'"));
  CHECK_THROWS(w.db.Exec("DELETE FROM move_events"));
  CHECK_THROWS(w.db.Exec("TRUNCATE move_events"));
  // As the tables' owner: the services' role is refused before the trigger, by its privileges
  // (location_history_test).
  DbPool owner(DbOptions{.url = w.db.url(), .pool_size = 1});
  absl::StatusOr<GuardedResult> r = owner.Transact([&](pqxx::work& tx) {
    return absl::StatusOr<GuardedResult>(
        GuardedExec(tx, "DELETE FROM move_events WHERE note <> $1[1] RETURNING id", {"x"}));
  });
  REQUIRE(r.ok());
  CHECK(r->violated_constraint == "move_events_append_only");
  CHECK(w.db.Scalar("SELECT string_agg(e::text, '|' ORDER BY id) FROM move_events e") == before);
  // Appending goes on.
  w.MustAdvance(move->id(), v1::MOVE_CANCELLED);
  CHECK(w.db.Count("SELECT count(*) FROM move_events") == 3);
}

TEST_CASE("location_history refuses UPDATE and DELETE; a correction is a new row") {
  MoveWorld w;
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 5);
  REQUIRE(move.ok());
  const int64_t rows = w.db.Count("SELECT count(*) FROM location_history");
  REQUIRE(rows == 1);
  CHECK_THROWS(w.db.Exec("UPDATE location_history SET note = 'rewritten'"));
  CHECK_THROWS(w.db.Exec("DELETE FROM location_history"));
  CHECK_THROWS(w.db.Exec("TRUNCATE location_history"));
  // The refusal carries the trigger's constraint name (read from the error field).
  // As the tables' owner: the services' role is refused before the trigger, by its privileges.
  DbPool owner(DbOptions{.url = w.db.url(), .pool_size = 1});
  absl::StatusOr<GuardedResult> r = owner.Transact([&](pqxx::work& tx) {
    return absl::StatusOr<GuardedResult>(
        GuardedExec(tx, "UPDATE location_history SET note = $1[1] RETURNING id", {"x"}));
  });
  REQUIRE(r.ok());
  CHECK(r->violated_constraint == "location_history_append_only");
  // A correction is a compensating row pointing at the one it corrects.
  w.db.Exec(absl::StrCat(
      "INSERT INTO location_history (org_id, device_id, site_id, rack_id, side, first_unit, "
      "last_unit, event, corrects_id, note, actor) SELECT org_id, device_id, site_id, rack_id, "
      "side, first_unit + 1, last_unit + 1, 'correction', id, 'off by one', 'test' "
      "FROM location_history ORDER BY id LIMIT 1"));
  CHECK(w.db.Count("SELECT count(*) FROM location_history") == rows + 1);
  CHECK(w.db.Scalar("SELECT note FROM location_history ORDER BY id LIMIT 1") == "test move");
}

TEST_CASE("deleting a job nulls the move's job reference and keeps the move") {
  MoveWorld w;
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 5);
  REQUIRE(move.ok());
  REQUIRE(!move->job_id().empty());
  w.db.Exec(absl::StrCat("DELETE FROM jobs WHERE id = '", move->job_id(), "'"));
  CHECK(w.db.Count(absl::StrCat("SELECT count(*) FROM moves WHERE id = '", move->id(),
                                "' AND job_id IS NULL")) == 1);
  // The move goes on without its job.
  AdvanceToAwaitingVerification(w, move->id());
  CHECK(w.MustAdvance(move->id(), v1::MOVE_COMPLETED).job_id().empty());
}

TEST_CASE("a cross-site move is refused by the CHECK") {
  MoveWorld w;
  const std::string far_site = testing::CreateSite(w.db, w.org, "AMS1");
  const std::string far_rack = testing::CreateRack(w.db, w.org, far_site, testing::RackSpec{"Z"});
  absl::StatusOr<v1::Move> move = w.Start(w.device, far_rack, v1::SIDE_FRONT, 5);
  REQUIRE_FALSE(move.ok());
  CHECK(ReasonOf(move.status()) == v1::CROSS_SITE_MOVE);
  CHECK(w.db.Count("SELECT count(*) FROM moves") == 0);
  CHECK(w.db.Count("SELECT count(*) FROM bookings WHERE kind = 'move_hold'") == 0);

  // The same refusal straight at the table, by the constraint's name.
  absl::StatusOr<GuardedResult> r = w.pool->Transact([&](pqxx::work& tx) {
    return absl::StatusOr<GuardedResult>(GuardedExec(
        tx,
        "INSERT INTO moves (org_id, device_id, source_site_id, source_rack_id, "
        "source_booking_id, destination_site_id, destination_rack_id, destination_side, "
        "destination_unit, state, preflight, created_by, updated_by) VALUES ($1[1]::uuid, "
        "$1[2]::uuid, $1[3]::uuid, $1[4]::uuid, $1[5]::uuid, $1[6]::uuid, $1[7]::uuid, 'front', "
        "5, 'planned', '{}', 'x', 'x') RETURNING id",
        {w.org, w.device, w.site, w.rack_a, w.source_booking, far_site, far_rack}));
  });
  REQUIRE(r.ok());
  CHECK(r->violated_constraint == "moves_same_site");
}

TEST_CASE("every change appends to location_history and move_events, in order") {
  MoveWorld w;
  absl::StatusOr<v1::Move> move = w.Start(w.device, w.rack_b, v1::SIDE_FRONT, 5);
  REQUIRE(move.ok());
  AdvanceToAwaitingVerification(w, move->id());
  w.MustAdvance(move->id(), v1::MOVE_COMPLETED);
  std::vector<std::string> events;
  for (const auto& row : w.db.Exec(
           absl::StrCat("SELECT coalesce(from_state, '-') || '>' || to_state FROM move_events "
                        "WHERE move_id = '",
                        move->id(), "' ORDER BY sequence"))) {
    events.push_back(row[0].as<std::string>());
  }
  CHECK(events == std::vector<std::string>{"->planned", "planned>approved", "approved>in_progress",
                                           "in_progress>awaiting_verification",
                                           "awaiting_verification>completed"});
  CHECK(w.db.Count(absl::StrCat("SELECT count(*) FROM location_history WHERE move_id = '",
                                move->id(), "'")) == 5);
}

TEST_CASE("ListMoves filters by state and device and pages with a token") {
  MoveWorld w;
  testing::DeviceSpec spec;
  spec.height_units = 1;
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    const std::string dev = testing::CreateDevice(w.db, w.org, w.site, spec);
    w.Place(dev, w.rack_a, v1::SIDE_FRONT, 30 + i);
    absl::StatusOr<v1::Move> move = w.Start(dev, w.rack_b, v1::SIDE_FRONT, 1 + i);
    REQUIRE(move.ok());
    ids.push_back(move->id());
  }
  w.MustAdvance(ids[0], v1::MOVE_APPROVED);
  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    v1::ListMovesRequest req;
    req.set_page_size(2);
    req.set_page_token(token);
    v1::ListMovesResponse resp;
    REQUIRE(w.logic.ListMoves(w.op, req, &resp).ok());
    for (const auto& m : resp.moves()) seen.push_back(m.id());
    token = resp.next_page_token();
    ++pages;
  } while (!token.empty() && pages < 10);
  CHECK(seen == ids);
  v1::ListMovesRequest approved;
  approved.set_state(v1::MOVE_APPROVED);
  v1::ListMovesResponse resp;
  REQUIRE(w.logic.ListMoves(w.op, approved, &resp).ok());
  REQUIRE(resp.moves_size() == 1);
  CHECK(resp.moves(0).id() == ids[0]);
  v1::ListMovesRequest bad;
  bad.set_page_token("garbage");
  CHECK(ReasonOf(w.logic.ListMoves(w.op, bad, &resp)) == v1::INVALID_INPUT);
}

}  // namespace
}  // namespace dcl::moves
