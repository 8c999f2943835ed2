// Work spread over a few threads, for the CPU- and I/O-bound loops of environment builds and
// content hashing: the first error stops the others and is returned.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>

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

}  // namespace cairn
