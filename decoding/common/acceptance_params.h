// An acceptance rule and its parameters (decoding/common/acceptance.h applies them; docs/decoders.md lists them). Plain
// data, no torch, so that a decoder's parsed config can carry it anywhere.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace vispec {

class DecoderFields;

// kGsd is the `gsd` decoder's own rule (decoding/gsd.cpp sets it; `accept:` does not name it).
enum class AcceptRule { kExact, kLantern, kLanternPlusPlus, kCoolSd, kGsd };
enum class CoolSchedule { kUniform, kExponential, kLinear };

struct AcceptanceParams {
  AcceptRule rule = AcceptRule::kExact;
  int64_t k = 1000;     // LANTERN / LANTERN++: nearest neighbours considered
  double delta = 0.1;   // LANTERN: TVD budget
  double lambda = 3.0;  // LANTERN++: multiplicative budget
  CoolSchedule schedule = CoolSchedule::kExponential;
  double budget = 1.1;                                   // Cool-SD: c, the mean of w over the draft length
  double nu = 0.7;                                       // Cool-SD exponential decay
  double mu = std::numeric_limits<double>::quiet_NaN();  // Cool-SD normaliser; NaN = mean of w equals c (our choice)
  double slope = 0.1;  // Cool-SD linear: w_i = c (1 + slope ((L + 1) / 2 - i)), mean c (our reading of eq 17)
  bool optimal_resampling = false;  // LANTERN rules: resample from G* (Cool-SD's Fig. 4 ablation)
  int64_t group = 25;               // GSD: the candidate group's size, the draft included (its paper's COCO setting)
  double gap = 0.15;                // GSD: a candidate's |p(y) - p(x)| must be below it
  double distance = 0.5;  // GSD: a candidate's squared embedding distance to x must be below it (0: no filter)
  bool needs_neighbours() const { return rule == AcceptRule::kLantern || rule == AcceptRule::kLanternPlusPlus; }
};

AcceptRule parse_accept_rule(const std::string& name);      // exact | lantern | lanternpp | coolsd
CoolSchedule parse_cool_schedule(const std::string& name);  // uniform | exponential | linear

// The rule keys (k, delta, lambda, optimal_resampling, budget, schedule, nu, mu, slope: not `accept` itself), and
// which rules read each: a key of another rule than the chosen one changes nothing.
bool is_rule_key(const std::string& key);
bool rule_reads(AcceptRule rule, const std::string& key);

// The rule keys of a decoder section (accept, k, delta, lambda, schedule, budget, nu, mu, slope,
// optimal_resampling), every one read, each with its check; `default_rule` when the job names none.
AcceptanceParams read_acceptance(DecoderFields& fields, const std::string& default_rule);

}  // namespace vispec
