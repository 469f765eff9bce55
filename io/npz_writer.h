// NumPy .npz files of one array, streamed: what numpy.load(path)["arr_0"] reads, and the form the ADM
// evaluator of FID (the one LlamaGen's and most AR image papers' numbers come from) takes its samples in.
//
// An .npz is a zip archive of .npy members. This writes one member, arr_0.npy, stored (not compressed), in
// ZIP64 form so that arrays past 4 GiB (50,000 images of 256x256x3 are 9.8 GB) need nothing else; its CRC-32 is
// known only at the end, so it follows the data in a data descriptor, as zip allows. The archive streams
// into an AtomicFile: it appears whole or not at all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/atomic_file.h"

namespace vispec {

class NpzWriter {
 public:
  // An array of numpy dtype `descr` ("|u1", "<f4", ...), `item_size` bytes per element, of this shape.
  NpzWriter(std::string path, const std::string& descr, int64_t item_size, const std::vector<int64_t>& shape);
  // The array's bytes in C order, in any number of pieces.
  void write(const void* data, size_t size);
  // Ends the archive (its size must be the shape's), fsyncs and renames it into place.
  FileDigest commit();

 private:
  std::string path_;
  AtomicFile file_;
  uint64_t expected_ = 0, written_ = 0;  // the member's bytes (the .npy header and data)
  DigestBuilder member_;                 // CRC-32 of the member's bytes
};

}  // namespace vispec
