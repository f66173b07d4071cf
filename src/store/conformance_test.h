// The store conformance suite: the contract of store.h as tests, run by
// every backend. A backend's test file instantiates it with a factory:
//
//   INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformance,
//       ::testing::Values(StoreBackend{"sqlite", &OpenSqliteForTest}));
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "store/store.h"

namespace muster::store {

struct StoreBackend {
  std::string name;
  // Opens (or reopens) the store kept under `dir`; the same dir gives the same data.
  std::function<StatusOr<std::unique_ptr<Store>>(const std::string& dir)> open;
};

inline void PrintTo(const StoreBackend& b, std::ostream* os) { *os << b.name; }

// A pending job row for tests: id `id`, in `queue`, in `state`, its spec
// holding quotes and SQL that must be stored as text.
JobRow TestJob(int64_t id, const std::string& state = "PENDING", const std::string& queue = "q1");

class StoreConformance : public ::testing::TestWithParam<StoreBackend> {
 protected:
  void SetUp() override;
  void TearDown() override;
  std::unique_ptr<Store> Reopen();

  std::string dir_;
  std::unique_ptr<Store> store_;
};

}  // namespace muster::store
