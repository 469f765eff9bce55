// The training images' decoders (io/jpeg.h, io/png.h): a file of an image folder is untrusted, so its header and
// data are refused with one Error (a bomb's declared size among them, before anything is allocated for it) or
// decoded whole, to the size it declares. The budget here is a million pixels, so that libFuzzer's memory limit
// measures the decoders, not the images they are allowed to make.
#include <cstdint>
#include <string>
#include <vector>

#include "core/check.h"
#include "io/jpeg.h"
#include "io/png.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr int64_t kBudget = 1 << 20;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  using Decode = std::vector<uint8_t> (*)(const std::string&, const std::string&, int&, int&, int&, int64_t);
  for (const Decode decode : {Decode(&vispec::decode_jpeg), Decode(&vispec::decode_png)}) {
    int width = 0, height = 0, channels = 0;
    try {
      const auto pixels = decode(bytes, "image", width, height, channels, kBudget);
      if (int64_t(pixels.size()) != int64_t(width) * height * channels || int64_t(width) * height > kBudget ||
          (channels != 1 && channels != 3))
        __builtin_trap();
    } catch (const vispec::Error&) {
    }
  }
  return 0;
}
