#include "util/parallel.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace cairn {
namespace {

TEST(ParallelTest, EveryItemRunsOnceOnSeveralThreads) {
  std::vector<std::atomic<int>> runs(1000);
  std::mutex mu;
  std::set<std::thread::id> threads;
  Status s = ParallelFor(runs.size(), 4, [&](size_t i) {
    runs[i].fetch_add(1);
    std::lock_guard<std::mutex> lock(mu);
    threads.insert(std::this_thread::get_id());
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok());
  for (const auto& r : runs) EXPECT_EQ(r.load(), 1);
  EXPECT_GE(threads.size(), 1u);
  EXPECT_LE(threads.size(), 4u);
  EXPECT_TRUE(ParallelFor(0, 4, [](size_t) { return Internal("never called"); }).ok());
}

TEST(ParallelTest, TheFirstFailureStopsTheRestAndIsReturned) {
  std::atomic<int> ran{0};
  Status s = ParallelFor(100000, 2, [&](size_t i) {
    ran.fetch_add(1);
    return i == 10 ? Internal("item 10 failed") : Status::Ok();
  });
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "item 10 failed");
  EXPECT_LT(ran.load(), 100000);
}

TEST(ParallelTest, WorkersHaveTheirOwnNumbersAndSeeTheStop) {
  std::vector<int> seen(3, 0);
  Status s = RunOnThreads(3, [&](int worker, const std::atomic<bool>& stop) -> Status {
    seen[static_cast<size_t>(worker)] = 1;
    if (worker == 2) return FailedPrecondition("worker 2");
    while (!stop.load()) std::this_thread::yield();  // ends only because worker 2 failed
    return Status::Ok();
  });
  EXPECT_EQ(s.message(), "worker 2");
  EXPECT_EQ(seen, (std::vector<int>{1, 1, 1}));
}

}  // namespace
}  // namespace cairn
