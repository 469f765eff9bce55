#include "bench/bench_report.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <ctime>

#include "core/check.h"
#include "io/atomic_file.h"

namespace vispec {

namespace {
// gnuplot reads the points from a data file; labels are quoted strings.
std::string plot_data(const nlohmann::json& r) {
  std::string s;
  for (const auto& d : r["decoders"])
    s += fmt::format("\"{}\" {:.6f} {:.6f} {:.6f}\n", d["label"].get<std::string>(), d["speedup"].get<double>(),
                     d["fid"].get<double>(), d["class_agreement"].get<double>());
  return s;
}

// While alive, a write into a pipe whose reader is gone (gnuplot missing: `sh` exits at once) fails with EPIPE
// on this thread instead of killing the process with SIGPIPE; a SIGPIPE it raised is consumed on the way out.
class PipeSignalBlocked {
 public:
  PipeSignalBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &before_);
  }
  ~PipeSignalBlocked() {
    const timespec now{0, 0};
    while (sigtimedwait(&pipe_, nullptr, &now) == SIGPIPE) {
    }
    pthread_sigmask(SIG_SETMASK, &before_, nullptr);
  }

 private:
  sigset_t pipe_, before_;
};

void write_plot(const nlohmann::json& r, const std::string& png) {
  const std::string data = png + ".dat.tmp", tmp_png = png + ".tmp.png";
  write_file_atomic(data, plot_data(r));
  const std::string title = fmt::format("{}: {} images per decoder, {}", r["name"].get<std::string>(),
                                        r["images_per_decoder"].get<int64_t>(), r["device"].get<std::string>());
  const std::string script = fmt::format(
      "set terminal pngcairo size 1000,420 font ',10'\n"
      "set output '{out}'\n"
      "set multiplot layout 1,2 title '{title}'\n"
      "set grid\nset key off\nset offsets graph 0.1, graph 0.25, graph 0.1, graph 0.1\n"
      "set xlabel 'speedup vs {base} (wall time ratio, same run)'\n"
      "set ylabel 'FID (lower is better)'\n"
      "plot '{data}' using 2:3 with points pt 7 ps 1.2, '' using 2:3:1 with labels offset 1,0.7 left\n"
      "set ylabel 'class agreement (higher is better)'\n"
      "plot '{data}' using 2:4 with points pt 7 ps 1.2, '' using 2:4:1 with labels offset 1,0.7 left\n"
      "unset multiplot\n",
      fmt::arg("out", tmp_png), fmt::arg("title", title), fmt::arg("data", data),
      fmt::arg("base", r["baseline"].get<std::string>()));
  const PipeSignalBlocked no_sigpipe;
  FILE* gp = popen("gnuplot 2>&1", "w");
  int status = -1;
  if (gp) {
    std::fwrite(script.data(), 1, script.size(), gp);
    status = pclose(gp);
  }
  std::remove(data.c_str());
  if (status != 0 || !file_exists(tmp_png)) {
    std::remove(tmp_png.c_str());
    spdlog::warn("no plot written: gnuplot failed or is missing (Debian: apt-get install gnuplot-nox)");
    return;
  }
  VISPEC_CHECK(std::rename(tmp_png.c_str(), png.c_str()) == 0, png, ": cannot rename the plot into place");
}
// MuLo-SD's latency breakdown by the steps of its Algorithm 1 (the MuLo-SD paper, Fig. 7), as shares of its wall time
// per image, beside its NFE and the paper's theoretical speedup S_T = T_p / ((1 - a) T_p + T_q) (its Eq. 9,
// which counts a drafter forward as a target forward). Only decoders that report the step costs get a row.
std::string mulo_step_costs(const nlohmann::json& r) {
  std::string md;
  for (const auto& d : r["decoders"]) {
    const auto extra = d.value("extra_per_image", nlohmann::json::object());
    if (!extra.contains("upsample_ms")) continue;
    if (md.empty())
      md = "\nMuLo-SD's time by step of its Algorithm 1 (the MuLo-SD paper, Fig. 7), % of its wall time per image; S_T is the "
           "paper's Eq. 9 at the measured acceptance rate a (T_p, T_q: target and drafter tokens per image).\n\n"
           "| decoder | 1 draft | 2 up-sample | 3 verify | 4-5 accept, expand | 6 resample | 7 down-sample | other "
           "| resampled / image | target fwd | draft fwd | S_T (Eq. 9) | speedup |\n"
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    const auto& ph = d["phase_ms_per_image"];
    const double total = d["ms_per_image"].get<double>();
    const double steps[] = {ph["draft"].get<double>(),          extra["upsample_ms"].get<double>(),
                            ph["verify"].get<double>(),         extra["accept_ms"].get<double>(),
                            ph["resample"].get<double>(),       extra["downsample_ms"].get<double>()};
    double other = total;
    std::string cells;
    for (double ms : steps) {
      cells += fmt::format(" {:.1f} |", 100 * ms / total);
      other -= ms;
    }
    const double tq = d["draft_forwards_per_image"].get<double>(), a = d["acceptance_rate"].get<double>();
    const double tp = d["target_forwards_per_image"].get<double>() * d["mean_accepted_length"].get<double>();
    md += fmt::format("| {} |{} {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.2f} | {:.2f} |\n", d["label"].get<std::string>(),
                      cells, 100 * other / total, extra.value("expanded", 0.0), d["target_forwards_per_image"].get<double>(),
                      tq, tp / ((1 - a) * tp + tq), d["speedup"].get<double>());
  }
  return md;
}
}  // namespace

std::string bench_markdown(const nlohmann::json& r) {
  const std::string base = r["baseline"].get<std::string>();
  // A mean-tree-depth column only when some decoder drafts trees (ADT-Tree's figure of merit).
  bool trees = false, counts = true;
  for (const auto& d : r["decoders"]) {
    trees = trees || d.value("mean_tree_depth", 0.0) > 0;
    counts = counts && d.contains("aten_ops_per_image");  // results written before the op counts had none
  }
  std::string md = fmt::format(
      "{} images per decoder (same prompts and seeds), device {} ({} threads), LibTorch {}, {}.\n\n"
      "| decoder | target fwd / image | draft fwd / image | mean accepted length |{} acceptance rate | ms / image "
      "|{} speedup vs {} | class agreement | FID |\n"
      "| --- | ---: | ---: | ---: |{} ---: | ---: |{} ---: | ---: | ---: |\n",
      r["images_per_decoder"].get<int64_t>(), r["device"].get<std::string>(), r["threads"].get<int64_t>(),
      r["libtorch"].get<std::string>(), r["date_utc"].get<std::string>(), trees ? " mean tree depth |" : "",
      counts ? " ATen ops / image | host reads / image |" : "", base, trees ? " ---: |" : "",
      counts ? " ---: | ---: |" : "");
  for (const auto& d : r["decoders"]) {
    const double depth = d.value("mean_tree_depth", 0.0);
    const std::string depth_cell = !trees ? "" : depth > 0 ? fmt::format(" {:.2f} |", depth) : " - |";
    const std::string count_cells =
        !counts ? "" : fmt::format(" {:.0f} | {:.1f} |", d["aten_ops_per_image"].get<double>(),
                                   d["host_reads_per_image"].get<double>());
    md += fmt::format("| {} | {:.1f} | {:.1f} | {:.2f} |{} {:.3f} | {:.1f} |{} {:.2f} | {:.3f} | {:.2f} |\n",
                      d["label"].get<std::string>(), d["target_forwards_per_image"].get<double>(),
                      d["draft_forwards_per_image"].get<double>(), d["mean_accepted_length"].get<double>(), depth_cell,
                      d["acceptance_rate"].get<double>(), d["ms_per_image"].get<double>(), count_cells,
                      d["speedup"].get<double>(), d["class_agreement"].get<double>(), d["fid"].get<double>());
  }
  return md + mulo_step_costs(r);
}

void write_bench_report(const nlohmann::json& r, const std::string& dir) {
  make_directories(dir);
  const std::string stem = dir + "/" + r["name"].get<std::string>();
  write_file_atomic(stem + ".json", r.dump(2) + "\n");
  write_file_atomic(stem + ".md", bench_markdown(r));
  write_plot(r, stem + ".png");
  spdlog::info("bench results: {}.json, {}.md, {}.png", stem, stem, stem);
}

}  // namespace vispec
