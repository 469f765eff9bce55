// Exit codes of the vispec executable (documented in README.md; scripts such as Slurm requeue wrappers test them).
#pragma once

namespace vispec {
inline constexpr int kExitOk = 0;
inline constexpr int kExitUserError = 2;      // bad input: job file, config, prompts, weights, command line
inline constexpr int kExitInternalError = 3;  // a bug or an environment failure
}  // namespace vispec
