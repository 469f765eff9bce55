// The job file parser (io/job_config.h), with and without a --set override taken from the input's first line.
#include "fuzz/fuzz_input.h"
#include "io/job_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto path = vispec::fuzz::write_input(data, size, "job.yaml");
  try {
    vispec::load_job_config(path);
  } catch (const vispec::Error&) {
  }
  try {
    vispec::load_job_config(path, {text.substr(0, text.find('\n'))});
  } catch (const vispec::Error&) {
  }
  return 0;
}
