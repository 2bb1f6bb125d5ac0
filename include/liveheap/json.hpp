// Report values as nlohmann::json, for a program that builds JSON documents of its own. The
// only public header that includes nlohmann_json: the others speak std types only (a report
// is written with to_json(const Report&) -> std::string and read with
// report_from_json(std::string_view), both in liveheap/report.hpp).
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include "liveheap/export.hpp"
#include "liveheap/history.hpp"
#include "liveheap/report.hpp"
#include "liveheap/snapshot.hpp"

LIVEHEAP_API_BEGIN

// JSON with the same fields as numbers (see docs/reading-reports.md, "The report document").
nlohmann::json to_json(const Frame& frame);
nlohmann::json to_json(const Traceback& traceback);
nlohmann::json to_json(const Statistic& stat, KeyType key_type);
nlohmann::json to_json(const StatisticDiff& stat, KeyType key_type);
nlohmann::json to_json(const SnapshotInfo& info);
nlohmann::json to_json(const TrackerMemoryCap& cap);

// The report document (liveheap/report.hpp) as a value, every line (to_json(const Report&)
// without a byte budget), and read back from one as strictly as from text.
nlohmann::json to_json_value(const Report& report);
Report report_from_json(const nlohmann::json& document);

// {"verdict", "growth_per_min", "since_last_growth_s"} (numbers null while unknown) and
// the reasons: "retention", "idle_s" (null where unknown) and "allocated_in_window".
void add_verdict_json(nlohmann::json& stat, const Verdict& verdict);
// The verdict a JSON statistic carries, leniently (a field missing or of another type reads
// as unknown): what pid=all merges with merge_verdicts.
Verdict verdict_from_json(const nlohmann::json& stat);

LIVEHEAP_API_END
