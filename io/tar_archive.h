// Tar archives of a unit's samples (a job's `output: shards`): POSIX ustar, the format Python's tarfile and
// WebDataset read. WebDataset groups a tar's members by the name before its first dot, so sample 42's
// members are 00000042.png, 00000042.tokens.npy and 00000042.json, one sample after the other.
// Deterministic headers: every member's mode is 0644, owner 0, mtime 0, no user or group names, so a unit
// decoded again (any rank count) writes the same archive but for what its members hold that differs (the
// timings in a sample's metrics).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/atomic_file.h"

namespace vispec {

// Written whole or not at all: members stream into an AtomicFile (a temporary renamed by commit()).
class TarWriter {
 public:
  explicit TarWriter(std::string path);
  // A regular file member. name: at most 100 bytes, no '/' at the start, no "..".
  void add(const std::string& name, const std::string& contents);
  // Ends the archive (two zero blocks), fsyncs and renames it; the size and CRC-32 of the whole archive.
  FileDigest commit(bool sync_directory = true);

 private:
  std::string path_;
  AtomicFile file_;
};

struct TarMember {
  std::string name;
  std::string contents;
};
// Every regular member of an archive written by TarWriter (or any ustar/GNU tar of regular files), in order.
// The archive is untrusted input: a header whose checksum, size or name is wrong, or that runs past the end
// of the file, throws one line naming the file and the member's offset.
std::vector<TarMember> read_tar(const std::string& path);

}  // namespace vispec
