#include "sweeper/sweeper.h"

#include <spdlog/spdlog.h>

#include <array>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/metrics.h"
#include "services/common/request_ledger.h"
#include "services/occupancy/booking_store.h"
#include "services/occupancy/site_capacity.h"
#include "services/occupancy/site_capacity_store.h"
#include "services/reservation/reservation_store.h"

namespace dcl {

namespace {

struct SweeperMetrics {
  Counter& reservations_expired;
  Counter& bookings_released;
  Counter& requests_deleted;
  Counter& sweeps_succeeded;
  Counter& sweeps_failed;
  Gauge& last_success;
};

SweeperMetrics& Metrics() {
  static SweeperMetrics* metrics = [] {
    MetricsRegistry& registry = MetricsRegistry::Default();
    MetricFamily<Counter>& sweeps = registry.AddCounter(
        "dcl_sweeper_sweeps_total",
        "sweeps ended: success (every due row done and recorded in sweeper_status) or failure "
        "(database error); a sweep stopped by a signal is neither",
        {"outcome"});
    return new SweeperMetrics{
        registry
            .AddCounter("dcl_sweeper_reservations_expired_total",
                        "held reservations the sweeper moved to expired (committed batches)")
            .Get(),
        registry
            .AddCounter("dcl_sweeper_bookings_released_total",
                        "lapsed rack reservation bookings the sweeper released (committed "
                        "batches)")
            .Get(),
        registry
            .AddCounter("dcl_sweeper_client_requests_deleted_total",
                        "client request ids past their retention the sweeper deleted (committed "
                        "batches)")
            .Get(),
        sweeps.WithLabels({"success"}),
        sweeps.WithLabels({"failure"}),
        registry
            .AddGauge("dcl_sweeper_last_success_timestamp_seconds",
                      "Unix time at which this process's last successful sweep ended (0: none "
                      "yet); alert on time() minus this")
            .Get(),
    };
  }();
  return *metrics;
}

// A site's capacity per dimension (GetSiteCapacity's figures), for the capacity alert.
struct CapacityGauges {
  MetricFamily<Gauge>& free;
  MetricFamily<Gauge>& stranded;
  MetricFamily<Gauge>& days_to_exhaustion;
};

CapacityGauges& Capacity() {
  static CapacityGauges* gauges = [] {
    MetricsRegistry& registry = MetricsRegistry::Default();
    return new CapacityGauges{
        registry.AddGauge("dcl_site_capacity_free",
                          "free capacity of the site's racks per dimension (units: slots; power, "
                          "cooling: W; weight: kg); a rack whose load is not known adds nothing",
                          {"site_id", "dimension"}),
        registry.AddGauge("dcl_site_capacity_stranded",
                          "the part of free in racks where another dimension cannot take one "
                          "typical device (the placed devices' median)",
                          {"site_id", "dimension"}),
        registry.AddGauge("dcl_site_capacity_days_to_exhaustion",
                          "days until free reaches 0 at the net booking rate of the last window "
                          "(booked less released, per day); +Inf when that rate is 0 or negative",
                          {"site_id", "dimension"}),
    };
  }();
  return *gauges;
}

class RealClockImpl final : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
  void SleepUntil(absl::Time deadline, absl::Notification& stop) override {
    stop.WaitForNotificationWithDeadline(deadline);
  }
};

// Recorded on each rack reservation the sweeper releases (bookings.release_reason).
constexpr char kSweeperReleaseReason[] = "expired; released by the sweeper";

// The sweeper's own table: when each instance last completed a sweep, or failed one.
constexpr char kRecordSuccessSql[] = R"sql(
INSERT INTO sweeper_status AS s (name, last_success_at, last_reservations_expired,
                                 last_bookings_released, last_duration_ms, updated_at)
VALUES ($1, now(), $2, $3, $4, now())
ON CONFLICT (name) DO UPDATE
SET last_success_at = excluded.last_success_at,
    last_reservations_expired = excluded.last_reservations_expired,
    last_bookings_released = excluded.last_bookings_released,
    last_duration_ms = excluded.last_duration_ms,
    updated_at = excluded.updated_at
)sql";

constexpr char kRecordFailureSql[] = R"sql(
INSERT INTO sweeper_status AS s (name, last_failure_at, last_error, updated_at)
VALUES ($1, now(), $2, now())
ON CONFLICT (name) DO UPDATE
SET last_failure_at = excluded.last_failure_at,
    last_error = excluded.last_error,
    updated_at = excluded.updated_at
)sql";

// "CODE: message", without the status payload (binary ErrorDetail bytes in ToString()).
std::string Describe(const absl::Status& status) {
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ", std::string(status.message()));
}

}  // namespace

Clock& RealClock() {
  static RealClockImpl* clock = new RealClockImpl();
  return *clock;
}

Sweeper::Sweeper(DbPool& pool, SweeperOptions options, Clock& clock)
    : pool_(pool), options_(std::move(options)), clock_(clock) {
  Capacity();
  Metrics();  // registered now, so that a scrape before the first sweep shows them (as 0)
}

void Sweeper::RequestStop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
}

absl::StatusOr<int64_t> Sweeper::ExpireReservationBatch() {
  return pool_.Transact([&](pqxx::work& tx) -> absl::StatusOr<int64_t> {
    return reservation::ExpireLapsedHolds(tx, options_.batch_size, kSweeperActor);
  });
}

absl::StatusOr<int64_t> Sweeper::ReleaseBookingBatch() {
  return pool_.Transact([&](pqxx::work& tx) -> absl::StatusOr<int64_t> {
    return occupancy::ReleaseLapsedReservations(tx, options_.batch_size, kSweeperActor,
                                                kSweeperReleaseReason);
  });
}

absl::StatusOr<int64_t> Sweeper::DeleteRequestBatch() {
  return pool_.Transact([&](pqxx::work& tx) -> absl::StatusOr<int64_t> {
    return request_ledger::DeleteExpired(tx, options_.request_retention, options_.batch_size);
  });
}

absl::StatusOr<SweepResult> Sweeper::SweepOnce() {
  const absl::Time start = clock_.Now();
  SweepResult result;
  absl::Status failure;

  // Loops until a batch comes back short: then every due row that nobody else had locked is
  // done. Rows locked by someone else (a Convert, another sweeper) are left for the next pass.
  // With a pace, a full batch is followed by a pause: the next batch starts no earlier than
  // its share of a second after this one started, so a backlog is worked off at that rate and
  // leaves the database's capacity to the services (housekeeping, not a race).
  auto drain = [&](auto batch, int64_t& total, Counter& counter) -> bool {
    while (true) {
      if (stop_.HasBeenNotified()) {
        result.complete = false;
        return false;
      }
      const absl::Time batch_start = clock_.Now();
      absl::StatusOr<int64_t> changed = (this->*batch)();
      if (!changed.ok()) {
        failure = changed.status();
        return false;
      }
      total += *changed;
      if (*changed > 0) ++result.batches;
      counter.Increment(static_cast<uint64_t>(*changed));
      if (*changed < options_.batch_size) return true;
      if (options_.max_rows_per_second > 0) {
        clock_.SleepUntil(batch_start + absl::Seconds(static_cast<double>(*changed) /
                                                      options_.max_rows_per_second),
                          stop_);
      }
    }
  };
  if (drain(&Sweeper::ExpireReservationBatch, result.reservations_expired,
            Metrics().reservations_expired) &&
      drain(&Sweeper::ReleaseBookingBatch, result.bookings_released, Metrics().bookings_released)) {
    drain(&Sweeper::DeleteRequestBatch, result.requests_deleted, Metrics().requests_deleted);
  }
  result.duration = clock_.Now() - start;
  const int64_t duration_ms = absl::ToInt64Milliseconds(result.duration);

  if (!failure.ok()) {
    ++sweeps_failed_;
    Metrics().sweeps_failed.Increment();
    spdlog::warn(
        "sweep failed after {} ms: {} (expired {} holds, released {} rack reservations before "
        "the failure)",
        duration_ms, Describe(failure), result.reservations_expired, result.bookings_released);
    RecordFailure(failure);
    return failure;
  }
  if (!result.complete) {
    spdlog::info(
        "sweep stopped between batches after {} ms: expired {} holds, released {} rack "
        "reservations in {} batches",
        duration_ms, result.reservations_expired, result.bookings_released, result.batches);
    return result;
  }
  if (absl::Status recorded = RecordSuccess(result); !recorded.ok()) {
    ++sweeps_failed_;
    Metrics().sweeps_failed.Increment();
    spdlog::warn("sweep done but its status could not be recorded: {}", Describe(recorded));
    return recorded;
  }
  ++sweeps_succeeded_;
  Metrics().sweeps_succeeded.Increment();
  Metrics().last_success.Set(absl::ToDoubleSeconds(clock_.Now() - absl::UnixEpoch()));
  spdlog::info(
      "sweep: expired {} holds, released {} rack reservations, deleted {} client request ids in "
      "{} batches, {} ms",
      result.reservations_expired, result.bookings_released, result.requests_deleted,
      result.batches, duration_ms);
  return result;
}

absl::Status Sweeper::RecordSuccess(const SweepResult& result) {
  return pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    tx.exec_params(kRecordSuccessSql, options_.name, result.reservations_expired,
                   result.bookings_released, absl::ToInt64Milliseconds(result.duration));
    return absl::OkStatus();
  });
}

void Sweeper::RecordFailure(const absl::Status& status) {
  // Best effort: when the database is gone, the log line above is the record.
  const std::string error = Describe(status);
  absl::Status recorded = pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    tx.exec_params(kRecordFailureSql, options_.name, error);
    return absl::OkStatus();
  });
  if (!recorded.ok()) {
    spdlog::debug("could not record the failure: {}", Describe(recorded));
  }
}

absl::Status Sweeper::RefreshCapacityGauges() {
  if (options_.capacity_max_sites <= 0) return absl::OkStatus();
  struct SiteResult {
    std::string site_id;
    std::array<occupancy::DimensionCapacity, occupancy::kSiteDimensionCount> dimensions;
  };
  std::vector<SiteResult> results;
  absl::Status read = pool_.Transact([&](pqxx::work& tx) -> absl::Status {
    results.clear();
    for (const std::string& site_id : occupancy::ListSiteIds(tx, options_.capacity_max_sites)) {
      absl::StatusOr<occupancy::SiteFigures> figures =
          occupancy::LoadSiteFigures(tx, /*org_id=*/"", site_id, options_.capacity_window_days);
      if (!figures.ok()) return figures.status();
      results.push_back({site_id, occupancy::ComputeSiteCapacity(
                                      figures->racks, figures->median_device,
                                      options_.capacity_window_days)});
    }
    return absl::OkStatus();
  });
  if (!read.ok()) return read;
  for (const SiteResult& site : results) {
    for (const occupancy::DimensionCapacity& d : site.dimensions) {
      const std::vector<std::string> labels = {site.site_id,
                                               occupancy::SiteDimensionName(d.dimension)};
      Capacity().free.WithLabels(labels).Set(static_cast<double>(d.free));
      Capacity().stranded.WithLabels(labels).Set(static_cast<double>(d.stranded));
      Capacity().days_to_exhaustion.WithLabels(labels).Set(
          d.days_to_exhaustion.value_or(std::numeric_limits<double>::infinity()));
    }
  }
  return absl::OkStatus();
}

void Sweeper::Run() {
  spdlog::info("sweeper {} running: every {}, batches of {}", options_.name,
               absl::FormatDuration(options_.interval), options_.batch_size);
  while (!stop_.HasBeenNotified()) {
    // Logged inside. A failure (database gone, timeout) is retried at the next interval: the
    // loop never ends on its own.
    if (!SweepOnce().ok()) {
      spdlog::info("next attempt in {}", absl::FormatDuration(options_.interval));
    }
    // The gauges keep their last values when the read fails; the sweep's own metrics say why.
    if (absl::Status gauges = RefreshCapacityGauges(); !gauges.ok()) {
      spdlog::warn("capacity gauges not refreshed: {}", Describe(gauges));
    }
    if (stop_.HasBeenNotified()) break;
    clock_.SleepUntil(clock_.Now() + options_.interval, stop_);
  }
  spdlog::info("sweeper {} stopped after {} sweeps ({} failed)", options_.name,
               sweeps_succeeded_.load(), sweeps_failed_.load());
}

}  // namespace dcl
