// The tar reader (io/tar_archive.h): `vispec eval` and `vispec grid` read a run's archives, which are files on
// a shared file system like any other input, so a damaged one is refused with one Error or read whole.
#include "fuzz/fuzz_input.h"
#include "io/tar_archive.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = vispec::fuzz::write_input(data, size, "unit-000000.tar");
  try {
    size_t bytes = 0;
    for (const auto& m : vispec::read_tar(path)) bytes += m.contents.size() + 512;
    if (bytes > size) __builtin_trap();  // a member cannot hold more than the archive did
  } catch (const vispec::Error&) {
  }
  return 0;
}
