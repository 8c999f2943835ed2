// Work spread over a few threads, for the CPU- and I/O-bound loops of environment builds and
// content hashing: the first error stops the others and is returned.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>

#include "util/status.h"

namespace cairn {

// The machine's cores (at least 1).
int CoreCount();

// Runs `work(worker, stop)` once for each worker in [0, threads), worker 0 on this thread and
// the others on threads of their own. When a worker fails, `stop` turns true so that the
// others can end early; the first failure is returned.
Status RunOnThreads(int threads,
                    const std::function<Status(int worker, const std::atomic<bool>& stop)>& work);

// Runs `work(i)` for every i in [0, n) on at most `threads` threads, each taking the next i as
// it finishes one. The first failure stops the rest (items not yet begun are not run).
Status ParallelFor(size_t n, int threads, const std::function<Status(size_t i)>& work);

// One job at a time on a thread of its own, beside the caller's work: Start hands a job over
// (after the one before it has finished) and returns at once; Wait returns once it has finished.
// Lets a large buffer be hashed on one core while it is written or sent from another.
class SideThread {
 public:
  SideThread();
  ~SideThread();  // finishes the job in hand
  SideThread(const SideThread&) = delete;
  SideThread& operator=(const SideThread&) = delete;

  void Start(std::function<void()> job);
  void Wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn
