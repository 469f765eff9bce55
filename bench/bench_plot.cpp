#include "bench/bench_plot.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <vector>

#include "core/check.h"
#include "io/atomic_file.h"

namespace vispec {

namespace {

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

// Twelve colours told apart at a glance (Paul Tol's "muted" and "bright" sets), one per family; a thirteenth
// family starts the cycle again. gnuplot's own cycle has eight.
const char* const kPalette[] = {"#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77",
                                "#CC6677", "#882255", "#AA4499", "#EE7733", "#000000", "#BBBBBB"};

// The legend's groups in order of first appearance, and each variant's group number (from 1): the variants
// themselves where there are no more than colours, else their decoder families.
struct Families {
  std::vector<std::string> names;
  std::vector<int> of_row;
};

Families families_of(const nlohmann::json& r) {
  Families f;
  const bool by_variant = r["decoders"].size() <= std::size(kPalette);
  for (const auto& d : r["decoders"]) {
    const auto label = d["label"].get<std::string>();
    const auto name = by_variant ? label : d.value("decoder", label);
    auto it = std::find(f.names.begin(), f.names.end(), name);
    if (it == f.names.end()) it = f.names.insert(f.names.end(), name);
    f.of_row.push_back(int(it - f.names.begin()) + 1);
  }
  return f;
}

// One line per variant: family number, "label", speedup, FID, class agreement, mean accepted length.
std::string plot_data(const nlohmann::json& r, const Families& f) {
  std::string s;
  size_t i = 0;
  for (const auto& d : r["decoders"])
    s += fmt::format("{} \"{}\" {:.6f} {:.6f} {:.6f} {:.6f}\n", f.of_row[i++], d["label"].get<std::string>(),
                     d["speedup"].get<double>(), d["fid"].get<double>(), d["class_agreement"].get<double>(),
                     d.value("mean_accepted_length", 1.0));
  return s;
}

// Runs a gnuplot script that writes `tmp_png`; renames it to `png`. False (nothing written) if gnuplot failed.
bool draw(const std::string& script, const std::string& tmp_png, const std::string& png) {
  const PipeSignalBlocked no_sigpipe;
  FILE* gp = popen("gnuplot 2>&1", "w");
  int status = -1;
  if (gp) {
    std::fwrite(script.data(), 1, script.size(), gp);
    status = pclose(gp);
  }
  if (status != 0 || !file_exists(tmp_png)) {
    std::remove(tmp_png.c_str());
    return false;
  }
  VISPEC_CHECK(std::rename(tmp_png.c_str(), png.c_str()) == 0, png, ": cannot rename the plot into place");
  return true;
}

std::string palette() {
  std::string s;
  for (size_t i = 0; i < std::size(kPalette); ++i)
    s += fmt::format("set linetype {} lc rgb '{}'\n", i + 1, kPalette[i]);
  return s + fmt::format("set linetype cycle {}\n", std::size(kPalette));
}

}  // namespace

void write_bench_plots(const nlohmann::json& r, const std::string& stem) {
  const auto f = families_of(r);
  const std::string data = stem + ".dat.tmp";
  write_file_atomic(data, plot_data(r, f));
  std::string names;
  for (const auto& n : f.names) names += (names.empty() ? "" : " ") + n;
  const std::string title = fmt::format("{}: {} images per decoder, {}", r["name"].get<std::string>(),
                                        r["images_per_decoder"].get<int64_t>(), r["device"].get<std::string>());
  // Every family a series of its own (its points where column 1 is its number), coloured by gnuplot's cycle.
  const std::string series = fmt::format(
      "plot for [i=1:words(families)] '{data}' using ($1 == i ? $3 : NaN):{{column}} with points pt 7 ps 1.4 "
      "lc i title word(families, i)\n",
      fmt::arg("data", data));
  const std::string tmp = stem + ".tmp.png", tmp_accepted = stem + "-accepted.tmp.png";
  const std::string quality = fmt::format(
      "set terminal pngcairo size 1200,460 font ',10' noenhanced\n"
      "set output '{out}'\n{palette}"
      "families = '{families}'\n"
      "set multiplot layout 1,2 title '{title}'\n"
      "set grid\nset key outside right top vertical Left reverse samplen 1\n"
      "set xlabel 'speedup vs {base} (wall time ratio, same run; log scale)'\nset logscale x 2\n"
      "set offsets graph 0.05, graph 0.05, 0, 0\nset format x '%.3g'\n"
      "set ylabel 'FID (lower is better)'\nset yrange [0:*]\n{fid}"
      "set ylabel 'class agreement (higher is better)'\nset yrange [*:1]\n{agreement}"
      "unset multiplot\n",
      fmt::arg("out", tmp), fmt::arg("palette", palette()), fmt::arg("families", names), fmt::arg("title", title),
      fmt::arg("base", r["baseline"].get<std::string>()),
      fmt::arg("fid", fmt::format(fmt::runtime(series), fmt::arg("column", 4))),
      fmt::arg("agreement", fmt::format(fmt::runtime(series), fmt::arg("column", 5))));
  const std::string accepted = fmt::format(
      "set terminal pngcairo size 1200,460 font ',10' noenhanced\n"
      "set output '{out}'\n{palette}"
      "set title '{title}: mean accepted length (tokens per target forward)'\n"
      "set grid ytics\nset key off\nset style fill solid 0.8 border -1\nset boxwidth 0.7\n"
      "set yrange [0:*]\nset ylabel 'tokens per target forward'\nset xtics rotate by 40 right nomirror\n"
      "plot '{data}' using 0:6:1:xtic(2) with boxes lc variable, '' using 0:6:(sprintf('%.2f', $6)) with labels "
      "offset 0,0.6 font ',8'\n",
      fmt::arg("out", tmp_accepted), fmt::arg("palette", palette()), fmt::arg("title", title), fmt::arg("data", data));
  bool speculative = false;  // a bench of AR variants alone has no accepted lengths to show
  for (const auto& d : r["decoders"]) speculative = speculative || d.value("mean_accepted_length", 1.0) > 1.0;
  const bool drawn =
      draw(quality, tmp, stem + ".png") && (!speculative || draw(accepted, tmp_accepted, stem + "-accepted.png"));
  std::remove(data.c_str());
  if (!drawn) spdlog::warn("no plot written: gnuplot failed or is missing (Debian: apt-get install gnuplot-nox)");
}

}  // namespace vispec
