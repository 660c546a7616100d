// A file written under a temporary name beside its target and renamed over it only by
// commit(): several files (a model and its external data) can be written completely first,
// then put in place one after the other. Uncommitted, the temporary is removed.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

namespace tonnx {

class PendingFile {
 public:
  // Throws when the folder is missing or `path` is a folder. `direct`: written past the page
  // cache (O_DIRECT, where the filesystem has it), for large files.
  explicit PendingFile(std::string path, bool direct = false);
  ~PendingFile();
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  // Writes the whole file through `write` (once); throws when writing fails, leaving nothing.
  void write(const std::function<void(std::ostream&)>& write);
  // Renames the written file over the target (a target written in place: nothing to do).
  void commit();
  // Whether the target is written in place: an existing character device or read FIFO.
  bool in_place() const { return in_place_; }
  uint64_t bytes() const { return bytes_; }  // written by write()
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool direct_ = false, unnamed_ = false, written_ = false, committed_ = false;
  bool in_place_ = false;
  uint64_t bytes_ = 0;
  bool open_in_place();
};

}  // namespace tonnx
