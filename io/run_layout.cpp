#include "io/run_layout.h"

#include <cstdio>

namespace vispec {

std::string sample_stem(uint64_t sample_id) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%08llu", static_cast<unsigned long long>(sample_id));
  return buf;
}

}  // namespace vispec
