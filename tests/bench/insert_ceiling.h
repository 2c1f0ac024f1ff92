// The commit ceiling every benchmark prints its ratio to: one-row INSERTs, one statement per
// transaction (autocommit), from `clients` connections at once for `seconds`, on the cluster
// being measured. What Reserve or PlaceDevice could reach if each call cost one commit.
#ifndef DCL_TESTS_BENCH_INSERT_CEILING_H_
#define DCL_TESTS_BENCH_INSERT_CEILING_H_

#include <string>

namespace dcl::bench {

// Transactions per second. Creates the table bench_ceiling if needed and empties it afterwards.
double InsertCeiling(const std::string& url, int clients, double seconds);

}  // namespace dcl::bench

#endif  // DCL_TESTS_BENCH_INSERT_CEILING_H_
