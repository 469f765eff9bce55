// The journal reader (scheduler/journal.h) as `vispec verify` and `distill-index` open it, and the file
// lists of its records (io/unit_files.h).
#include "fuzz/fuzz_input.h"
#include "scheduler/journal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto out = vispec::fuzz::input_dir() + "/out";
  vispec::fuzz::write_input(data, size, "out/journal.jsonl");
  try {
    vispec::Journal journal(out);
    vispec::distill_units(journal.done());
  } catch (const vispec::Error&) {
  }
  return 0;
}
