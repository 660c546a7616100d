// Progress of long work (an export's stages, the bytes of a model being written), reported to
// a sink the caller installs for its thread. Without a sink nothing is reported or printed.
//
//   tonnx::ProgressScope progress(tonnx::terminal_progress(std::cerr));  // a status line
//   tonnx::export_model(model, {x}, "big.onnx");
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

namespace tonnx {

struct ProgressEvent {
  // An export: "trace", "convert", "passes", "check", then "write" (with bytes).
  std::string stage;
  bool done = false;   // the stage ended; seconds is how long it took
  double seconds = 0;  // done: the stage's duration; write: since the write began
  int64_t bytes = 0;   // write: bytes written so far
  int64_t total = 0;   // write: bytes to write in all (model and external data)
  int64_t rss_mb = 0;  // the process's resident memory when the stage ended
};
using ProgressSink = std::function<void(const ProgressEvent&)>;

// Installs `sink` for this thread (empty: none); returns the one it replaces.
ProgressSink set_progress_sink(ProgressSink sink);
// Sends `e` to this thread's sink, if any.
void report_progress(const ProgressEvent& e);
bool progress_wanted();  // a sink is installed

// Installs a sink for its lifetime, restoring the previous one.
class ProgressScope {
 public:
  explicit ProgressScope(ProgressSink sink) : previous_(set_progress_sink(std::move(sink))) {}
  ~ProgressScope() { set_progress_sink(std::move(previous_)); }
  ProgressScope(const ProgressScope&) = delete;
  ProgressScope& operator=(const ProgressScope&) = delete;

 private:
  ProgressSink previous_;
};

// For a terminal: one status line rewritten in place ("tonnx: write 1.2 of 3.2 GB, 210 MB/s"),
// at most ten times a second; clear_progress_line erases it.
ProgressSink terminal_progress(std::ostream& out);
void clear_progress_line(std::ostream& out);
// For --timing: one line per finished stage with its time and the resident memory.
ProgressSink timing_progress(std::ostream& out);
// Both sinks at once (either may be empty).
ProgressSink both(ProgressSink a, ProgressSink b);

}  // namespace tonnx
