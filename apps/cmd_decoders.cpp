// vispec decoders: every decoder this build has, what it reads and its fields with their defaults (the
// decoder files' own registrations, so the list cannot drift from the code).
#include <iostream>

#include "apps/commands.h"
#include "decoding/common/decoder_config.h"

namespace vispec {

void add_decoders_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("decoders", "list the decoders, the drafters each reads and its job-file fields");
  cmd->callback([&action] {
    action = [] {
      std::cout << describe_decoders();
      return kExitOk;
    };
  });
}

}  // namespace vispec
