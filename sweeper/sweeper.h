// The sweeper: housekeeping that moves lapsed holds to `expired`, releases lapsed rack
// reservations and deletes client request ids past their retention, batch by batch, so that abandoned checkouts return machines and rack units to
// stock within an interval.
//
// The sweeper is a cleaner, not a guard. Every deadline is enforced where it is used (Convert
// refuses a lapsed hold; the booking write path releases a lapsed rack reservation it collides
// with), so a sweep that runs late, twice, or not at all never sells anything twice; it only
// puts the books in order. The database's clock (now()) decides what is due, never this
// process's clock.
//
// There is deliberately NO feature switch here. The datacenter module has a global rollout
// switch (feature_settings); honouring it in the sweeper would mean that switching the module
// off leaves machines held forever for orders nobody can see any more. A switch whose side
// effect is a disabled time limit is a leak.
//
// Concurrency: each batch is one short transaction that picks its rows with
// FOR UPDATE SKIP LOCKED, so two sweepers, or a sweeper and a Convert, never wait on each other:
// a row someone else holds is left for the next pass, and whichever transaction commits first
// wins while the other sees the new state. Stopping (SIGTERM) takes effect between batches, so
// a batch is either committed whole or not at all.
//
// Ownership: the sweeper writes only its own sweeper_status rows. Each batch is a call into the
// owner of the rows it changes, inside the batch's transaction: the reservation store
// (reservation::ExpireLapsedHolds), the booking write path (occupancy::ReleaseLapsedReservations,
// the same release statement as every other release) and the request ledger
// (request_ledger::DeleteExpired).
#ifndef DCL_SWEEPER_SWEEPER_H_
#define DCL_SWEEPER_SWEEPER_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "services/common/db.h"

namespace dcl {

// Time as the daemon loop sees it: when to sweep next and how long a sweep took. Tests inject a
// fake one to run the loop without waiting. (Expiry itself is decided by the database clock.)
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() = 0;
  // Blocks until `deadline` or until `stop` is notified, whichever comes first.
  virtual void SleepUntil(absl::Time deadline, absl::Notification& stop) = 0;
};

// The process's real clock.
Clock& RealClock();

struct SweeperOptions {
  // Recorded in sweeper_status.name; one row per sweeper instance.
  std::string name = "sweeper";
  // Time between the end of one sweep and the start of the next.
  absl::Duration interval = absl::Seconds(60);
  // Rows per transaction. Small, so that the sweep's commits interleave with the services': an
  // expiry is never a HOT update (about 1,171 bytes of WAL per row), and a batch of 1,000 made
  // every Reserve committing behind it wait for its WAL (Reserve p99 at 300 calls/s during a
  // sweep of 20,000 lapsed holds: 2.93x without a sweep; with batches of 20, 1.14x;
  // docs/performance.md, "Sweeper").
  int batch_size = 20;
  // The pace of a sweep with more than a batch to do, in rows per second (0: no pause between
  // batches). A backlog is housekeeping: worked off at this rate it leaves the database to the
  // services' calls.
  int max_rows_per_second = 0;
  // How long a client request id is kept (services/common/request_ledger.h): a retry later than
  // this runs its write again. Long enough for any client's retry loop and a weekend's outage.
  absl::Duration request_retention = absl::Hours(7 * 24);
  // The sites' capacity gauges (RefreshCapacityGauges), refreshed after each sweep of Run():
  // the forecast's window, and at most this many sites (by id; 0: no gauges).
  int capacity_window_days = 30;
  int capacity_max_sites = 1000;
};

// What one sweep did.
struct SweepResult {
  int64_t reservations_expired = 0;
  int64_t bookings_released = 0;
  int64_t requests_deleted = 0;  // client request ids past their retention
  int batches = 0;  // committed batches (transactions that changed rows)
  absl::Duration duration;
  // False when a stop request ended the sweep between two batches (rows may still be due).
  bool complete = true;
};

// Who the sweeper says it is in the rows it ends (reservations.ended_by, bookings.released_by).
inline constexpr char kSweeperActor[] = "sweeper";

class Sweeper {
 public:
  // `pool` and `clock` must outlive the sweeper.
  Sweeper(DbPool& pool, SweeperOptions options, Clock& clock = RealClock());
  Sweeper(const Sweeper&) = delete;
  Sweeper& operator=(const Sweeper&) = delete;

  // One sweep: expires due holds batch by batch until none is left, then releases lapsed rack
  // reservation bookings the same way, then deletes client request ids older than the
  // retention the same way, then records the success in sweeper_status. Stops
  // between batches once RequestStop() was called (result.complete = false, nothing recorded).
  // A database failure ends the sweep with its status (already committed batches stay) and is
  // recorded as the last failure when the database still answers.
  absl::StatusOr<SweepResult> SweepOnce();

  // The capacity of every site (up to capacity_max_sites), as GetSiteCapacity computes it with
  // the median typical device, set into the gauges dcl_site_capacity_free,
  // dcl_site_capacity_stranded and dcl_site_capacity_days_to_exhaustion ({site_id, dimension};
  // +Inf days when the net rate is 0 or negative). One read-only transaction, a few indexed
  // statements per site, once per interval: the cost does not grow with scrapes.
  absl::Status RefreshCapacityGauges();

  // The daemon: sweeps, sleeps one interval, and again, until RequestStop(). A failed sweep is
  // logged and retried at the next interval; nothing here ends the loop but a stop request.
  void Run();

  // Thread-safe; may be called from a signal-handling thread. Idempotent.
  void RequestStop();
  bool stop_requested() const { return stop_.HasBeenNotified(); }

  // Counters for tests and logs. The process's metrics (metrics.h) carry the same and more:
  // dcl_sweeper_sweeps_total{outcome}, dcl_sweeper_reservations_expired_total,
  // dcl_sweeper_bookings_released_total (per committed batch, so a sweep that fails half-way
  // counts what it ended) and dcl_sweeper_last_success_timestamp_seconds (by `clock`).
  int64_t sweeps_succeeded() const { return sweeps_succeeded_.load(); }
  int64_t sweeps_failed() const { return sweeps_failed_.load(); }

 private:
  // One transaction each, one call into the rows' owner; the number of rows changed.
  absl::StatusOr<int64_t> ExpireReservationBatch();
  absl::StatusOr<int64_t> ReleaseBookingBatch();
  absl::StatusOr<int64_t> DeleteRequestBatch();
  absl::Status RecordSuccess(const SweepResult& result);
  void RecordFailure(const absl::Status& status);

  DbPool& pool_;
  const SweeperOptions options_;
  Clock& clock_;
  absl::Notification stop_;
  std::atomic<int64_t> sweeps_succeeded_{0};
  std::atomic<int64_t> sweeps_failed_{0};
};

}  // namespace dcl

#endif  // DCL_SWEEPER_SWEEPER_H_
