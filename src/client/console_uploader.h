// Streams a run's console output to the tracking server while the command runs: output is
// decoded to UTF-8 per stream, cut into chunks that carry their byte offset in the log, their
// stream and the time they were read, and sent by a background thread about once a second
// (sooner when much is waiting). Offsets make uploads idempotent and ordered: a retried
// upload never duplicates text, and the log on the server is always a prefix of the output.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "client/tracking_client.h"
#include "core/model.h"
#include "util/clock.h"
#include "util/utf8.h"

namespace cairn::client {

class ConsoleUploader {
 public:
  // Output waiting beyond this (the server unreachable for long) is not kept for upload; the
  // log on the server then ends where it stopped and `truncated()` says so.
  static constexpr size_t kMaxPendingBytes = 64 << 20;

  // Starts the sending thread. `client` must outlive the uploader.
  ConsoleUploader(TrackingClient* client, std::string run_id, Clock* clock = SystemClock());
  ~ConsoleUploader();
  ConsoleUploader(const ConsoleUploader&) = delete;
  ConsoleUploader& operator=(const ConsoleUploader&) = delete;

  // Adds bytes read from one of the command's streams. Thread-safe; never blocks on the network.
  void Add(core::ConsoleStream stream, std::string_view bytes);
  // Sends everything still waiting and stops the thread. The error of the last failed upload
  // when something could not be sent, else OK. Idempotent.
  Status Close();

  bool truncated() const;

 private:
  void Append(core::ConsoleStream stream, std::string text);
  void Loop();

  TrackingClient* client_;
  const std::string run_id_;
  Clock* clock_;
  Utf8Decoder decoders_[2];  // stdout, stderr

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<core::ConsoleChunk> pending_;  // contiguous, from the first unsent byte
  size_t pending_bytes_ = 0;
  int64_t next_offset_ = 0;  // the log's length once everything is sent
  bool closing_ = false;
  bool truncated_ = false;
  Status last_error_;
  std::thread thread_;
};

}  // namespace cairn::client
