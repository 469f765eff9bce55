#include "train/checkpoint.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

#include "core/check.h"
#include "core/fault_injection.h"
#include "io/atomic_file.h"
#include "io/file_digest.h"
#include "models/checkpoints/load.h"
#include "train/train_loop.h"

namespace vispec {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFiles[] = {"weights.safetensors", "optimizer.pt", "state.json"};

std::string checkpoints_dir(const std::string& out) { return out + "/checkpoints"; }

std::string step_name(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step-%08lld", static_cast<long long>(step));
  return name;
}

// The step of a checkpoint directory's name "step-<digits>" (tmp: "step-<digits>.tmp.<digits>"), or -1.
int64_t step_of(const std::string& name, bool tmp) {
  if (name.rfind("step-", 0) != 0) return -1;
  const size_t dot = name.find(".tmp.");
  if (tmp != (dot != std::string::npos)) return -1;
  const std::string digits = name.substr(5, tmp ? dot - 5 : std::string::npos);
  const std::string pid = tmp ? name.substr(dot + 5) : "0";
  auto all_digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  return all_digits(digits) && all_digits(pid) ? std::stoll(digits) : -1;
}

// The options a resume must share with the checkpoint: they decide which batches, and how large a step.
nlohmann::json course_of(const TrainOptions& o) {
  return {{"batch_size", o.batch_size}, {"lr", o.lr}, {"warmup", o.warmup}, {"seed", o.seed}};
}

// The highest whole checkpoint's directory, or "" when there is none.
std::string latest(const std::string& out, int64_t& step) {
  step = -1;
  std::string found;
  std::error_code ec;
  if (!fs::is_directory(checkpoints_dir(out), ec)) return found;
  for (const auto& e : fs::directory_iterator(checkpoints_dir(out))) {
    const int64_t s = step_of(e.path().filename().string(), false);
    if (s > step) step = s, found = e.path().string();
  }
  return found;
}

// Removes the checkpoints older than `keep` and any checkpoint temporary: names of this file's forms only.
void remove_others(const std::string& out, int64_t keep) {
  for (const auto& e : fs::directory_iterator(checkpoints_dir(out))) {
    const auto name = e.path().filename().string();
    const int64_t old = step_of(name, false);
    if ((old >= 0 && old < keep) || step_of(name, true) >= 0) fs::remove_all(e.path());
  }
}

}  // namespace

int64_t resume_checkpoint(const TrainOptions& o, torch::nn::Module& model, torch::optim::Optimizer& opt) {
  int64_t step = 0;
  std::string dir = latest(o.out_dir, step);
  nlohmann::json state;
  if (dir.empty()) {
    // An older vispec's layout: the three files in OUT itself, written one after the other.
    if (!file_exists(o.out_dir + "/state.json")) return 0;
    spdlog::warn("{}: a checkpoint of an older vispec (its files were not written as one set): resumed as it is",
                 o.out_dir);
    state = nlohmann::json::parse(read_file(o.out_dir + "/state.json"));
    load_weights(model, o.out_dir + "/checkpoint.safetensors");
    torch::load(opt, o.out_dir + "/optimizer.pt");
  } else {
    const auto state_path = dir + "/state.json";
    try {
      state = nlohmann::json::parse(read_file(state_path));
    } catch (const nlohmann::json::exception& e) {
      VISPEC_FAIL(state_path, ": not a checkpoint's state (", e.what(), ")");
    }
    VISPEC_CHECK(state.contains("files") && state.contains("step") && state.contains("options"), state_path,
                 ": not a checkpoint's state (files, step and options missing)");
    for (const char* name : {kFiles[0], kFiles[1]}) {
      const auto path = dir + "/" + name;
      const auto& want = state["files"].at(name);
      const auto got = digest_file(path);
      VISPEC_CHECK(got.bytes == want.at("bytes").get<int64_t>() && crc32_hex(got.crc32) == want.at("crc32"), path, ": ",
                   got.bytes, " bytes, CRC-32 ", crc32_hex(got.crc32), "; the checkpoint recorded ",
                   want.at("bytes").get<int64_t>(), " bytes, ", want.at("crc32").get<std::string>(),
                   ": damaged; remove ", dir, " to resume from an earlier checkpoint, if any, or start over");
    }
    const auto course = course_of(o);
    if (state["options"] != course) {
      for (auto it = course.begin(); it != course.end(); ++it) {
        const auto was = state["options"].value(it.key(), nlohmann::json());
        if (was == *it) continue;
        if (o.resume_with_other_options) {
          spdlog::warn("{}: resumed with {} {} (the checkpoint's: {}), as --resume-with-other-options asks", dir,
                       it.key(), it->dump(), was.dump());
          continue;
        }
        VISPEC_FAIL(o.out_dir, ": its checkpoint of step ", state["step"].get<int64_t>(), " was trained with ",
                    it.key(), " ", was.dump(), ", not ", it->dump(), ": a resume continues the same training; give ",
                    "the same options, another --out, or --resume-with-other-options");
      }
    }
    load_weights(model, dir + "/weights.safetensors");
    torch::load(opt, dir + "/optimizer.pt");
  }
  step = state.at("step").get<int64_t>();
  VISPEC_CHECK(step <= o.steps, o.out_dir, ": its checkpoint is at step ", step, ", past --steps ", o.steps,
               ": give --steps ", step, " or more, or another --out");
  spdlog::info("resumed {} at step {}", o.out_dir, step);
  return step;
}

void save_checkpoint(const TrainOptions& o, const torch::nn::Module& model, torch::optim::Optimizer& opt, int64_t step,
                     const nlohmann::json& extra) {
  const auto root = checkpoints_dir(o.out_dir);
  make_directories(root);
  const auto final_dir = root + "/" + step_name(step);
  const auto tmp = final_dir + ".tmp." + std::to_string(::getpid());
  fs::remove_all(tmp);  // (this process's own leftover, by its name)
  make_directories(tmp);
  nlohmann::json state = extra;
  state["step"] = step;
  state["options"] = course_of(o);
  save_weights(model, tmp + "/weights.safetensors");  // written whole and fsynced (io/atomic_file.h)
  std::ostringstream archive;
  torch::save(opt, archive);
  write_file_atomic(tmp + "/optimizer.pt", archive.str(), /*sync_directory=*/false);
  for (const char* name : {kFiles[0], kFiles[1]}) {
    const auto d = digest_file(tmp + "/" + name);
    state["files"][name] = {{"bytes", d.bytes}, {"crc32", crc32_hex(d.crc32)}};
  }
  write_file_atomic(tmp + "/state.json", state.dump(2) + "\n");
  maybe_kill_at("kill-in-checkpoint", step);  // (tests: a kill with every file written, before the rename)
  // The set appears whole under its name, or not at all.
  if (fs::exists(final_dir)) fs::remove_all(final_dir);  // (a checkpoint of this step already: ours, replaced)
  std::error_code ec;
  fs::rename(tmp, final_dir, ec);
  VISPEC_CHECK(!ec, final_dir, ": cannot put the checkpoint in place: ", ec.message());
  fsync_directory(root);
  remove_others(o.out_dir, step);
}

}  // namespace vispec
