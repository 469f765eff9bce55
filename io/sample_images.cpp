#include "io/sample_images.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/png.h"
#include "io/run_layout.h"
#include "io/tar_archive.h"

namespace vispec {

SampleImages::SampleImages(std::string out) : out_(std::move(out)) {
  // A run writes one kind, which its journal's header names (the job's `output` is part of its identity; files,
  // the default, add nothing there): a stray shards/ folder is not a run's shards.
  const auto journal = out_ + "/journal.jsonl";
  std::string first;
  if (file_exists(journal)) {
    std::ifstream in(journal);
    std::getline(in, first);
  }
  const auto header = nlohmann::json::parse(first, nullptr, /*allow_exceptions=*/false);
  sharded_ = header.is_object() && header.contains("identity") && header["identity"].is_object() &&
             header["identity"].value("output", std::string("files")) == "shards";
}

std::vector<uint8_t> SampleImages::read(uint64_t sample_id, int64_t unit, const std::string& listed_in, int& width,
                                        int& height, int& channels) {
  if (!sharded_) {
    const auto path = image_path(out_, sample_id);
    VISPEC_CHECK(file_exists(path), path, ": missing (listed in ", listed_in, ")");
    return read_png(path, width, height, channels);
  }
  const auto shard = shard_path(out_, unit);
  if (unit != unit_) {
    VISPEC_CHECK(file_exists(shard), shard, ": missing (listed in ", listed_in, ")");
    members_.clear();
    unit_ = -1;
    for (auto& m : read_tar(shard)) members_[m.name] = std::move(m.contents);
    unit_ = unit;
  }
  const auto name = sample_stem(sample_id) + ".png";
  const auto it = members_.find(name);
  VISPEC_CHECK(it != members_.end(), shard, ": no member ", name, " (listed in ", listed_in, ")");
  return decode_png(it->second, shard + ":" + name, width, height, channels);
}

}  // namespace vispec
