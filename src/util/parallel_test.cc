#include "util/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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

TEST(SideThreadTest, RunsJobsInTurnOffTheCallersThread) {
  SideThread side;
  std::vector<int> order;
  std::atomic<bool> release{false};
  std::thread::id ran_on;
  side.Start([&] {
    ran_on = std::this_thread::get_id();
    while (!release.load()) std::this_thread::yield();  // runs while the caller goes on
    order.push_back(1);
  });
  order.push_back(0);  // the caller's work, beside the job
  release = true;
  side.Start([&] { order.push_back(2); });  // waits for the first job to end
  side.Wait();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(SideThreadTest, TheDestructorFinishesTheJobInHand) {
  std::atomic<int> done{0};
  {
    SideThread side;
    side.Start([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      done = 1;
    });
  }
  EXPECT_EQ(done.load(), 1);
}

}  // namespace
}  // namespace cairn
