// Running the real vispec binary from a test: exit code and stderr (stdout discarded unless asked for).
#pragma once

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace vispec::test {

struct CliOutcome {
  int exit_code;
  std::string text;  // stderr, or stdout + stderr with keep_stdout
};

inline CliOutcome run_vispec(const std::string& args, bool keep_stdout = false) {
  const std::string cmd = std::string(VISPEC_BINARY) + " " + args + (keep_stdout ? " 2>&1" : " 2>&1 >/dev/null");
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) text.append(buf, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

inline int count_lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

}  // namespace vispec::test
