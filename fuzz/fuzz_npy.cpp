// The .npy reader (io/npy.h) and the caption-features check (workers/caption_features.h): a features file named
// by a prompt line is untrusted input, so its header and data are refused with one Error or read whole.
#include "fuzz/fuzz_input.h"
#include "io/npy.h"
#include "workers/caption_features.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = vispec::fuzz::write_input(data, size, "features.npy");
  try {
    const auto header = vispec::read_npy_header(path);
    const auto whole = vispec::read_npy(path);
    if (whole.shape != header.shape || whole.data.size() != size_t(whole.elements()) * whole.item_size)
      __builtin_trap();
  } catch (const vispec::Error&) {
  }
  vispec::GptConfig gpt;
  gpt.caption_dim = 4;
  gpt.cls_token_num = 120;
  (void)vispec::check_caption_features(gpt, path);  // reports, never throws
  return 0;
}
