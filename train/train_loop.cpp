#include "train/train_loop.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/check.h"
#include "core/device.h"
#include "io/atomic_file.h"
#include "models/load.h"

namespace vispec {

torch::Device prepare_training(const TrainOptions& o) {
  set_threads(o.threads);
  make_directories(o.out_dir);
  torch::manual_seed(o.seed);
  return pick_device(o.device);
}

void run_training(const TrainOptions& o, torch::nn::Module& model, torch::optim::Optimizer& opt,
                  const std::function<StepResult(int64_t step)>& step_fn,
                  const std::function<nlohmann::json()>& eval_fn, std::map<std::string, std::string> metadata,
                  const std::vector<std::vector<torch::Tensor>>& clip_groups) {
  int64_t step = resume_checkpoint(o.out_dir, model, opt);
  if (step == 0 && o.eval_at_start) {
    auto eval = eval_fn();
    eval["step"] = 0;
    log_train_step(o.out_dir, eval);
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (; step < o.steps; ++step) {
    const double lr = learning_rate(o, step);
    set_learning_rate(opt, lr);
    auto result = step_fn(step);
    opt.zero_grad();
    result.loss.backward();
    if (clip_groups.empty()) {
      torch::nn::utils::clip_grad_norm_(model.parameters(), o.grad_clip);
    } else {
      for (const auto& group : clip_groups) torch::nn::utils::clip_grad_norm_(group, o.grad_clip);
    }
    opt.step();
    const bool last = step + 1 == o.steps;
    if ((step + 1) % o.log_every == 0 || last) {
      nlohmann::json record = {{"step", step + 1}, {"loss", result.loss.item<double>()}, {"lr", lr}};
      for (const auto& [name, value] : result.extra) record[name] = value.item<double>();
      record["elapsed_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      log_train_step(o.out_dir, record);
    }
    if ((step + 1) % o.checkpoint_every == 0 || last) {
      auto eval = eval_fn();
      eval["step"] = step + 1;
      log_train_step(o.out_dir, eval);
      save_checkpoint(o.out_dir, model, opt, step + 1, eval);
    }
  }
  const std::string dst = o.export_path.empty() ? o.out_dir + "/model.safetensors" : o.export_path;
  metadata["format_version"] = "1";
  metadata["steps"] = std::to_string(o.steps);
  save_weights(model, dst, metadata);
  spdlog::info("wrote {}", dst);
}

double learning_rate(const TrainOptions& o, int64_t step) {
  if (step < o.warmup) return o.lr * double(step + 1) / double(o.warmup);
  const double t = double(step - o.warmup) / double(std::max<int64_t>(1, o.steps - o.warmup));
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, t)));
  return o.lr * (o.min_lr_ratio + (1.0 - o.min_lr_ratio) * cosine);
}

void set_learning_rate(torch::optim::Optimizer& opt, double lr) {
  for (auto& group : opt.param_groups()) group.options().set_lr(lr);
}

torch::Tensor batch_indices(uint64_t seed, int64_t step, int64_t dataset_size, int64_t batch_size) {
  auto gen = at::detail::createCPUGenerator(seed * 1000003ull + uint64_t(step));
  return torch::randint(dataset_size, {batch_size}, gen, torch::TensorOptions().dtype(torch::kInt64));
}

int64_t resume_checkpoint(const std::string& out_dir, torch::nn::Module& model, torch::optim::Optimizer& opt) {
  const std::string state = out_dir + "/state.json";
  if (!file_exists(state)) return 0;
  const auto json = nlohmann::json::parse(read_file(state));
  load_weights(model, out_dir + "/checkpoint.safetensors");
  torch::load(opt, out_dir + "/optimizer.pt");
  const int64_t step = json.at("step").get<int64_t>();
  spdlog::info("resumed {} at step {}", out_dir, step);
  return step;
}

void save_checkpoint(const std::string& out_dir, const torch::nn::Module& model, torch::optim::Optimizer& opt,
                     int64_t step, const nlohmann::json& extra) {
  // Weights and optimizer first, state.json last: state.json names a step only once both are whole.
  save_weights(model, out_dir + "/checkpoint.safetensors");
  const std::string opt_path = out_dir + "/optimizer.pt", tmp = opt_path + ".tmp";
  torch::save(opt, tmp);
  VISPEC_CHECK(std::rename(tmp.c_str(), opt_path.c_str()) == 0, opt_path, ": rename failed");
  nlohmann::json state = extra;
  state["step"] = step;
  write_file_atomic(out_dir + "/state.json", state.dump(2) + "\n");
}

void log_train_step(const std::string& out_dir, const nlohmann::json& record) {
  append_file_synced(out_dir + "/log.jsonl", record.dump() + "\n");
  std::string line;
  for (auto it = record.begin(); it != record.end(); ++it) {
    if (!line.empty()) line += "  ";
    line += it.key() + "=";
    line += it->is_number_float() ? fmt::format("{:.4g}", it->get<double>()) : it->dump();
  }
  spdlog::info("{}", line);
}

}  // namespace vispec
