#include "decoding/common/acceptance_params.h"

#include <map>
#include <vector>

#include "core/check.h"
#include "decoding/common/decoder_fields.h"

namespace vispec {

AcceptRule parse_accept_rule(const std::string& name) {
  if (name == "exact") return AcceptRule::kExact;
  if (name == "lantern") return AcceptRule::kLantern;
  if (name == "lanternpp") return AcceptRule::kLanternPlusPlus;
  if (name == "coolsd") return AcceptRule::kCoolSd;
  VISPEC_FAIL("unknown acceptance rule '", name, "' (known: exact, lantern, lanternpp, coolsd)");
}

CoolSchedule parse_cool_schedule(const std::string& name) {
  if (name == "uniform") return CoolSchedule::kUniform;
  if (name == "exponential") return CoolSchedule::kExponential;
  if (name == "linear") return CoolSchedule::kLinear;
  VISPEC_FAIL("unknown Cool-SD schedule '", name, "' (known: uniform, exponential, linear)");
}

namespace {

// Each rule key and the rules that read it.
struct RuleKey {
  const char* key;
  bool lantern, lanternpp, coolsd;
};
constexpr RuleKey kRuleKeys[] = {
    {"k", true, true, false},       {"delta", true, false, false},
    {"lambda", false, true, false}, {"optimal_resampling", true, true, false},
    {"budget", false, false, true}, {"schedule", false, false, true},
    {"nu", false, false, true},     {"mu", false, false, true},
    {"slope", false, false, true},
};

const RuleKey* rule_key(const std::string& key) {
  for (const auto& k : kRuleKeys)
    if (key == k.key) return &k;
  return nullptr;
}

// A field of another rule than the chosen one, given with other than its default value, would change nothing
// but the run's identity: it is refused in one line. (Given with its default, as a run's kept job names every
// field, it is read as the default.)
void refuse_unread_rule_fields(const DecoderFields& f, const AcceptanceParams& a) {
  const AcceptanceParams d;
  const char* const rule_names[] = {"exact", "lantern", "lanternpp", "coolsd", "gsd"};  // AcceptRule's order
  const bool lanternpp = a.rule == AcceptRule::kLanternPlusPlus;
  const std::map<std::string, bool> differs = {
      {"k", a.k != (lanternpp ? 10 : d.k)},
      {"delta", a.delta != d.delta},
      {"lambda", a.lambda != d.lambda},
      {"optimal_resampling", a.optimal_resampling != d.optimal_resampling},
      {"budget", a.budget != d.budget},
      {"schedule", a.schedule != d.schedule},
      {"nu", a.nu != d.nu},
      {"mu", true},
      {"slope", a.slope != d.slope},
  };
  for (const auto& k : kRuleKeys) {
    if (rule_reads(a.rule, k.key) || !differs.at(k.key) || !f.given(k.key)) continue;
    std::vector<std::string> readers;  // "lantern and lanternpp use it", "coolsd uses it"
    for (auto rule : {AcceptRule::kLantern, AcceptRule::kLanternPlusPlus, AcceptRule::kCoolSd})
      if (rule_reads(rule, k.key)) readers.push_back(rule_names[int(rule)]);
    const std::string who = readers.size() == 2 ? readers[0] + " and " + readers[1] + " use" : readers[0] + " uses";
    f.fail(k.key, std::string("not read by accept: ") + rule_names[int(a.rule)] + " (only " + who +
                      " it): remove it, or choose that rule");
  }
}

}  // namespace

bool is_rule_key(const std::string& key) { return rule_key(key) != nullptr; }

bool rule_reads(AcceptRule rule, const std::string& key) {
  const auto* k = rule_key(key);
  if (!k) return false;
  switch (rule) {
    case AcceptRule::kExact:
    case AcceptRule::kGsd: return false;  // the gsd decoder reads its own fields
    case AcceptRule::kLantern: return k->lantern;
    case AcceptRule::kLanternPlusPlus: return k->lanternpp;
    case AcceptRule::kCoolSd: return k->coolsd;
  }
  return false;
}

AcceptanceParams read_acceptance(DecoderFields& f, const std::string& default_rule) {
  AcceptanceParams a;
  a.rule = f.word<AcceptRule>("accept", default_rule, parse_accept_rule);
  a.schedule = f.word<CoolSchedule>("schedule", "exponential", parse_cool_schedule);
  // LANTERN's k is 1000; LANTERN++'s published settings use 10 (with lambda 3, 5) or 5.
  a.k = f.whole("k", a.rule == AcceptRule::kLanternPlusPlus ? 10 : a.k, 1, int64_t(1) << 20);
  a.delta = f.number("delta", a.delta);
  f.require(a.delta > 0 && a.delta <= 1, "delta", "must be in (0, 1]");
  a.lambda = f.number("lambda", a.lambda);
  f.require(a.lambda >= 1, "lambda", "must be >= 1");
  a.budget = f.number("budget", a.budget);
  f.require(a.budget > 0, "budget", "must be > 0");
  a.nu = f.number("nu", a.nu);
  f.require(a.nu >= 0, "nu", "must be >= 0");
  a.mu = f.optional_number("mu").value_or(a.mu);
  a.slope = f.number("slope", a.slope);
  a.optimal_resampling = f.number("optimal_resampling", 0) != 0;
  refuse_unread_rule_fields(f, a);
  return a;
}

}  // namespace vispec
