// The checks of a safetensors file's header, apart from tensors (no LibTorch here, so the fuzz target
// fuzz/fuzz_safetensors.cpp covers exactly what reads untrusted bytes).
//
//   [u64 little-endian N][N bytes JSON header][data]
//   header: {"__metadata__": {str: str}, "<name>": {"dtype": "F32", "shape": [...], "data_offsets": [b, e]}}
// Enforced, as the reference reader does: the header is a JSON object of such entries, every dtype known,
// every size computable without overflow and equal to shape x element size, and the tensors tile the data
// section exactly (no holes, no overlaps, nothing past its end). Every error is one line naming the file and
// the tensor.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vispec {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // "F32", "BF16", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range within the data section
};

struct SafetensorsHeader {
  uint64_t data_offset = 0;               // 8 + N: where the data section starts in the file
  std::vector<SafetensorsEntry> tensors;  // in the header's (sorted by name) order
  std::map<std::string, std::string> metadata;
};

// bytes: the whole file (size bytes). Throws one line naming `path`.
SafetensorsHeader parse_safetensors_header(const uint8_t* bytes, uint64_t size, const std::string& path);
// Bytes per element of a safetensors dtype name, 0 if unknown.
int safetensors_element_size(const std::string& dtype);

}  // namespace vispec
