#include "scheduler/metrics_file.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/file_digest.h"
#include "io/job_config.h"
#include "io/run_layout.h"

namespace vispec {

namespace {
// Units in file order -> [[first, last], ...] over runs of consecutive ids.
nlohmann::json as_ranges(const std::vector<int64_t>& units) {
  auto ranges = nlohmann::json::array();
  for (size_t i = 0; i < units.size();) {
    size_t j = i;
    while (j + 1 < units.size() && units[j + 1] == units[j] + 1) ++j;
    ranges.push_back({units[i], units[j]});
    i = j + 1;
  }
  return ranges;
}

nlohmann::json record_of(const FileDigest& d, const std::vector<int64_t>& units) {
  return {{"bytes", d.bytes}, {"crc32", crc32_hex(d.crc32)}, {"units", as_ranges(units)}};
}

// Why the file cannot be extended ("" if it can): it must be the one the record describes, and hold only
// units still journaled that this run did not decode again.
std::string why_rebuild(const std::string& out, const Journal& journal, const nlohmann::json& previous,
                        std::vector<int64_t>& held) {
  if (previous.is_null()) return "no record of its contents";
  try {
    held = metrics_record_units(previous, summary_path(out));
  } catch (const Error& e) {
    return e.what();
  }
  struct stat st {};
  if (::stat(metrics_path(out).c_str(), &st) != 0) {
    VISPEC_CHECK(errno == ENOENT, metrics_path(out), ": cannot stat: ", std::strerror(errno));
    return "missing";
  }
  if (int64_t(st.st_size) != previous["bytes"].get<int64_t>())
    return std::to_string(st.st_size) + " bytes, the summary says " + std::to_string(previous["bytes"].get<int64_t>());
  for (const int64_t u : held) {
    if (!journal.is_done(u)) return "unit " + std::to_string(u) + " is no longer journaled";
    if (journal.appended().count(u)) return "unit " + std::to_string(u) + " was decoded again";
  }
  return "";
}
}  // namespace

std::vector<int64_t> metrics_record_units(const nlohmann::json& record, const std::string& where) {
  VISPEC_CHECK(record.is_object() && record.contains("bytes") && record["bytes"].is_number_integer() &&
                   record.contains("crc32") && record["crc32"].is_string() && record.contains("units") &&
                   record["units"].is_array(),
               where, ": metrics: not {bytes, crc32, units}");
  uint32_t crc = 0;
  VISPEC_CHECK(parse_crc32_hex(record["crc32"].get<std::string>(), crc), where, ": metrics: crc32 is not 8 hex digits");
  std::vector<int64_t> units;
  for (const auto& r : record["units"]) {
    VISPEC_CHECK(r.is_array() && r.size() == 2 && r[0].is_number_integer() && r[1].is_number_integer() &&
                     r[0].get<int64_t>() >= 0 && r[0].get<int64_t>() <= r[1].get<int64_t>() &&
                     r[1].get<int64_t>() - r[0].get<int64_t>() < kMaxUnits,
                 where, ": metrics: units: not a list of [first, last] ranges");
    for (int64_t u = r[0].get<int64_t>(); u <= r[1].get<int64_t>(); ++u) {
      units.push_back(u);
      VISPEC_CHECK(int64_t(units.size()) <= kMaxUnits, where, ": metrics: more than ", kMaxUnits, " units");
    }
  }
  return units;
}

nlohmann::json assemble_metrics(const std::string& out, const Journal& journal, const nlohmann::json& previous) {
  std::vector<int64_t> held;
  const auto why = why_rebuild(out, journal, previous, held);
  if (!why.empty()) {
    if (!previous.is_null()) spdlog::info("{}: rebuilt from the units' files: {}", metrics_path(out), why);
    AtomicFile file(metrics_path(out));  // streamed unit by unit: memory per unit, not per job
    std::vector<int64_t> units;
    for (const auto& entry : journal.done()) {
      file.write(read_file(unit_metrics_path(out, entry.first)));
      units.push_back(entry.first);
    }
    return record_of(file.commit(), units);
  }
  // Extend: the units journaled since, in unit order, appended and fsynced; the CRC-32 of the whole file from
  // the record's and the new bytes' (zlib's crc32_combine), so nothing already there is read again.
  const std::set<int64_t> before(held.begin(), held.end());
  std::string added;
  std::vector<int64_t> units = held;
  for (const auto& entry : journal.done())
    if (!before.count(entry.first)) {
      added += read_file(unit_metrics_path(out, entry.first));
      units.push_back(entry.first);
    }
  uint32_t crc = 0;
  parse_crc32_hex(previous["crc32"].get<std::string>(), crc);
  FileDigest d{previous["bytes"].get<int64_t>(), crc};
  if (!added.empty()) {
    append_file_synced(metrics_path(out), added);
    DigestBuilder tail;
    tail.update(added.data(), added.size());
    d.crc32 = uint32_t(crc32_combine(d.crc32, tail.digest().crc32, z_off_t(added.size())));
    d.bytes += int64_t(added.size());
  }
  return record_of(d, units);
}

}  // namespace vispec
