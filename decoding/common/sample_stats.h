// What every decoder reports per sample, and its JSON: written here once for every place that carries it (a
// unit's report to rank 0, the journal, summary.json's totals, each sample's metrics line). Plain data, no torch.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <string>

namespace vispec {

// What every decoder reports per sample (docs/algorithms.md, "What every decoder reports").
struct SampleStats {
  int64_t target_forwards = 0;  // target passes this sample took part in
  int64_t draft_forwards = 0;   // drafter passes
  int64_t drafted = 0;          // drafted tokens offered for verification
  int64_t accepted = 0;         // of those, accepted
  int64_t tokens = 0;           // tokens committed
  // Iterations its batch's decode loop ran while this sample was in it, and of those, the ones it sat through
  // finished (a row whose image is done stays in its batch until the slowest row's is, or, where the decoder
  // refills rows, until the unit's last samples are done): idle_iterations over batch_iterations is the share of
  // the batch's row-iterations spent on finished rows.
  int64_t batch_iterations = 0, idle_iterations = 0;
  double draft_ms = 0, verify_ms = 0, resample_ms = 0, bookkeeping_ms = 0;
  double tree_depth = 0;  // summed depth parameter of the trees drafted (tree decoders; ADT-Tree varies it)
  // A method's own figures, summed like the rest and written beside them (MuLo-SD: its step costs, set sizes).
  std::map<std::string, double> extra;

  SampleStats& operator+=(const SampleStats& o) {
    target_forwards += o.target_forwards;
    draft_forwards += o.draft_forwards;
    drafted += o.drafted;
    accepted += o.accepted;
    tokens += o.tokens;
    batch_iterations += o.batch_iterations;
    idle_iterations += o.idle_iterations;
    draft_ms += o.draft_ms;
    verify_ms += o.verify_ms;
    resample_ms += o.resample_ms;
    bookkeeping_ms += o.bookkeeping_ms;
    tree_depth += o.tree_depth;
    for (const auto& [key, value] : o.extra) extra[key] += value;
    return *this;
  }
  // Tokens committed per target forward (AR: 1).
  double mean_accepted_length() const { return target_forwards ? double(tokens) / double(target_forwards) : 0.0; }
  double acceptance_rate() const { return drafted ? double(accepted) / double(drafted) : 0.0; }
  double idle_fraction() const { return batch_iterations ? double(idle_iterations) / double(batch_iterations) : 0.0; }
  // Mean tree depth over the trees drafted (one per target forward after the prefill); 0 without trees.
  double mean_tree_depth() const { return target_forwards > 1 ? tree_depth / double(target_forwards - 1) : 0.0; }
};

// The counts (target_forwards, draft_forwards, drafted, accepted, tokens, batch_iterations, idle_iterations):
// what a unit reports to rank 0, the journal keeps per unit and summary.json sums. stats_counts_from_json throws
// nlohmann's out_of_range on a missing key (the two iteration counts may be missing: a journal written before
// vispec counted them, read as 0) and type_error on a value that is not a count (a whole number, at least 0).
nlohmann::json stats_counts_json(const SampleStats& s);
SampleStats stats_counts_from_json(const nlohmann::json& j);
// One sample's figures for its metrics line: the counts, its mean accepted length and acceptance rate, the
// phase times, its mean tree depth and the method's own figures.
nlohmann::json sample_stats_json(const SampleStats& s);

}  // namespace vispec
