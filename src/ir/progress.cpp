// tonnx/progress.h: the per-thread sink and the two sinks the command line uses.
#include "tonnx/progress.h"

#include <chrono>
#include <cstdio>
#include <iomanip>
#include <memory>
#include <ostream>
#include <sstream>

namespace tonnx {
namespace {

thread_local ProgressSink g_sink;

std::string size_str(int64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  if (bytes >= (int64_t{1} << 30))
    os << static_cast<double>(bytes) / (1 << 30) << " GB";
  else
    os << static_cast<double>(bytes) / (1 << 20) << " MB";
  return os.str();
}

}  // namespace

ProgressSink set_progress_sink(ProgressSink sink) {
  ProgressSink previous = std::move(g_sink);
  g_sink = std::move(sink);
  return previous;
}

void report_progress(const ProgressEvent& e) {
  if (g_sink) g_sink(e);
}

bool progress_wanted() { return static_cast<bool>(g_sink); }

ProgressSink terminal_progress(std::ostream& out) {
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  return [&out, last](const ProgressEvent& e) {
    if (e.done && e.stage == "write") {  // an export's last stage: its summary follows
      clear_progress_line(out);
      return;
    }
    auto now = std::chrono::steady_clock::now();
    bool final_write = e.stage == "write" && e.total > 0 && e.bytes >= e.total;
    if (!e.done && !final_write && now - *last < std::chrono::milliseconds(100)) return;
    *last = now;
    std::ostringstream line;
    line << std::fixed << std::setprecision(1) << "tonnx: " << e.stage;
    if (e.total > 0) {
      line << " " << size_str(e.bytes) << " of " << size_str(e.total);
      if (e.seconds > 0)
        line << ", " << static_cast<int64_t>(static_cast<double>(e.bytes) / (1 << 20) / e.seconds)
             << " MB/s";
    } else if (e.done) {
      // What runs now, after the stage that ended.
      static const char* const kNext[][2] = {
          {"trace", "convert"}, {"convert", "passes"}, {"passes", "check"}, {"check", "write"}};
      std::string next;
      for (const auto& n : kNext)
        if (e.stage == n[0]) next = n[1];
      line.str("");
      line << "tonnx: " << (next.empty() ? e.stage + " done" : next + "...") << " (" << e.stage
           << " took " << e.seconds << " s)";
    }
    out << "\r\033[K" << line.str() << std::flush;
  };
}

void clear_progress_line(std::ostream& out) { out << "\r\033[K" << std::flush; }

ProgressSink timing_progress(std::ostream& out) {
  return [&out](const ProgressEvent& e) {
    if (!e.done) return;
    std::ostringstream line;  // (the caller's stream keeps its own format flags)
    line << "tonnx timing: " << e.stage << " " << std::fixed << std::setprecision(1)
         << e.seconds * 1000 << " ms (RSS " << e.rss_mb << " MB)";
    if (e.total > 0) line << ", " << size_str(e.total);
    out << line.str() << "\n" << std::flush;
  };
}

ProgressSink both(ProgressSink a, ProgressSink b) {
  if (!a) return b;
  if (!b) return a;
  return [a, b](const ProgressEvent& e) {
    a(e);
    b(e);
  };
}

}  // namespace tonnx
