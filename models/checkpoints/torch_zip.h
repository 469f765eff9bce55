// The zip container torch.save writes (since PyTorch 1.6): every entry stored uncompressed, ZIP64 records for
// files past 4 GiB, entries under one top-level folder ("<name>/data.pkl", "<name>/data/0", ...). This reads
// the central directory of a file already in memory and gives each entry's bytes as a span of it: a storage is
// never copied to be read. Everything in the file is checked against its size first; an entry that is
// compressed, encrypted or out of bounds is refused in one line naming the file and the entry.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace vispec {

struct ZipSpan {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  uint32_t crc32 = 0;  // as the central directory records it
};

// Throws one line naming `path` and `name` if the entry's bytes do not have their recorded CRC-32 (a damaged
// file); readers check each entry they use.
void check_zip_crc(const ZipSpan& span, const std::string& path, const std::string& name);

// Entry name -> its bytes inside [bytes, bytes + size). Throws one line naming `path`.
std::map<std::string, ZipSpan> read_stored_zip(const uint8_t* bytes, uint64_t size, const std::string& path);

}  // namespace vispec
