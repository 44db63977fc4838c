#include "ops/saved_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "lib/codec.hpp"
#include "lib/hash.hpp"
#include "ops/bundle.hpp"
#include "ops/loader.hpp"
#include "lib/version.hpp"
#include "render/embedded.hpp"

namespace gaia::ops {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

Result<std::string> file_hash(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return fail(Diagnostic{{p.string()}, "", "cannot read an input of the plan", "check its permissions"});
  std::stringstream ss;
  ss << in.rdbuf();
  return content_hash(ss.str());
}

}  // namespace

std::string gaia_version() {
  // The embedded Jsonnet library is part of every render, so a binary with another one
  // may render the same specs differently.
  return fmt::format("gaia {} (gaia.libsonnet {})", gaia::version(),
                     content_hash(render::k_gaia_libsonnet).substr(0, 12));
}

InputScope input_scope(const RenderSettings& settings, const Submission& s) {
  InputScope scope;
  for (const auto& node : s.plan.nodes) {
    if (!node.spec || node.action != spec::Action::Deploy) continue;
    add_unique(scope.dirs, canonical_path(node.spec->dir));
    std::error_code ec;
    fs::path beside = node.spec->dir.parent_path() / "vendor";
    if (fs::is_directory(beside, ec)) add_unique(scope.dirs, canonical_path(beside));
  }
  for (const auto& j : settings.jpaths) {
    std::error_code ec;
    if (fs::is_directory(j, ec)) add_unique(scope.dirs, canonical_path(j));
  }
  for (const auto& r : s.repo.roots()) add_unique(scope.repo_roots, canonical_path(r));
  for (const auto& v : settings.values) add_unique(scope.files, canonical_path(v));
  if (!settings.config_file.empty()) add_unique(scope.files, canonical_path(settings.config_file));
  return scope;
}

Result<std::map<std::string, std::string>> hash_inputs(const InputScope& scope, const fs::path& plan_file) {
  std::map<std::string, std::string> out;
  Diagnostics errors;
  std::string self = canonical_path(plan_file), self_tmp = self + ".tmp";
  auto add = [&](const fs::path& p) {
    std::string key = p.string();
    if (out.count(key) || key == self || key == self_tmp) return;
    auto h = file_hash(p);
    if (!h) errors.insert(errors.end(), h.error().begin(), h.error().end());
    else out[key] = *h;
  };
  for (const auto& d : scope.dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) continue;  // Gone: shows as removed files.
    std::vector<fs::path> files;
    for (auto it = fs::recursive_directory_iterator(d, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory() && it->path().filename() == ".git") {
        it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file()) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) add(f);
  }
  for (const auto& root : scope.repo_roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) continue;
    for (const auto& child : fs::directory_iterator(root, ec)) {
      if (!child.is_directory()) continue;
      if (fs::exists(child.path() / "app.yaml")) add(child.path() / "app.yaml");
      std::error_code ec2;
      for (const auto& sub : fs::directory_iterator(child.path(), ec2))
        if (sub.is_directory() && fs::exists(sub.path() / "app.yaml")) add(sub.path() / "app.yaml");
    }
  }
  for (const auto& f : scope.files) {
    std::error_code ec;
    if (fs::exists(f, ec)) add(f);
  }
  if (!errors.empty()) return fail(std::move(errors));
  return out;
}

json decision_summary(const ApplyPlan& plan) {
  json out = json::array();
  for (const auto& c : plan.apps) out.push_back({{"name", c.name}, {"action", c.action}, {"version", c.version}});
  return out;
}

Result<void> write_saved_plan(const fs::path& file, const SavedPlan& p) {
  json apps = json::array();
  for (const auto& a : p.request.apps) apps.push_back(a.record);
  json j = {{"format", k_plan_format},
            {"gaia_version", p.gaia_version},
            {"created", p.created},
            {"store", p.store},
            {"revision", p.revision},
            {"tenant", p.tenant},
            {"source", p.source},
            {"prune", p.prune},
            {"paths", p.paths},
            {"set_dirs", p.set_dirs},
            {"overrides", p.overrides},
            {"scope", {{"dirs", p.scope.dirs}, {"repo_roots", p.scope.repo_roots}, {"files", p.scope.files}}},
            {"inputs", p.inputs},
            {"reused", p.request.reused},
            {"secrets", p.request.secrets},
            {"decision", p.decision},
            {"apps", apps},
            {"bundles", p.bundles}};
  // Written next to the target and renamed, so a reader never sees half a plan.
  fs::path tmp = file;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return fail(Diagnostic{{file.string()}, "", "cannot write the plan file", "check the folder exists and is writable"});
    out << j.dump(2) << "\n";
    if (!out) return fail(Diagnostic{{file.string()}, "", "cannot write the plan file", "is the disk full?"});
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) return fail(Diagnostic{{file.string()}, "", fmt::format("cannot write the plan file: {}", ec.message()), ""});
  return {};
}

Result<SavedPlan> read_saved_plan(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return fail(Diagnostic{{file.string()}, "", "cannot read the plan file", "check the path"});
  std::stringstream ss;
  ss << in.rdbuf();
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::parse_error& e) {
    return fail(Diagnostic{{file.string()}, "", fmt::format("not a JSON plan: {}", e.what()),
                           "write one with `gaia plan -f PATH... --out FILE`"});
  }
  if (!j.is_object() || j.value("format", "") != k_plan_format)
    return fail(Diagnostic{{file.string()}, "format", fmt::format("not a gaia plan (expected format {})", k_plan_format),
                           "write one with `gaia plan -f PATH... --out FILE`"});
  SavedPlan p;
  try {
    p.gaia_version = j.at("gaia_version").get<std::string>();
    p.created = j.value("created", "");
    p.store = j.at("store").get<std::string>();
    p.revision = j.at("revision").get<int64_t>();
    p.tenant = j.at("tenant").get<std::string>();
    p.source = j.at("source").get<std::string>();
    p.prune = j.at("prune").get<bool>();
    p.paths = j.at("paths").get<std::vector<std::string>>();
    p.set_dirs = j.at("set_dirs").get<std::vector<std::string>>();
    p.overrides = j.value("overrides", json::object());
    const auto& scope = j.at("scope");
    p.scope.dirs = scope.at("dirs").get<std::vector<std::string>>();
    p.scope.repo_roots = scope.at("repo_roots").get<std::vector<std::string>>();
    p.scope.files = scope.at("files").get<std::vector<std::string>>();
    p.inputs = j.at("inputs").get<std::map<std::string, std::string>>();
    p.decision = j.at("decision");
    p.request.tenant = p.tenant;
    p.request.source = p.source;
    p.request.prune = p.prune;
    p.request.reused = j.at("reused").get<std::vector<std::string>>();
    p.request.secrets = j.at("secrets").get<std::map<std::string, std::vector<std::string>>>();
    for (const auto& a : j.at("apps")) p.request.apps.push_back(AppToDeploy{a.get<AppRecord>()});
    p.bundles = j.value("bundles", std::map<std::string, std::string>{});
    for (const auto& [hash, text] : p.bundles)
      if (content_hash(text) != hash) throw std::runtime_error(fmt::format("spec bundle {} does not match its hash", hash));
  } catch (const std::exception& e) {
    return fail(Diagnostic{{file.string()}, "", fmt::format("broken plan file: {}", e.what()),
                           "write it again with `gaia plan -f PATH... --out FILE`"});
  }
  return p;
}

std::vector<std::string> plan_drift(const SavedPlan& p, const fs::path& plan_file, const std::string& store,
                                    int64_t revision, const std::string& version) {
  std::vector<std::string> out;
  if (store != p.store) out.push_back(fmt::format("the plan was made against store {}, this is {}", p.store, store));
  if (revision != p.revision)
    out.push_back(fmt::format("the store is at revision {}, the plan was made at revision {} (something was "
                              "written since)", revision, p.revision));
  if (version != p.gaia_version)
    out.push_back(fmt::format("the plan was made by {}, this is {}", p.gaia_version, version));
  auto expanded = expand_spec_paths(p.paths);
  if (!expanded) {
    for (const auto& d : expanded.error()) out.push_back(fmt::format("{}: {}", d.location.file, d.message));
  } else {
    std::vector<std::string> now;
    for (const auto& d : *expanded) now.push_back(fs::path(d).string());
    std::set<std::string> before(p.set_dirs.begin(), p.set_dirs.end()), after(now.begin(), now.end());
    for (const auto& d : after)
      if (!before.count(d)) out.push_back(fmt::format("the set now holds {} (not in the plan)", display_path(d)));
    for (const auto& d : before)
      if (!after.count(d)) out.push_back(fmt::format("the set no longer holds {}", display_path(d)));
  }
  auto hashes = hash_inputs(p.scope, plan_file);
  if (!hashes) {
    for (const auto& d : hashes.error()) out.push_back(fmt::format("{}: {}", display_path(d.location.file), d.message));
    return out;
  }
  for (const auto& [path, hash] : p.inputs) {
    auto it = hashes->find(path);
    if (it == hashes->end()) out.push_back(fmt::format("{} was removed", display_path(path)));
    else if (it->second != hash) out.push_back(fmt::format("{} changed", display_path(path)));
  }
  for (const auto& [path, hash] : *hashes)
    if (!p.inputs.count(path)) out.push_back(fmt::format("{} was added", display_path(path)));
  return out;
}

namespace {

// A store as a plan records it: a file by its canonical path, a URL (etcd://...) as
// given, since it names the same cluster from any directory.
std::string store_identity(const std::string& store) {
  return store.find("://") != std::string::npos ? store : canonical_path(store);
}

}  // namespace

Result<PlanSaved> save_plan(const Workspace& ws, const SetRequest& request, const std::string& store,
                            const fs::path& file) {
  auto decided = decide_set(ws, request);
  if (!decided) return fail(decided.error());
  PlanSaved out;
  out.plan = std::move(decided->plan);
  SavedPlan& p = out.saved;
  p.gaia_version = gaia_version();
  p.store = store_identity(store);
  p.revision = decided->state.revision;
  p.created = ws.state.now_rfc3339();
  p.tenant = decided->set.request.tenant;
  p.source = decided->source;
  p.prune = request.prune;
  for (const auto& d : request.paths) p.paths.push_back(canonical_path(d));
  auto expanded = expand_spec_paths(p.paths);
  if (!expanded) return fail(expanded.error());
  for (const auto& d : *expanded) p.set_dirs.push_back(d.string());
  p.overrides = {{"set", request.render.sets},
                 {"values", request.render.values},
                 {"config_file", request.render.config_file}};
  p.scope = input_scope(request.render, *decided->set.submission);
  auto hashes = hash_inputs(p.scope, file);
  if (!hashes) return fail(hashes.error());
  p.inputs = std::move(*hashes);
  p.request = decided->set.request;
  p.bundles = decided->set.submission->bundles;
  p.decision = decision_summary(out.plan);
  if (auto w = write_saved_plan(file, p); !w) return fail(w.error());
  return out;
}

Result<Applied> apply_saved_plan(const Workspace& ws, const fs::path& file, const std::string& store,
                                 const ApplyOptions& options) {
  auto p = read_saved_plan(file);
  if (!p) return fail(p.error());
  auto loaded = ws.state.load();
  if (!loaded) return fail(loaded.error());
  if (options.check_revision && loaded->revision != *options.check_revision)
    return fail(revision_moved(loaded->revision, *options.check_revision));
  auto drift = plan_drift(*p, file, store_identity(store), loaded->revision, gaia_version());
  std::vector<std::string> shown;
  for (const auto& path : p->paths) shown.push_back(display_path(path));
  std::string replan = fmt::format("plan again (`gaia plan -f {} --out {}`), review it, and apply the new plan",
                                   fmt::join(shown, " -f "), file.string());
  if (!drift.empty()) {
    Diagnostics ds;
    for (const auto& d : drift) ds.push_back(Diagnostic{{file.string()}, "", "drifted since the plan was made: " + d, ""});
    ds.back().hint = replan + "; nothing was applied";
    return fail(std::move(ds));
  }
  Applied applied{{}, p->tenant, p->source, *loaded, std::nullopt};
  auto decide = [&](const ClusterState& st) -> Result<void> {
    if (st.revision != p->revision)
      return fail(Diagnostic{{file.string()}, "",
                             fmt::format("drifted since the plan was made: the store is at revision {}, the plan "
                                         "was made at revision {}",
                                         st.revision, p->revision),
                             replan + "; nothing was applied"});
    applied.plan = plan_apply(st, p->request);
    attach_bundles(st, p->request.apps, p->bundles, applied.plan.batch);
    if (decision_summary(applied.plan) != p->decision)
      return fail(Diagnostic{{file.string()}, "decision", "the decision made now differs from the reviewed one", replan});
    return {};
  };
  if (options.dry_run) {
    if (auto d = decide(*loaded); !d) return fail(d.error());
    return applied;
  }
  auto committed = ws.state.update(ws.op, [&](const ClusterState& st, Batch& b) -> Result<void> {
    if (auto d = decide(st); !d) return d;
    b = applied.plan.batch;
    return {};
  });
  if (!committed) return fail(committed.error());
  if (auto done = finish_apply(ws, std::move(*committed), applied); !done) return fail(done.error());
  return applied;
}

}  // namespace gaia::ops
