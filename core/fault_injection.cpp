#include "core/fault_injection.h"

#include <csignal>
#include <cstdlib>

namespace vispec {

namespace {
struct Fault {
  std::string point;
  int64_t unit = -1;
};

const Fault& configured_fault() {
  static const Fault fault = [] {
    Fault f;
    const char* v = std::getenv("VISPEC_FAULT");
    if (!v) return f;
    const std::string s(v);
    const auto at = s.find('@');
    if (at == std::string::npos) return f;
    f.point = s.substr(0, at);
    f.unit = std::atoll(s.c_str() + at + 1);
    return f;
  }();
  return fault;
}
}  // namespace

bool fault_at(const std::string& point, int64_t unit) {
  const auto& f = configured_fault();
  return f.unit == unit && f.point == point;
}

int64_t fault_value(const std::string& point) {
  const auto& f = configured_fault();
  return f.point == point ? f.unit : -1;
}

void maybe_kill_at(const std::string& point, int64_t unit) {
  if (fault_at(point, unit)) std::raise(SIGKILL);
}

}  // namespace vispec
