// Errors. Library code throws; only apps/main.cpp turns an error into a message and an exit code.
//
//   VISPEC_CHECK(cond, "jobs/x.yaml:12: decoder.name: unknown decoder '", name, "'")
//     -> a user-facing vispec::Error whose message is exactly the concatenated arguments (one line,
//        naming the input file, line and field; no C++ source location, which means nothing to a user).
//   VISPEC_ASSERT(cond, ...)
//     -> an internal invariant; the message carries the C++ file and line because it is our bug.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace vispec {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream s;
  (s << ... << args);
  return s.str();
}
}  // namespace detail

}  // namespace vispec

#define VISPEC_CHECK(cond, ...)                                                \
  do {                                                                         \
    if (!(cond)) throw ::vispec::Error(::vispec::detail::concat(__VA_ARGS__)); \
  } while (0)

#define VISPEC_FAIL(...) throw ::vispec::Error(::vispec::detail::concat(__VA_ARGS__))

#define VISPEC_ASSERT(cond, ...)                                                                                     \
  do {                                                                                                               \
    if (!(cond))                                                                                                     \
      throw ::vispec::Error(                                                                                         \
          ::vispec::detail::concat("internal error at ", __FILE__, ":", __LINE__, ": ", #cond, " ", ##__VA_ARGS__)); \
  } while (0)
