// Records a run's console output while the command runs: output is decoded to UTF-8 per
// stream and cut into chunks that carry their byte offset in the log, their stream and the
// time they were read. About once a second (sooner when much is waiting) a thread of its own
// writes the chunks to the run's journal and asks the journal to deliver, so the log reaches
// the server while the command runs and survives the server being away. Offsets make
// delivery idempotent and ordered: the log on the server is always a prefix of the output.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "client/run_journal.h"
#include "client/tracking_client.h"
#include "core/model.h"
#include "util/clock.h"
#include "util/utf8.h"

namespace cairn::capture {

class ConsoleRecorder {
 public:
  // Starts the recording thread. `journal` and `client` must outlive the recorder.
  ConsoleRecorder(client::RunJournal* journal, client::TrackingClient* client, Clock* clock = SystemClock());
  ~ConsoleRecorder();
  ConsoleRecorder(const ConsoleRecorder&) = delete;
  ConsoleRecorder& operator=(const ConsoleRecorder&) = delete;

  // Adds bytes read from one of the command's streams. Thread-safe; never blocks on the network.
  void Add(core::ConsoleStream stream, std::string_view bytes);
  // Writes what is still waiting to the journal and stops the thread; the journal's error if
  // writing failed (delivery failures are the journal's to retry). Idempotent.
  Status Close();

 private:
  void Loop();
  // Moves the waiting chunks into the journal; called with mu_ held.
  void Record();

  client::RunJournal* journal_;
  client::TrackingClient* client_;
  Clock* clock_;
  Utf8Decoder decoders_[2];  // stdout, stderr

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<core::ConsoleChunk> waiting_;
  size_t waiting_bytes_ = 0;
  int64_t next_offset_ = 0;  // the log's length so far
  bool closing_ = false;
  Status error_;
  std::thread thread_;
};

}  // namespace cairn::capture
