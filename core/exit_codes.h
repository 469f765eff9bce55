// Exit codes of the vispec executable (documented in README.md; scripts such as Slurm requeue wrappers test them).
#pragma once

namespace vispec {
inline constexpr int kExitOk = 0;
inline constexpr int kExitUserError = 2;      // bad input (job, config, prompts, weights, command line) or an
                                              // unusable output directory: one line says which
inline constexpr int kExitInternalError = 3;  // a bug or an unexpected environment failure
inline constexpr int kExitInterrupted = 4;    // stopped by SIGTERM/SIGUSR1/SIGINT; journal flushed: rerun to resume
inline constexpr int kExitPromptErrors = 5;   // finished, but some prompt lines were skipped (OUT/errors.jsonl)
inline constexpr int kExitBrokenOutputs = 6;  // vispec verify: journaled outputs are missing or damaged
}  // namespace vispec
