#include "models/checkpoints/safetensors_header.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/check.h"

namespace vispec {

int safetensors_element_size(const std::string& dtype) {
  static const std::map<std::string, int> sizes = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
                                                   {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

SafetensorsHeader parse_safetensors_header(const uint8_t* bytes, uint64_t size, const std::string& path) {
  VISPEC_CHECK(size >= 8, path, ": not a safetensors file: ", size, " bytes, shorter than its header");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  VISPEC_CHECK(n <= 100000000, path, ": not a safetensors file: header length ", n, " is implausible");
  VISPEC_CHECK(8 + n <= size, path, ": truncated: header claims ", n, " bytes but the file has ", size);
  const auto header = nlohmann::json::parse(bytes + 8, bytes + 8 + n, nullptr, /*allow_exceptions=*/false);
  VISPEC_CHECK(!header.is_discarded(), path, ": corrupt header: not valid JSON");
  VISPEC_CHECK(header.is_object(), path, ": corrupt header: not a JSON object");
  SafetensorsHeader out;
  out.data_offset = 8 + n;
  const uint64_t data_size = size - 8 - n;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const auto& name = it.key();
    const auto& info = it.value();
    if (name == "__metadata__") {
      VISPEC_CHECK(info.is_object(), path, ": __metadata__ is not an object");
      for (auto m = info.begin(); m != info.end(); ++m) {
        VISPEC_CHECK(m->is_string(), path, ": __metadata__ '", m.key(), "' is not a string");
        out.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const std::string where = path + ": tensor '" + name + "'";
    VISPEC_CHECK(info.is_object() && info.contains("dtype") && info.contains("shape") && info.contains("data_offsets"),
                 where, ": header entry lacks dtype, shape or data_offsets");
    const auto& dtype = info["dtype"];
    const auto& shape = info["shape"];
    const auto& offsets = info["data_offsets"];
    VISPEC_CHECK(dtype.is_string(), where, ": dtype is not a string");
    SafetensorsEntry e{name, dtype.get<std::string>(), {}, 0, 0};
    const int element = safetensors_element_size(e.dtype);
    VISPEC_CHECK(element > 0, where, ": unsupported dtype '", e.dtype, "'");
    VISPEC_CHECK(shape.is_array(), where, ": shape is not a list");
    // The byte count must not wrap around: a wrapped product could pass the size check and map a tensor far
    // beyond the file.
    uint64_t bytes_needed = uint64_t(element);
    for (const auto& d : shape) {
      VISPEC_CHECK(d.is_number_integer() && d.get<int64_t>() >= 0, where, ": shape holds ", d.dump(),
                   ", not a dimension");
      e.shape.push_back(d.get<int64_t>());
      VISPEC_CHECK(!__builtin_mul_overflow(bytes_needed, uint64_t(e.shape.back()), &bytes_needed), where, ": shape ",
                   shape.dump(), " is too large");
    }
    VISPEC_CHECK(
        offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() && offsets[1].is_number_unsigned(),
        where, ": data_offsets is not [begin, end]");
    e.begin = offsets[0].get<uint64_t>();
    e.end = offsets[1].get<uint64_t>();
    VISPEC_CHECK(e.begin <= e.end, where, ": bad data_offsets");
    VISPEC_CHECK(e.end - e.begin == bytes_needed, where, ": ", e.end - e.begin,
                 " bytes stored but shape and dtype need ", bytes_needed);
    VISPEC_CHECK(e.end <= data_size, path, ": truncated: tensor '", name, "' ends at byte ", e.end, " of a ", data_size,
                 "-byte data section");
    out.tensors.push_back(std::move(e));
  }
  std::vector<const SafetensorsEntry*> by_offset;
  for (const auto& e : out.tensors) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SafetensorsEntry* a, const SafetensorsEntry* b) { return a->begin < b->begin; });
  uint64_t at = 0;
  for (const auto* e : by_offset) {
    VISPEC_CHECK(e->begin == at, path, ": corrupt: tensor '", e->name, "' starts at byte ", e->begin,
                 " but the previous tensor ends at ", at, " (holes or overlaps)");
    at = e->end;
  }
  VISPEC_CHECK(at == data_size, path, ": corrupt: tensors cover ", at, " bytes of a ", data_size, "-byte data section");
  return out;
}

}  // namespace vispec
