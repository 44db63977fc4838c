#pragma once
// What `gaia get apps` shows of an app, kept by every commit (docs/store.md, "App
// summaries"). A listing of 10,000 apps used to decode every app record (workload,
// rendered document) and scan every instance record to count the serving ones; the
// summary is one small record per app, so the listing reads nothing else.
//
// Every State::commit writes the summaries of the apps it touches (their record, their
// status or their instances) and sets the marker meta/apps_summary to the timeline
// sequence it commits. The sequence key moves on every commit of every gaia version, so
// a marker equal to the sequence says every commit since the summaries began kept
// them. Anything else (a store written by an older gaia, a quarantined record) leaves
// the marker behind: readers then take the full path, and the next commit writes every
// summary afresh.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/error.hpp"
#include "lib/state.hpp"
#include "lib/store.hpp"

namespace gaia {

struct AppSummary {
  std::string tenant, name;
  std::string app;  // The app.yaml name when the release is named otherwise, else empty.
  std::string version, status, created, priority, spec_dir;
  std::vector<std::string> dependencies;
  int desired = 0;  // Instances the app asks for: `gaia scale` overrides, else the roles'.
  int serving = 0;  // Its instances that are Running or Succeeded (serving()).

  const std::string& app_name() const { return app.empty() ? name : app; }
  bool operator==(const AppSummary&) const = default;
};

void to_json(nlohmann::json& j, const AppSummary& s);
void from_json(const nlohmann::json& j, AppSummary& s);

// The summary of `a` (as a full load reads it) with `serving` of its instances serving.
AppSummary app_summary(const AppRecord& a, int serving);

// Every app of a loaded state, in id order (what the summaries of a consistent store
// hold).
std::vector<AppSummary> app_summaries_of(const AppsState& state);

// A summary record as stored, decoded: the fast scanner for the shape gaia writes,
// nlohmann for anything else; an error names the key.
Result<AppSummary> decode_app_summary(const KeyValue& kv);

namespace keys {
std::string app_summary(const std::string& tenant, const std::string& name);
inline constexpr const char* k_app_summaries = "summary/apps/";
// The timeline sequence the summaries were last kept at (see above).
inline constexpr const char* k_apps_summary_marker = "meta/apps_summary";
}  // namespace keys

// What a commit of `batch` onto `base` writes to keep the summaries: the summary of each
// app it touches whose summary changes, deletes of the summaries of apps it deletes,
// and the marker at `seq`, guarded by a compare on the marker the base was read with.
// `apps_after` are the summaries of batch.put_apps' records as they will be stored (a
// record whose spec did not change keeps the stored one's, with the new status); their
// serving counts are filled in here. When the base's summaries were
// not kept (base.apps_summary_seq != base.seq), every app's summary is written and
// `stale_keys` (the summary keys in the store, read by the caller) not among them are
// deleted.
void add_summary_writes(const ClusterState& base, const Batch& batch, const std::vector<AppSummary>& apps_after,
                        int64_t seq, const std::vector<std::string>& stale_keys, Txn& txn);

// Whether the summaries of `base` were kept by every commit since they began (a store
// without the marker has none yet).
inline bool summaries_kept(const ClusterState& base) { return base.apps_summary_seq == base.seq; }

// The summaries under summary/apps/<tenant_prefix> ("default/" for one tenant, "" for
// all), in key order, read at one revision with the sequence and the marker; nothing when
// the summaries were not kept, or one of them does not decode (the caller then reads the
// apps themselves: the summaries are derived data).
Result<std::optional<std::vector<AppSummary>>> read_app_summaries(Store& store, const std::string& tenant_prefix);

}  // namespace gaia
