#include "io/prompts.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/check.h"

namespace vispec {

std::vector<Prompt> read_prompts(const std::string& path) {
  std::ifstream in(path);
  VISPEC_CHECK(in.good(), path, ": cannot read prompts file: ", std::strerror(errno));
  std::vector<Prompt> out;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    const auto b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    out.push_back({n, line.substr(b, e - b + 1)});
  }
  VISPEC_CHECK(!out.empty(), path, ": the prompts file holds no prompts");
  return out;
}

}  // namespace vispec
