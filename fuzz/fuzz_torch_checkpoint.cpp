// The torch.save reader (models/checkpoints/torch_checkpoint_index.h: zip container, restricted unpickler, state dict
// selection, tensor extents): whatever the bytes, an accepted tensor lies inside its storage, which lies inside
// the file.
#include "fuzz/fuzz_input.h"
#include "models/checkpoints/safetensors_header.h"
#include "models/checkpoints/torch_checkpoint_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (const char* key : {"", "model.sd"}) {
    try {
      for (const auto& t : vispec::index_torch_checkpoint(data, size, "fuzz.pt", key)) {
        if (t.storage.data < data || t.storage.data + t.storage.size > data + size) __builtin_trap();
        int64_t last = t.offset;
        for (size_t i = 0; i < t.shape.size(); ++i) last += t.shape[i] == 0 ? 0 : (t.shape[i] - 1) * t.stride[i];
        const uint64_t element = uint64_t(vispec::safetensors_element_size(t.dtype));
        const bool empty = [&] {
          for (const auto d : t.shape)
            if (d == 0) return true;
          return false;
        }();
        if (!empty && uint64_t(last + 1) * element > t.storage.size) __builtin_trap();
      }
    } catch (const vispec::Error&) {
    }
  }
  return 0;
}
