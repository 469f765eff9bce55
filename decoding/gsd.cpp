// Grouped speculative decoding, GSD (So et al., ICCV 2025; docs/algorithms.md "GSD"): SJD (decoding/sjd.cpp) with
// its window, carry and commit unchanged, and one change to the test of a draft x at a position with the
// target's p and the draft's q:
//
//   group    G = x and the tokens nearest to x in p's order (p ascending, ties by token id): group / 2 below it and
//            (group - 1) / 2 above it, each kept where |p(y) - p(x)| < gap and, where distance > 0, where its
//            input embedding lies within squared distance `distance` of x's (the target's own embedding table)
//   accept   with min(1, p(G) / q(G)) in place of SJD's min(1, p(x) / q(x))
//   reject   resample the ordinary residual norm(max(0, p - q)), and stop, as SJD
//
// The group is decoding/common/acceptance.cpp's group_masses (AcceptRule::kGsd), found by two top-k selections
// over a sortable key, not a sort of the vocabulary as the released code does. A group of one is x alone: SJD.
// Defaults: group 25, gap 0.15, distance 0.5, the paper's COCO setting and its code's filters; window 15 drafts
// (its code's 16-token window, SJD's).
//
// GSD is lossy: the images are not the target's distribution. Per test the output's total variation from p is at
// most sum_x q(x) |a_GSD(x) - a_exact(x)| (a_exact = min(1, p/q); the residual is the exact one), and the image's
// at most the sum over the tests that decided its tokens (the accepted drafts and the first rejected one). Each
// image records that sum evaluated at the tested drafts (`gsd_tv_bound`: exact where the draft's q is one-hot,
// a new uniform draft; a one-sample estimate where the draft was carried, drawn from q) and the acceptance the
// grouping bought, sum a_GSD - a_exact (`gsd_accept_gain`). At temperature 0 p is one-hot, no other token
// is within the gap of it, and GSD is SJD.
#include "decoding/gsd.h"

#include "decoding/common/decoder_registry.h"
#include "decoding/sjd.h"

namespace vispec {

const std::vector<std::string>& gsd_figure_names() {
  static const std::vector<std::string> names = {"gsd_tv_bound", "gsd_accept_gain"};
  return names;
}

void add_gsd_figures(const torch::Tensor& figures, const torch::Tensor& p, const torch::Tensor& q,
                     const torch::Tensor& drafts, const torch::Tensor& count, const ChainVerdict& verdict) {
  const int64_t B = drafts.size(0), G = drafts.size(1), V = q.size(-1);
  const auto x = drafts.to(torch::kInt64);
  const auto exact = accept_probabilities(p.narrow(1, 0, G).reshape({B * G, V}), q.reshape({B * G, V}), x.reshape(-1),
                                          torch::ones({B * G}, x.options()), 1, AcceptanceParams{}, torch::Tensor())
                         .view({B, G});
  const auto j = torch::arange(G, x.options()).view({1, G});
  const auto tested = (j <= verdict.accepted.view({B, 1})).logical_and(j < count.view({B, 1}));
  const auto change = (verdict.probability - exact) * tested.to(torch::kFloat64);
  figures.select(1, 0).add_(change.abs().sum(1));
  figures.select(1, 1).add_(change.sum(1));
}

namespace {
struct GsdSettings {
  int64_t window = 15;  // drafts verified per forward
};

DecoderEntry gsd_entry() {
  DecoderEntry e;
  e.name = "gsd";
  e.summary = "grouped speculative decoding: SJD accepting a draft against a group of tokens near it (lossy)";
  e.read = [](DecoderFields& f, DecoderConfig& c) {
    GsdSettings s;
    s.window = f.whole("window", s.window, 1, 64);
    AcceptanceParams a;  // GSD's own rule, its fields read here (`accept` is not one of them)
    a.rule = AcceptRule::kGsd;
    a.group = f.whole("group", a.group, 1, 129);
    a.gap = f.number("gap", a.gap);
    f.require(a.gap > 0 && a.gap <= 1, "gap", "must be in (0, 1]");
    a.distance = f.number("distance", a.distance);
    f.require(a.distance >= 0, "distance", "must be >= 0 (0: no embedding filter)");
    c.accept = a;
    c.method = s;
  };
  e.build = [](const DecoderConfig& c, const DecoderModels& m) -> std::unique_ptr<Decoder> {
    return std::make_unique<SjdDecoder>(m.target, c.sampling, c.settings<GsdSettings>().window, c.accept);
  };
  return e;
}
const DecoderRegistration kGsdRegistration(gsd_entry());
}  // namespace

}  // namespace vispec
