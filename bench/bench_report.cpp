#include "bench/bench_report.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench/bench_plot.h"
#include "core/check.h"
#include "io/atomic_file.h"

namespace vispec {

namespace {
// MuLo-SD's latency breakdown by the steps of its Algorithm 1 (the MuLo-SD paper, Fig. 7), as shares of its wall time
// per image, beside its NFE and the paper's theoretical speedup S_T = T_p / ((1 - a) T_p + T_q) (its Eq. 9,
// which counts a drafter forward as a target forward). Only decoders that report the step costs get a row.
std::string mulo_step_costs(const nlohmann::json& r) {
  std::string md;
  for (const auto& d : r["decoders"]) {
    const auto extra = d.value("extra_per_image", nlohmann::json::object());
    if (!extra.contains("upsample_ms")) continue;
    if (md.empty())
      md = "\nMuLo-SD's time by step of its Algorithm 1 (the MuLo-SD paper, Fig. 7), % of its wall time per image; S_T "
           "is the "
           "paper's Eq. 9 at the measured acceptance rate a (T_p, T_q: target and drafter tokens per image).\n\n"
           "| decoder | 1 draft | 2 up-sample | 3 verify | 4-5 accept, expand | 6 resample | 7 down-sample | other "
           "| resampled / image | target fwd | draft fwd | S_T (Eq. 9) | speedup |\n"
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    const auto& ph = d["phase_ms_per_image"];
    const double total = d["ms_per_image"].get<double>();
    const double steps[] = {ph["draft"].get<double>(),    extra["upsample_ms"].get<double>(),
                            ph["verify"].get<double>(),   extra["accept_ms"].get<double>(),
                            ph["resample"].get<double>(), extra["downsample_ms"].get<double>()};
    double other = total;
    std::string cells;
    for (double ms : steps) {
      cells += fmt::format(" {:.1f} |", 100 * ms / total);
      other -= ms;
    }
    const double tq = d["draft_forwards_per_image"].get<double>(), a = d["acceptance_rate"].get<double>();
    const double tp = d["target_forwards_per_image"].get<double>() * d["mean_accepted_length"].get<double>();
    md += fmt::format("| {} |{} {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.2f} | {:.2f} |\n", d["label"].get<std::string>(),
                      cells, 100 * other / total, extra.value("expanded", 0.0),
                      d["target_forwards_per_image"].get<double>(), tq, tp / ((1 - a) * tp + tq),
                      d["speedup"].get<double>());
  }
  return md;
}
}  // namespace

std::string bench_markdown(const nlohmann::json& r) {
  const std::string base = r["baseline"].get<std::string>();
  // A mean-tree-depth column only when some decoder drafts trees (ADT-Tree's figure of merit).
  bool trees = false, counts = true, idle = true;
  for (const auto& d : r["decoders"]) {
    trees = trees || d.value("mean_tree_depth", 0.0) > 0;
    counts = counts && d.contains("aten_ops_per_image");  // results written before the op counts had none
    idle = idle && d.contains("idle_row_fraction");       // nor before the idle rows were counted
  }
  // Results written before units and rows were told apart have a batch size alone.
  const std::string chunks = r.contains("unit_size")
                                 ? fmt::format(" in chunks of {} samples on {} rows", r["unit_size"].get<int64_t>(),
                                               r["batch_size"].get<int64_t>())
                                 : "";
  std::string md = fmt::format(
      "{} images per decoder (same prompts and seeds){}, device {} ({} threads), LibTorch {}, {}.{}\n\n"
      "| decoder | target fwd / image | draft fwd / image | mean accepted length |{} acceptance rate |{} ms / image "
      "|{} speedup vs {} | class agreement | FID |\n"
      "| --- | ---: | ---: | ---: |{} ---: |{} ---: |{} ---: | ---: | ---: |\n",
      r["images_per_decoder"].get<int64_t>(), chunks, r["device"].get<std::string>(), r["threads"].get<int64_t>(),
      r["libtorch"].get<std::string>(), r["date_utc"].get<std::string>(),
      idle ? " Idle rows: the share of the batches' row-iterations spent on rows whose image was done." : "",
      trees ? " mean tree depth |" : "", idle ? " idle rows |" : "",
      counts ? " ATen ops / image | host reads / image |" : "", base, trees ? " ---: |" : "", idle ? " ---: |" : "",
      counts ? " ---: | ---: |" : "");
  for (const auto& d : r["decoders"]) {
    const double depth = d.value("mean_tree_depth", 0.0);
    const std::string depth_cell = !trees ? "" : depth > 0 ? fmt::format(" {:.2f} |", depth) : " - |";
    const std::string idle_cell = idle ? fmt::format(" {:.1f}% |", 100 * d["idle_row_fraction"].get<double>()) : "";
    const std::string count_cells = !counts ? ""
                                            : fmt::format(" {:.0f} | {:.1f} |", d["aten_ops_per_image"].get<double>(),
                                                          d["host_reads_per_image"].get<double>());
    md += fmt::format("| {} | {:.1f} | {:.1f} | {:.2f} |{} {:.3f} |{} {:.1f} |{} {:.2f} | {:.3f} | {:.2f} |\n",
                      d["label"].get<std::string>(), d["target_forwards_per_image"].get<double>(),
                      d["draft_forwards_per_image"].get<double>(), d["mean_accepted_length"].get<double>(), depth_cell,
                      d["acceptance_rate"].get<double>(), idle_cell, d["ms_per_image"].get<double>(), count_cells,
                      d["speedup"].get<double>(), d["class_agreement"].get<double>(), d["fid"].get<double>());
  }
  return md + mulo_step_costs(r);
}

void write_bench_report(const nlohmann::json& r, const std::string& dir) {
  make_directories(dir);
  const std::string stem = dir + "/" + r["name"].get<std::string>();
  write_file_atomic(stem + ".json", r.dump(2) + "\n");
  write_file_atomic(stem + ".md", bench_markdown(r));
  write_bench_plots(r, stem);
  spdlog::info("bench results: {}.json, {}.md, {}.png, {}-accepted.png", stem, stem, stem, stem);
}

}  // namespace vispec
