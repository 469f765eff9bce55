// The safetensors header checks (models/checkpoints/safetensors_header.h): whatever the bytes, an accepted header's
// tensors lie inside the data section, so mapping them can never read past the file.
#include "fuzz/fuzz_input.h"
#include "models/checkpoints/safetensors_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto header = vispec::parse_safetensors_header(data, size, "fuzz.safetensors");
    for (const auto& t : header.tensors)
      if (t.end > size - header.data_offset || t.begin > t.end) __builtin_trap();
  } catch (const vispec::Error&) {
  }
  return 0;
}
