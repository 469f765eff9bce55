// vispec train {vq, gpt, classifier}: trainers for the embedded model.
#include "apps/commands.h"
#include "train/trainers.h"

namespace vispec {

namespace {
void add_common(CLI::App* cmd, TrainOptions& o) {
  cmd->add_option("--config", o.config, "model config (architecture)")->required();
  cmd->add_option("--out", o.out_dir, "run directory (checkpoints, log); rerun to resume")->required();
  cmd->add_option("--export", o.export_path, "final weights (.safetensors); default OUT/model.safetensors");
  cmd->add_option("--device", o.device, "auto, cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--threads", o.threads, "CPU threads (0 = LibTorch default)")->capture_default_str();
  cmd->add_option("--steps", o.steps, "optimizer steps")->capture_default_str();
  cmd->add_option("--batch-size", o.batch_size)->capture_default_str();
  cmd->add_option("--lr", o.lr, "peak learning rate")->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "linear warm-up steps")->capture_default_str();
  cmd->add_option("--weight-decay", o.weight_decay)->capture_default_str();
  cmd->add_option("--log-every", o.log_every)->capture_default_str();
  cmd->add_option("--checkpoint-every", o.checkpoint_every)->capture_default_str();
  cmd->add_option("--seed", o.seed)->capture_default_str();
}
}  // namespace

void add_train_commands(CLI::App& app, Action& action) {
  auto* train = app.add_subcommand("train", "train a model of the embedded model family");
  train->require_subcommand(1);
  static TrainOptions vq, gpt, classifier;
  auto* vq_cmd = train->add_subcommand("vq", "the VQ tokenizer on Fashion-MNIST");
  add_common(vq_cmd, vq);
  vq_cmd->callback([&action] { action = [] { train_vq(vq); return kExitOk; }; });
  auto* gpt_cmd = train->add_subcommand("gpt", "the class-conditional GPT on VQ tokens of Fashion-MNIST");
  add_common(gpt_cmd, gpt);
  gpt_cmd->callback([&action] { action = [] { train_gpt(gpt); return kExitOk; }; });
  auto* cls_cmd = train->add_subcommand("classifier", "the evaluation classifier (vispec eval) on Fashion-MNIST");
  add_common(cls_cmd, classifier);
  cls_cmd->callback([&action] { action = [] { train_classifier(classifier); return kExitOk; }; });
}

}  // namespace vispec
