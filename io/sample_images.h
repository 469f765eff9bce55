// A finished run's images, by sample, wherever the run put them: OUT/images/<stem>.png (output: files) or
// the member <stem>.png of its unit's archive OUT/shards/unit-<unit>.tar (output: shards). The readers of a
// run (vispec eval, vispec grid) go through this, so they read both.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vispec {

class SampleImages {
 public:
  explicit SampleImages(std::string out);
  // Sample `sample_id` of unit `unit` (metrics.jsonl names both), decoded; a missing file or member is one
  // line naming it and `listed_in`.
  std::vector<uint8_t> read(uint64_t sample_id, int64_t unit, const std::string& listed_in, int& width, int& height,
                            int& channels);

 private:
  std::string out_;
  bool sharded_ = false;
  int64_t unit_ = -1;                           // the archive read last, kept: samples come unit by unit
  std::map<std::string, std::string> members_;  // its members by name
};

}  // namespace vispec
