// A job's replacement of one weight path of its model config (io/job_config.h's `model:` map, or --set
// model.drafters.eagle_head=PATH): which field, the file (resolved against the job file's directory), and the
// job's line, for errors. models/model_config.h applies them.
#pragma once

#include <string>

namespace vispec {

struct WeightOverride {
  std::string field;  // as the model config spells it: "gpt.weights", "drafters.eagle_head", ...
  std::string path;
  std::string where;  // "job.yaml:4: model.drafters.eagle_head"
};

}  // namespace vispec
