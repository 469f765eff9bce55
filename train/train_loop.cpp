#include "train/train_loop.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/check.h"
#include "core/device.h"
#include "core/fault_injection.h"
#include "core/logging.h"
#include "io/atomic_file.h"
#include "models/checkpoints/load.h"
#include "train/checkpoint.h"

namespace vispec {

DataParallel& TrainOptions::ranks() const {
  static SingleProcess single;
  return parallel ? *parallel : single;
}

namespace {
// Sums every parameter's gradient over the ranks, as one flat buffer (one collective per step). A gradient a
// rank's step left undefined counts as zeros, so every rank sends the same layout; one the step left undefined
// on every rank stays undefined (the optimizer skips such a parameter, as it would alone).
void sum_gradients(torch::nn::Module& model, DataParallel& ranks) {
  if (ranks.size() == 1) return;
  std::vector<torch::Tensor> params, parts;
  for (auto& p : model.parameters())
    if (p.requires_grad()) params.push_back(p);
  if (params.empty()) return;
  // On the parameters' device: NCCL sums GPU memory in place (MPI copies through the host itself).
  const auto on = torch::TensorOptions().device(params.front().device()).dtype(torch::kFloat32);
  for (const auto& p : params)
    parts.push_back(p.grad().defined() ? p.grad().reshape(-1).to(on) : torch::zeros({p.numel()}, on));
  std::vector<float> defined;
  for (const auto& p : params) defined.push_back(p.grad().defined() ? 1.0f : 0.0f);
  parts.push_back(torch::tensor(defined).to(on));
  auto flat = torch::cat(parts).contiguous();
  ranks.sum(flat);
  // Which gradients some rank defined: one read of the host, not one per parameter.
  const auto any = flat.narrow(0, flat.numel() - int64_t(params.size()), int64_t(params.size())).to(torch::kCPU);
  const auto defined_somewhere = any.accessor<float, 1>();
  int64_t at = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    auto& p = params[i];
    if (defined_somewhere[int64_t(i)] > 0) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      p.mutable_grad().copy_(flat.narrow(0, at, p.numel()).view_as(p));
    }
    at += p.numel();
  }
}

// Every rank starts from rank 0's parameters and buffers (a rank that drew its initialisation after other
// random draws would otherwise hold another model): a sum in which the other ranks contribute zeros.
void sync_parameters(torch::nn::Module& model, DataParallel& ranks) {
  if (ranks.size() == 1) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> tensors;
  for (auto& p : model.parameters()) tensors.push_back(p);
  for (auto& b : model.buffers())
    if (b.is_floating_point()) tensors.push_back(b);
  for (auto& t : tensors) {
    auto flat =
        (ranks.rank() == 0 ? t.detach().reshape(-1).to(torch::kCPU, torch::kFloat32) : torch::zeros({t.numel()}))
            .contiguous();
    ranks.sum(flat);
    t.copy_(flat.view_as(t));
  }
}

// The loss and extra scalars of the whole batch: each rank's shard-weighted values, summed over the ranks.
nlohmann::json batch_record(const StepResult& result, const BatchShard& shard, DataParallel& ranks) {
  std::vector<torch::Tensor> values = {result.loss.detach()};
  for (const auto& [name, value] : result.extra) values.push_back(value.detach());
  auto packed = (torch::stack(values).to(torch::kCPU, torch::kFloat32) * shard.weight()).contiguous();
  ranks.sum(packed);
  nlohmann::json record = {{"loss", packed[0].item<double>()}};
  size_t i = 1;
  for (const auto& [name, value] : result.extra) record[name] = packed[int64_t(i++)].item<double>();
  return record;
}
}  // namespace

torch::Device prepare_training(const TrainOptions& o) {
  set_threads(o.threads);
  make_directories(o.out_dir);
  torch::manual_seed(o.seed);
  return pick_device(o.device, o.local_rank);
}

void run_training(const TrainOptions& o, torch::nn::Module& model, torch::optim::Optimizer& opt,
                  const std::function<StepResult(int64_t step)>& step_fn,
                  const std::function<nlohmann::json()>& eval_fn, std::map<std::string, std::string> metadata,
                  const std::vector<std::vector<torch::Tensor>>& clip_groups) {
  auto& ranks = o.ranks();
  const auto shard = o.shard();
  VISPEC_CHECK(shard.count > 0, "train: --batch-size ", o.batch_size, " gives rank ", ranks.rank(),
               " no rows: use at least one row per rank (", ranks.size(), " ranks)");
  int64_t step = resume_checkpoint(o, model, opt);
  const int64_t first_step = step;  // of this run: the rate counts its own steps
  sync_parameters(model, ranks);
  if (step == 0 && o.eval_at_start && o.writes()) {
    auto eval = eval_fn();
    eval["step"] = 0;
    log_train_step(o.out_dir, eval);
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (; step < o.steps; ++step) {
    maybe_kill_at("kill-at-step", step);
    if (fault_at("train-error", step)) throw std::runtime_error("injected training failure (VISPEC_FAULT)");
    const double lr = learning_rate(o, step);
    set_learning_rate(opt, lr);
    auto result = step_fn(step);
    opt.zero_grad();
    // Weighted by the shard's share of the batch, the ranks' gradients sum to the whole batch's.
    (result.loss * shard.weight()).backward();
    sum_gradients(model, ranks);
    if (clip_groups.empty()) {
      torch::nn::utils::clip_grad_norm_(model.parameters(), o.grad_clip);
    } else {
      for (const auto& group : clip_groups) torch::nn::utils::clip_grad_norm_(group, o.grad_clip);
    }
    opt.step();
    const bool last = step + 1 == o.steps;
    if ((step + 1) % o.log_every == 0 || last) {
      auto batch = batch_record(result, shard, ranks);  // every rank takes part in the sum
      nlohmann::json record = {{"step", step + 1}, {"loss", batch["loss"]}, {"lr", lr}};
      for (const auto& [name, value] : result.extra) record[name] = batch[name];
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double steps_per_s = elapsed > 0 ? double(step + 1 - first_step) / elapsed : 0.0;
      record["elapsed_s"] = elapsed;
      record["samples_per_s"] = steps_per_s * double(o.batch_size);  // the whole batch, every rank's rows
      record["eta"] = steps_per_s > 0 ? hours_minutes_seconds(double(o.steps - step - 1) / steps_per_s) : "?";
      if (ranks.size() > 1) record["ranks"] = ranks.size();
      if (o.writes()) log_train_step(o.out_dir, record);
    }
    if (((step + 1) % o.checkpoint_every == 0 || last) && o.writes()) {
      auto eval = eval_fn();
      eval["step"] = step + 1;
      log_train_step(o.out_dir, eval);
      save_checkpoint(o, model, opt, step + 1, eval);
    }
  }
  if (o.writes()) {
    const std::string dst = o.export_path.empty() ? o.out_dir + "/model.safetensors" : o.export_path;
    metadata["format_version"] = "1";
    metadata["steps"] = std::to_string(o.steps);
    save_weights(model, dst, metadata);
    spdlog::info("wrote {}", dst);
  }
  ranks.barrier();  // no rank's job ends before the weights are written
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
