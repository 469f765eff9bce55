// What a written file should be: its size and CRC-32 (zlib's, the checksum of gzip, PNG and Python's
// zlib.crc32, so any tool can recompute it). The journal records one per output file (io/unit_files.h); a
// rerun checks sizes, `vispec verify` recomputes the checksums. CRC-32 catches truncation, torn writes and
// flipped bits, which is what storage does to files; it is not a defence against someone forging a file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace vispec {

struct FileDigest {
  int64_t bytes = 0;
  uint32_t crc32 = 0;
  bool operator==(const FileDigest& o) const { return bytes == o.bytes && crc32 == o.crc32; }
};

// Accumulates a digest over bytes as they are written.
class DigestBuilder {
 public:
  void update(const void* data, size_t size);
  FileDigest digest() const { return digest_; }

 private:
  FileDigest digest_;
};

// Streams the file once (1 MiB at a time); throws one line naming the file if it cannot be read.
FileDigest digest_file(const std::string& path);
// The file's bytes, 1 MiB at a time, to `chunk`; a failed open or read throws one line naming the file.
void read_chunks(const std::string& path, const std::function<void(const char* data, size_t size)>& chunk);
// FNV-1a, 64 bits: the job fingerprint's hash of small texts (scheduler/fingerprint.h), streamable.
inline constexpr uint64_t kFnv1aBasis = 1469598103934665603ull;
inline uint64_t fnv1a(const void* data, size_t n, uint64_t h = kFnv1aBasis) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
uint64_t file_fnv(const std::string& path);  // fnv1a of the whole file

std::string crc32_hex(uint32_t crc);  // "0a1b2c3d"
// Parses crc32_hex's form; false if `text` is not 8 hex digits.
bool parse_crc32_hex(const std::string& text, uint32_t& crc);

}  // namespace vispec
