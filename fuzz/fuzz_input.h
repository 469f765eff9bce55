// Shared by the fuzz targets: the readers under test take file paths, so each input is written to a file in a
// private directory first. The contract every target checks is vispec's rule for untrusted input: a bad file
// is refused with vispec::Error (one line, exit 2), never another exception (which the CLI reports as an
// internal error), a crash, a hang or a sanitizer finding. So only Error is caught; anything else escapes to
// libFuzzer, which reports it with the input that caused it.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/check.h"

namespace vispec::fuzz {

inline std::string input_dir() {
  static const std::string dir = [] {
    const auto d = std::filesystem::temp_directory_path() / ("vispec_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}

// Writes the input to <private dir>/<name> and returns the path.
inline std::string write_input(const uint8_t* data, size_t size, const std::string& name) {
  const auto path = input_dir() + "/" + name;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return path;
}

}  // namespace vispec::fuzz
