// vispec train {vq, gpt, classifier, eagle-head, ssd-heads, mulo-resamplers}: trainers for the embedded model and
// its drafters, alone or data-parallel under mpirun / srun.
#include <spdlog/spdlog.h>

#include <functional>

#include "apps/commands.h"
#include "core/device.h"
#include "scheduler/nccl_data_parallel.h"
#include "scheduler/mpi_node_weights.h"
#include "scheduler/output_lock.h"
#include "train/trainers.h"

namespace vispec {

namespace {
// Runs a trainer on every rank of the job, data-parallel (train/data_parallel.h), or alone without a launcher.
// A failure on any rank ends every rank with one line (fail_all_ranks): a rank never waits for a gradient sum
// that will not come.
int run_trainer(TrainOptions& o, const std::function<void()>& train) {
  MpiSession session;
  if (session.size() == 1) {
    const OutputLock lock(o.out_dir);  // one writer per training directory: its checkpoints and log
    train();
    return kExitOk;
  }
  if (session.rank() != 0) spdlog::set_level(spdlog::level::warn);  // rank 0 reports for all
  try {
    std::unique_ptr<OutputLock> lock;  // rank 0 writes the checkpoints and the log
    if (session.rank() == 0) lock = std::make_unique<OutputLock>(o.out_dir);
    o.local_rank = session.local_rank();  // a node's ranks train on its GPUs in turn
    o.parallel = make_data_parallel(session, pick_device(o.device, o.local_rank));
    if (o.read_weights == "once_per_node") o.node_weights = std::make_shared<MpiNodeWeights>(session);
    train();
  } catch (const std::exception& e) {
    fail_all_ranks(session, e);
  }
  o.parallel.reset();
  o.node_weights.reset();
  return kExitOk;
}

void add_common(CLI::App* cmd, TrainOptions& o) {
  cmd->add_option("--config", o.config, "model config (architecture)")->required();
  cmd->add_option("--out", o.out_dir, "run directory (checkpoints, log); rerun to resume")->required();
  cmd->add_option("--export", o.export_path, "final weights (.safetensors); default OUT/model.safetensors");
  cmd->add_option("--device", o.device, "auto, cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--threads", o.threads, "CPU threads (0 = LibTorch default)")
      ->capture_default_str()
      ->check(CLI::Range(0, kMaxThreads));
  cmd->add_option("--steps", o.steps, "optimizer steps")->capture_default_str();
  cmd->add_option("--batch-size", o.batch_size)->capture_default_str();
  cmd->add_option("--lr", o.lr, "peak learning rate")->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "linear warm-up steps")->capture_default_str();
  cmd->add_option("--weight-decay", o.weight_decay)->capture_default_str();
  cmd->add_option("--log-every", o.log_every)->capture_default_str();
  cmd->add_option("--checkpoint-every", o.checkpoint_every)->capture_default_str();
  cmd->add_option("--seed", o.seed)->capture_default_str();
  cmd->add_flag("--resume-with-other-options", o.resume_with_other_options,
                "resume a checkpoint although --batch-size, --lr, --warmup or --seed differ from its");
  cmd->add_option("--read-weights", o.read_weights,
                  "frozen models' weights under mpirun: every_rank, or once_per_node (a node's first rank reads)")
      ->check(CLI::IsMember({"every_rank", "once_per_node"}))
      ->capture_default_str();
}

void add_head_options(CLI::App* cmd, HeadTrainOptions& o) {
  add_common(cmd, o);
  o.eval_at_start = true;
  cmd->add_option("--data", o.data, "distillation data: OUT/distill/index.h5 or the run directory OUT")->required();
  cmd->add_option("--init", o.init, "start from this head file (checked against the target)");
  cmd->add_option("--null-fraction", o.null_fraction, "rows trained on the uncond stream (CFG)")->capture_default_str();
  cmd->add_option("--heldout-units", o.heldout_units, "last units kept for evaluation (0 = 2%, at least 1)")
      ->capture_default_str();
  cmd->add_option("--heldout-rows", o.heldout_rows, "held-out samples evaluated per checkpoint")->capture_default_str();
  cmd->add_option("--window-rows", o.window_rows, "rows read and shuffled together")->capture_default_str();
}
}  // namespace

void add_train_commands(CLI::App& app, Action& action) {
  auto* train = app.add_subcommand(
      "train", "train drafters from distillation data (any model), or the embedded model's parts on Fashion-MNIST");
  train->require_subcommand(1);
  static TrainOptions vq, gpt, classifier, mulo;
  static HeadTrainOptions eagle, ssd;
  auto* vq_cmd = train->add_subcommand("vq", "the VQ tokenizer on Fashion-MNIST");
  add_common(vq_cmd, vq);
  vq_cmd->add_option("--eval-images", vq.eval_images, "test images reconstructed at each checkpoint")
      ->check(CLI::Range(int64_t(1), int64_t(10000)))
      ->capture_default_str();
  vq_cmd->callback([&action] { action = [] { return run_trainer(vq, [] { train_vq(vq); }); }; });
  auto* gpt_cmd = train->add_subcommand(
      "gpt",
      "a class-conditional GPT (or its drafters) on VQ tokens of Fashion-MNIST, an image folder or LlamaGen codes");
  add_common(gpt_cmd, gpt);
  gpt_cmd->add_flag("--drafter", gpt.drafter,
                    "train the config's drafters.gpt (SD's small drafter) instead of the target");
  gpt_cmd->add_flag("--mulo", gpt.mulo, "train drafters.mulo.gpt (MuLo-SD's drafter) on half-resolution images");
  gpt_cmd->add_option("--images", gpt.images,
                      "an image folder in ImageNet's layout (one sub-folder per class, PNG or JPEG files)");
  gpt_cmd->add_option("--codes", gpt.codes, "LlamaGen's extracted codes (its --code-path: <dataset><size>_codes/)");
  gpt_cmd->callback([&action] { action = [] { return run_trainer(gpt, [] { train_gpt(gpt); }); }; });
  auto* cls_cmd = train->add_subcommand("classifier", "the evaluation classifier (vispec eval) on Fashion-MNIST");
  add_common(cls_cmd, classifier);
  cls_cmd->callback(
      [&action] { action = [] { return run_trainer(classifier, [] { train_classifier(classifier); }); }; });
  auto* eagle_cmd = train->add_subcommand("eagle-head", "EAGLE-2's drafter for the target, from distillation data");
  add_head_options(eagle_cmd, eagle);
  eagle_cmd->add_option("--noise-std", eagle.noise_std, "uniform input noise, scaled by 512/T as EAGLE")
      ->capture_default_str();
  eagle_cmd->add_option("--ploss-weight", eagle.ploss_weight, "weight of the token cross-entropy")
      ->capture_default_str();
  eagle_cmd->callback([&action] { action = [] { return run_trainer(eagle, [] { train_eagle_head(eagle); }); }; });
  auto* ssd_cmd = train->add_subcommand("ssd-heads", "SSD's horizontal and vertical heads, from distillation data");
  add_head_options(ssd_cmd, ssd);
  ssd_cmd->add_option("--horizontal", ssd.horizontal, "kh: heads for +1 .. +kh in the row")->capture_default_str();
  ssd_cmd->add_option("--vertical", ssd.vertical, "kv: heads for the kv rows below")->capture_default_str();
  ssd_cmd->callback([&action] { action = [] { return run_trainer(ssd, [] { train_ssd_heads(ssd); }); }; });
  auto* mulo_cmd = train->add_subcommand("mulo-resamplers", "MuLo-SD's U_2 / D_2, through the frozen VQ decoder");
  add_common(mulo_cmd, mulo);
  static double token_weight = 0;
  mulo_cmd->add_option("--max-images", mulo.max_images, "the first N training images only (0 = all)")
      ->capture_default_str();
  mulo_cmd->add_option("--images", mulo.images,
                       "an image folder in ImageNet's layout (one sub-folder per class, PNG or JPEG files)");
  mulo_cmd
      ->add_option("--token-weight", token_weight,
                   "weight of a cross-entropy on the nearest-code tokens (0: the "
                   "paper's MSE + commitment only)")
      ->capture_default_str();
  mulo_cmd->callback(
      [&action] { action = [] { return run_trainer(mulo, [] { train_mulo_resamplers(mulo, token_weight); }); }; });
}

}  // namespace vispec
