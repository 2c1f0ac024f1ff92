// Acknowledged writes against running servers, for the day-two proofs: Reserve clients (each
// cancelling a third of its holds) and PlaceDevice clients (placing the volume's unplaced
// devices into its free racks), every call recorded in a WriteLog with its wall-clock start
// and answer.
#ifndef DCL_TESTS_DAYTWO_WRITE_LOAD_H_
#define DCL_TESTS_DAYTWO_WRITE_LOAD_H_

#include <atomic>
#include <thread>
#include <vector>

#include "tests/daytwo/daytwo_support.h"
#include "tests/daytwo/volume.h"

namespace dcl::daytwo {

class WriteLoad {
 public:
  // Starts `reserve_clients` + `place_clients` threads; each PlaceDevice client owns a share of
  // the free racks and of the unplaced devices.
  // A PlaceDevice client pauses `place_pause` after each call, so that the free racks last as
  // long as the load.
  WriteLoad(const Volume& volume, int reservation_port, int occupancy_port, int reserve_clients,
            int place_clients, WriteLog& log,
            std::chrono::milliseconds place_pause = std::chrono::milliseconds(0));
  WriteLoad(const WriteLoad&) = delete;
  WriteLoad& operator=(const WriteLoad&) = delete;
  ~WriteLoad();  // stops
  void Stop();

 private:
  void Reserve(int client);
  void Place(int client, int clients);

  const Volume& volume_;
  const int reservation_port_;
  const int occupancy_port_;
  WriteLog& log_;
  const std::chrono::milliseconds place_pause_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// The longest call among `writes` that was in flight at any moment of [from, to], in seconds;
// with the operation and when it started.
struct Stall {
  double seconds = 0;
  std::string op;
  int calls = 0;  // calls in flight during the window
};
Stall LongestStall(const std::vector<Write>& writes, WallClock::time_point from,
                   WallClock::time_point to);

}  // namespace dcl::daytwo

#endif  // DCL_TESTS_DAYTWO_WRITE_LOAD_H_
