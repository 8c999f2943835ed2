#include "client/console_uploader.h"

#include <chrono>
#include <vector>

namespace cairn::client {
namespace {

// A chunk grows by later output of the same stream up to this size.
constexpr size_t kChunkBytes = 64 << 10;
// One upload carries at most this much (the server takes up to 8 MiB).
constexpr size_t kUploadBytes = 4 << 20;
// Send without waiting for the next tick once this much is waiting.
constexpr size_t kEagerBytes = 256 << 10;
constexpr auto kTick = std::chrono::seconds(1);

}  // namespace

ConsoleUploader::ConsoleUploader(TrackingClient* client, std::string run_id, Clock* clock)
    : client_(client), run_id_(std::move(run_id)), clock_(clock) {
  thread_ = std::thread([this] { Loop(); });
}

ConsoleUploader::~ConsoleUploader() { (void)Close(); }

void ConsoleUploader::Add(core::ConsoleStream stream, std::string_view bytes) {
  std::string text = decoders_[static_cast<int>(stream)].Feed(bytes);
  if (!text.empty()) Append(stream, std::move(text));
}

void ConsoleUploader::Append(core::ConsoleStream stream, std::string text) {
  std::lock_guard<std::mutex> lock(mu_);
  if (truncated_ || pending_bytes_ + text.size() > kMaxPendingBytes) {
    truncated_ = true;
    return;
  }
  const size_t size = text.size();
  if (!pending_.empty() && pending_.back().stream == stream &&
      pending_.back().data.size() + size <= kChunkBytes) {
    pending_.back().data += text;
  } else {
    pending_.push_back({next_offset_, stream, clock_->NowMillis(), std::move(text)});
  }
  next_offset_ += static_cast<int64_t>(size);
  pending_bytes_ += size;
  if (pending_bytes_ >= kEagerBytes) cv_.notify_one();
}

void ConsoleUploader::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait_for(lock, kTick, [&] { return closing_ || pending_bytes_ >= kEagerBytes; });
    // Chunks are only ever appended to or added at the back, so a copy of the front ones
    // stays a faithful prefix while the lock is released for the upload.
    std::vector<core::ConsoleChunk> batch;
    size_t bytes = 0;
    for (const core::ConsoleChunk& c : pending_) {
      if (!batch.empty() && bytes + c.data.size() > kUploadBytes) break;
      batch.push_back(c);
      bytes += c.data.size();
    }
    if (batch.empty()) {
      if (closing_) return;
      continue;
    }
    lock.unlock();
    Result<int64_t> length = client_->AppendRunLog(run_id_, batch);
    lock.lock();
    if (!length.ok()) {
      last_error_ = length.status();
      // The client has retried already; at the end, give up rather than hold the exit.
      if (closing_) return;
      continue;
    }
    last_error_ = Status::Ok();
    // Drop what the server now holds. The front chunk may have grown meanwhile: keep its
    // unsent rest as a chunk of its own.
    while (!pending_.empty()) {
      core::ConsoleChunk& front = pending_.front();
      const int64_t end = front.offset + static_cast<int64_t>(front.data.size());
      if (end <= *length) {
        pending_bytes_ -= front.data.size();
        pending_.pop_front();
        continue;
      }
      if (front.offset < *length) {
        const size_t sent = static_cast<size_t>(*length - front.offset);
        front.data.erase(0, sent);
        front.offset = *length;
        pending_bytes_ -= sent;
      }
      break;
    }
  }
}

Status ConsoleUploader::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return last_error_;
  }
  for (int s = 0; s < 2; ++s) {
    std::string rest = decoders_[s].Finish();
    if (!rest.empty()) Append(static_cast<core::ConsoleStream>(s), std::move(rest));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  cv_.notify_one();
  thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (last_error_.ok() && !pending_.empty()) {
    return Unavailable("console output not uploaded: " + std::to_string(pending_bytes_) +
                       " bytes");
  }
  return last_error_;
}

bool ConsoleUploader::truncated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return truncated_;
}

}  // namespace cairn::client
