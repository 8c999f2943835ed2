#include "capture/console_recorder.h"

#include <chrono>

namespace cairn::capture {

using client::RunJournal;
using client::TrackingClient;
namespace {

// A chunk grows by later output of the same stream up to this size.
constexpr size_t kChunkBytes = 64 << 10;
// Record without waiting for the next tick once this much is waiting.
constexpr size_t kEagerBytes = 256 << 10;
constexpr auto kTick = std::chrono::seconds(1);

}  // namespace

ConsoleRecorder::ConsoleRecorder(RunJournal* journal, TrackingClient* client, Clock* clock)
    : journal_(journal), client_(client), clock_(clock) {
  thread_ = std::thread([this] { Loop(); });
}

ConsoleRecorder::~ConsoleRecorder() { (void)Close(); }

void ConsoleRecorder::Add(core::ConsoleStream stream, std::string_view bytes) {
  std::string text = decoders_[static_cast<int>(stream)].Feed(bytes);
  if (text.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  const size_t size = text.size();
  if (!waiting_.empty() && waiting_.back().stream == stream &&
      waiting_.back().data.size() + size <= kChunkBytes) {
    waiting_.back().data += text;
  } else {
    waiting_.push_back({next_offset_, stream, clock_->NowMillis(), std::move(text)});
  }
  next_offset_ += static_cast<int64_t>(size);
  waiting_bytes_ += size;
  if (waiting_bytes_ >= kEagerBytes) cv_.notify_one();
}

void ConsoleRecorder::Record() {
  if (waiting_.empty()) return;
  Status s = journal_->AppendLog(waiting_);
  if (!s.ok()) {
    error_ = s;  // the disk failed; keep the chunks and try again
    return;
  }
  waiting_.clear();
  waiting_bytes_ = 0;
}

void ConsoleRecorder::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!closing_) {
    cv_.wait_for(lock, kTick, [&] { return closing_ || waiting_bytes_ >= kEagerBytes; });
    if (closing_) return;
    const bool recorded = !waiting_.empty();
    Record();
    if (!recorded) continue;
    lock.unlock();
    // Failures wait in the journal for the next attempt.
    (void)journal_->Deliver(*client_);
    lock.lock();
  }
}

Status ConsoleRecorder::Close() {
  if (!thread_.joinable()) return error_;
  for (int s = 0; s < 2; ++s) {
    std::string rest = decoders_[s].Finish();
    if (!rest.empty()) Add(static_cast<core::ConsoleStream>(s), rest);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  cv_.notify_one();
  thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  Record();
  return waiting_.empty() ? Status::Ok() : error_;
}

}  // namespace cairn::capture
