// The one-line message a call refuses its input with (vispec::Error), or "" if it accepted it.
#pragma once

#include <functional>
#include <string>

#include "core/check.h"

namespace vispec::test {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace vispec::test
