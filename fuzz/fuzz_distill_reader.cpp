// The HDF5 readers: `vispec inspect` on any file (io/distill_index.h describe_h5) and the trainers' reader of
// a distillation index (io/distill_reader.h), which also reads a few rows when the index opens.
#include "fuzz/fuzz_input.h"
#include "io/distill_index.h"
#include "io/distill_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = vispec::fuzz::write_input(data, size, "out/distill/index.h5");
  try {
    vispec::describe_h5(path);
  } catch (const vispec::Error&) {
  }
  try {
    const vispec::DistillReader reader(path);
    if (reader.rows() > 0) reader.read(0, 1);
  } catch (const vispec::Error&) {
  }
  return 0;
}
