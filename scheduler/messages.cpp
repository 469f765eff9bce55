#include "scheduler/messages.h"

#include <nlohmann/json.hpp>

namespace vispec {

std::string encode_report(const WorkerReport& r) {
  nlohmann::json j = {{"rank", r.rank}, {"stopping", r.stopping}, {"wait_s", r.wait_seconds}};
  if (!r.error.empty()) j["error"] = {{"message", r.error}, {"code", r.error_code}};
  if (r.loaded)
    j["loaded"] = {{"s", r.loaded->seconds},
                   {"read", r.loaded->read_bytes},
                   {"received", r.loaded->received_bytes},
                   {"device", r.loaded->device},
                   {"device_model", r.loaded->device_model}};
  if (r.done) {
    j["done"] = stats_counts_json(r.done->stats);
    j["done"].update({{"unit", r.done->unit},
                      {"images", r.done->images},
                      {"seconds", r.done->seconds},
                      {"files", unit_files_to_json(r.done->files)}});
  }
  return j.dump();
}

WorkerReport decode_report(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  WorkerReport r;
  r.rank = j.at("rank").get<int>();
  r.stopping = j.at("stopping").get<bool>();
  r.wait_seconds = j.at("wait_s").get<double>();
  if (j.contains("error")) {
    r.error = j["error"].at("message").get<std::string>();
    r.error_code = j["error"].at("code").get<int>();
  }
  if (j.contains("loaded")) {
    const auto& l = j["loaded"];
    r.loaded = ModelLoad{l.at("s").get<double>(), l.at("read").get<int64_t>(), l.at("received").get<int64_t>(),
                         l.at("device").get<std::string>(), l.at("device_model").get<std::string>()};
  }
  if (j.contains("done")) {
    const auto& d = j["done"];
    UnitDone u;
    u.unit = d.at("unit").get<int64_t>();
    u.images = d.at("images").get<int64_t>();
    u.seconds = d.at("seconds").get<double>();
    u.stats = stats_counts_from_json(d);
    u.files = unit_files_from_json(d.at("files"), "report of rank " + std::to_string(r.rank));
    r.done = u;
  }
  return r;
}

std::string encode_assignment(const std::optional<WorkUnit>& unit) {
  if (!unit) return R"({"stop":true})";
  return nlohmann::json{
      {"unit", unit->id},
      {"first", unit->first_id},
      {"end", unit->end_id},
      {"start", {unit->start.offset, unit->start.line, unit->start.prompt, unit->start.prompts, unit->start.fnv}}}
      .dump();
}

std::optional<WorkUnit> decode_assignment(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  if (j.contains("stop")) return std::nullopt;
  const auto& s = j.at("start");
  return WorkUnit{j.at("unit").get<int64_t>(),
                  j.at("first").get<uint64_t>(),
                  j.at("end").get<uint64_t>(),
                  {s.at(0).get<uint64_t>(), s.at(1).get<int64_t>(), s.at(2).get<uint64_t>(), s.at(3).get<uint64_t>(),
                   s.at(4).get<uint64_t>()}};
}

}  // namespace vispec
