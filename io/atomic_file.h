// Files that appear whole or not at all: written under "<path>.tmp.<pid>", fsynced, renamed over <path>,
// then the directory fsynced. Destroyed without commit() (an exception, a crash), the temporary is removed
// and <path> is untouched.
#pragma once

#include <cstddef>
#include <string>

#include "io/file_digest.h"

namespace vispec {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t size);
  void write(const std::string& s) { write(s.data(), s.size()); }
  // sync_directory=false leaves the directory fsync to the caller (one per batch of files, e.g. a unit).
  // Returns the size and checksum of what was written (for the journal's record of the file).
  FileDigest commit(bool sync_directory = true);

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  DigestBuilder digest_;
};

FileDigest write_file_atomic(const std::string& path, const std::string& contents, bool sync_directory = true);
// Appends and fsyncs (for line-oriented logs such as metrics.jsonl, where a torn last line is tolerated).
void append_file_synced(const std::string& path, const std::string& contents);
void fsync_directory(const std::string& dir);
void make_directories(const std::string& dir);  // mkdir -p, with a clear error
std::string read_file(const std::string& path);
bool file_exists(const std::string& path);

}  // namespace vispec
