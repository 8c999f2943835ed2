#include "util/parallel.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace cairn {

int CoreCount() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

Status RunOnThreads(int threads,
                    const std::function<Status(int, const std::atomic<bool>&)>& work) {
  std::atomic<bool> stop{false};
  std::mutex mu;
  Status first;
  auto run = [&](int worker) {
    Status s = work(worker, stop);
    if (s.ok()) return;
    std::lock_guard<std::mutex> lock(mu);
    if (!stop.exchange(true)) first = std::move(s);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(run, t);
  run(0);
  for (std::thread& t : pool) t.join();
  return first;
}

Status ParallelFor(size_t n, int threads, const std::function<Status(size_t)>& work) {
  if (n == 0) return Status::Ok();
  std::atomic<size_t> next{0};
  const size_t most = static_cast<size_t>(std::max(threads, 1));
  const int count = static_cast<int>(std::min(n, most));
  return RunOnThreads(count, [&](int, const std::atomic<bool>& stop) -> Status {
    for (size_t i = next.fetch_add(1); i < n && !stop.load(); i = next.fetch_add(1)) {
      CAIRN_RETURN_IF_ERROR(work(i));
    }
    return Status::Ok();
  });
}

struct SideThread::Impl {
  std::mutex mu;
  std::condition_variable cv;
  std::function<void()> job;
  bool stop = false;
  std::thread thread;

  void Run() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return job || stop; });
      if (!job) return;
      lock.unlock();
      job();
      lock.lock();
      job = nullptr;
      cv.notify_all();
    }
  }
};

SideThread::SideThread() : impl_(std::make_unique<Impl>()) {
  impl_->thread = std::thread([impl = impl_.get()] { impl->Run(); });
}

SideThread::~SideThread() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  impl_->thread.join();
}

void SideThread::Start(std::function<void()> job) {
  {
    std::unique_lock<std::mutex> lock(impl_->mu);
    impl_->cv.wait(lock, [&] { return !impl_->job; });
    impl_->job = std::move(job);
  }
  impl_->cv.notify_all();
}

void SideThread::Wait() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->cv.wait(lock, [&] { return !impl_->job; });
}

}  // namespace cairn
