#include "spec/resolve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

#include "spec/suggest.hpp"

namespace gaia::spec {

std::string_view action_name(Action a) { return a == Action::Reuse ? "reuse" : "deploy"; }

std::optional<size_t> Plan::find(std::string_view name) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].name == name && nodes[i].tenant.empty()) return i;
  return std::nullopt;
}

namespace {

// Resolution rarely needs more than three rounds; the bound only stops pathological
// specs whose choices keep flipping each other.
constexpr int kMaxRounds = 200;
// Changing every name at once can oscillate (a@2 wants b<2 and b@2 wants a<2: both drop
// to 1, then both go back to 2). After this many rounds only the first name that wants
// to change (breadth-first) changes per round, which settles such cases.
constexpr int kSimultaneousRounds = 8;

enum class Kind : uint8_t { None, Root, Running, Repo };

// What a name resolves to: nothing, the root spec, running[index] or repo[index].
struct Choice {
  Kind kind = Kind::None;
  uint32_t index = 0;
  bool operator==(const Choice&) const = default;
};

struct RunningCandidate {
  semver::Version version;
  const RunningApp* app = nullptr;
};

// A release: `name` is unique in the tenant, `app` the app it runs.
struct NameInfo {
  std::string name;
  std::string app;
  // A running release of this name that runs another app: it is never reused or
  // replaced, and whatever binds to it is an error.
  std::string running_other_app;
  // A release of another tenant ("TENANT/NAME" ids): only ever reused, and only when it
  // runs there and is exported to this tenant (`not_exported` when it runs but is not).
  std::string foreign_tenant;
  bool not_exported = false;
  const AppSpec* root = nullptr;
  std::vector<RunningCandidate> running;  // Highest first.
  std::span<const AppSpec* const> repo;   // Highest first.
};

// A range a running app places on a name: it holds while that app keeps running as it is.
struct RunningReq {
  const RunningApp* app = nullptr;  // The running dependent.
  semver::Range range;
};

// A range placed on a name: by the app `requirer` (a name id) through entry `dep`.
struct Req {
  int requirer = 0;
  const Dependency* dep = nullptr;
};

// The release a dependency binds to, and why.
struct Binding {
  std::string release;
  std::string reason;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

std::string versions_text(const std::vector<std::string>& vs) { return vs.empty() ? "none" : join_limited(vs, 30); }

class Resolver {
 public:
  Resolver(const SpecRepository& repo, const std::vector<RunningApp>& running, const std::string& tenant,
           const ConfigEvaluator& config)
      : m_config(config), m_repo(repo), m_tenant(tenant) {
    for (const RunningApp& app : running) {
      if (app.tenant != tenant) {
        // Another tenant's release: a dependency with `tenant:` may bind to it.
        if (auto v = semver::parse_version(app.version)) m_foreign[app.tenant + "/" + app.name] = {*v, &app};
        // Its ranges on this tenant's releases hold like those of this tenant's apps.
        for (const RunningRequirement& r : app.dependency_ranges)
          if (const std::string& t = r.target(); t.starts_with(tenant + "/"))
            if (auto range = semver::Range::parse(r.range)) m_running_reqs[t.substr(tenant.size() + 1)].push_back({&app, *range});
        continue;
      }
      // A running app whose version does not parse cannot satisfy any range; it is
      // simply never reused.
      auto v = semver::parse_version(app.version);
      if (v) {
        m_running[app.name].push_back({*v, &app});
        m_releases_of[app.app_name()].push_back({*v, &app});
      } else {
        m_unparsed[app.name] = &app;
      }
    }
    for (auto& [name, list] : m_running)
      std::stable_sort(list.begin(), list.end(), [](const RunningCandidate& a, const RunningCandidate& b) {
        return semver::compare(a.version, b.version) > 0;
      });
    // The release named after the app first, then by name: a dependency without
    // `release:` takes the first of them its range accepts.
    for (auto& [app, list] : m_releases_of)
      std::sort(list.begin(), list.end(), [&app](const RunningCandidate& a, const RunningCandidate& b) {
        bool da = a.app->name == app, db = b.app->name == app;
        if (da != db) return da;
        return a.app->name < b.app->name;
      });
    for (const RunningApp& app : running) {
      if (app.tenant != tenant) continue;
      if (!app.dependency_ranges.empty()) {
        for (const RunningRequirement& r : app.dependency_ranges)
          // Its ranges on other tenants' releases are theirs to keep.
          if (r.target().find('/') == std::string::npos)
          // A range that no longer parses constrains nothing: it was valid when the app
          // was deployed, so only a change of the range grammar could break it.
          if (auto range = semver::Range::parse(r.range)) m_running_reqs[r.target()].push_back({&app, *range});
        continue;
      }
      // Recorded before apps kept their ranges: the repository's copy of that version
      // says what it was deployed with.
      auto v = semver::parse_version(app.version);
      if (!v) continue;
      if (const AppSpec* spec = m_repo.find(app.app_name(), *v))
        for (const Dependency& d : spec->dependencies)
          m_running_reqs[d.release.empty() ? d.name : d.release].push_back({&app, d.range});
    }
  }

  Result<Plan> run(const std::vector<RootSpec>& roots) {
    Diagnostics errors;
    std::vector<int> root_ids;
    for (const RootSpec& root : roots) {
      const AppSpec* r = root.spec;
      const std::string& release = root.release.empty() ? r->name : root.release;
      int n = intern(release, r->name);
      NameInfo& info = m_names[n];
      if (info.app != r->name || !info.running_other_app.empty()) {
        const std::string& other = info.app != r->name ? info.app : info.running_other_app;
        errors.push_back({Location{r->yaml_file}, "",
                          fmt::format("{} is given to be deployed as release '{}', but release '{}' in tenant '{}' {} "
                                      "app {}",
                                      r->id(), release, release, m_tenant,
                                      info.app != r->name ? "is given for" : "runs", other),
                          fmt::format("release names are unique in a tenant: choose another name (gaia submit "
                                      "--name), or delete release '{}' first",
                                      release)});
        continue;
      }
      if (const AppSpec* other = info.root) {
        if (semver::compare(other->version, r->version) == 0) continue;  // The same app given twice.
        errors.push_back({Location{r->yaml_file}, "",
                          fmt::format("two versions of {} are given for release '{}': {} ({}) and {} ({})", r->name,
                                      release, other->version.to_string(), other->dir.string(),
                                      r->version.to_string(), r->dir.string()),
                          "a release runs one version: give only one of them, or submit the other as its own "
                          "release (gaia submit --name)"});
        continue;
      }
      info.root = r;
      root_ids.push_back(n);
      m_root_releases[r->name].push_back(n);
    }
    if (!errors.empty()) return fail(std::move(errors));

    std::vector<int> hinted;  // Names carrying a hint from the previous round.
    // The first round whose choices satisfy every range, though some are not the preferred
    // ones: the answer when the preferred choices never settle.
    std::vector<std::pair<int, Choice>> fallback;
    for (int round = 0; round < kMaxRounds; ++round) {
      run_round(root_ids);
      if (fallback.empty() && round_is_consistent())
        for (int n : m_order) fallback.push_back({n, m_choice[n]});
      // The choice each reached name should have given every range found this round.
      std::vector<int> changed;
      for (int n : m_order) {
        if (m_names[n].root) continue;
        m_desired[n] = best(n, m_reqs[n]);
        if (m_desired[n] != m_choice[n]) changed.push_back(n);
      }
      if (changed.empty()) return finish(root_ids);
      if (round + 1 == kMaxRounds) {
        if (fallback.empty()) return not_settling(changed);
        return finish_with(root_ids, hinted, fallback, changed);
      }
      // Hints for the next round: the choices just computed. A name no version fits is
      // not expanded further, so its old choice's dependencies do not produce errors of
      // their own. Names not reached this round lose their hints, so ranges from apps no
      // longer chosen are forgotten.
      for (int n : hinted) m_hinted[n] = 0;
      hinted = m_order;
      bool one_at_a_time = round >= kSimultaneousRounds;
      for (int n : m_order) {
        m_hinted[n] = 1;
        m_hint[n] = one_at_a_time && n != changed.front() ? m_choice[n] : m_desired[n];
      }
    }
    return not_settling({});
  }

 private:
  // True when every reached name has a choice satisfying all ranges placed on it.
  bool round_is_consistent() const {
    for (int n : m_order) {
      if (m_choice[n].kind == Kind::None) return false;
      if (!satisfies_all(version_of(n, m_choice[n]), m_reqs[n])) return false;
      // A repository pick must also keep the running apps on it satisfied, or the
      // fallback plan could move a dependency out from under them.
      if (m_choice[n].kind == Kind::Repo && !keeps_running(n, version_of(n, m_choice[n]))) return false;
    }
    return true;
  }

  // Replays a consistent round and builds the plan from it, noting which names did not
  // get their preferred version.
  Result<Plan> finish_with(const std::vector<int>& root_ids, const std::vector<int>& hinted,
                           const std::vector<std::pair<int, Choice>>& choices, const std::vector<int>& unsettled) {
    for (int n : hinted) m_hinted[n] = 0;
    for (const auto& [n, c] : choices) {
      m_hinted[n] = 1;
      m_hint[n] = c;
    }
    run_round(root_ids);
    for (int n : m_order) m_desired[n] = m_choice[n];
    auto plan = finish(root_ids);
    if (plan) {
      std::vector<std::string> names;
      for (int n : unsettled) names.push_back(m_names[n].name);
      plan->warnings.push_back(
          {Location{}, "",
           fmt::format("the preferred versions of {} never settled (each choice changes the ranges placed on the "
                       "others); using the first set of versions found that satisfies every range",
                       join_limited(names)),
           "pin exact versions for these dependencies to make the choice explicit"});
    }
    return plan;
  }

  // The id of release `name`, which runs `app` (its first binder decides the app; a
  // binder naming another app is reported by finish()).
  int intern(std::string_view name, std::string_view app) {
    if (auto it = m_ids.find(name); it != m_ids.end()) return it->second;
    int id = static_cast<int>(m_names.size());
    m_ids.emplace(std::string(name), id);
    NameInfo info;
    info.name = std::string(name);
    info.app = std::string(app);
    if (size_t slash = info.name.find('/'); slash != std::string::npos) {
      // Another tenant's release: never deployed from here, so no repository versions.
      info.foreign_tenant = info.name.substr(0, slash);
      if (auto it = m_foreign.find(info.name); it != m_foreign.end()) {
        if (it->second.app->app_name() != info.app) info.running_other_app = it->second.app->app_name();
        else if (it->second.app->exported_to(m_tenant)) info.running = {it->second};
        else info.not_exported = true;
      }
    } else {
      info.repo = m_repo.versions(app);
      if (auto it = m_running.find(info.name); it != m_running.end()) {
        if (it->second.front().app->app_name() == info.app) info.running = it->second;
        else info.running_other_app = it->second.front().app->app_name();
      } else if (auto u = m_unparsed.find(info.name); u != m_unparsed.end() && u->second->app_name() != info.app) {
        info.running_other_app = u->second->app_name();
      }
    }
    m_names.push_back(std::move(info));
    m_choice.emplace_back();
    m_hint.emplace_back();
    m_desired.emplace_back();
    m_hinted.push_back(0);
    m_reached.push_back(0);
    m_reqs.emplace_back();
    return id;
  }

  const semver::Version& version_of(int n, Choice c) const {
    const NameInfo& info = m_names[n];
    switch (c.kind) {
      case Kind::Root: return info.root->version;
      case Kind::Running: return info.running[c.index].version;
      case Kind::Repo: return info.repo[c.index]->version;
      case Kind::None: break;
    }
    throw std::logic_error("version_of: no choice");
  }

  const AppSpec* spec_of(int n, Choice c) const {
    if (c.kind == Kind::Root) return m_names[n].root;
    if (c.kind == Kind::Repo) return m_names[n].repo[c.index];
    return nullptr;
  }

  std::string id_of(int n) const { return m_names[n].name + "@" + version_of(n, m_choice[n]).to_string(); }

  static bool satisfies_all(const semver::Version& v, const std::vector<Req>& reqs) {
    for (const Req& r : reqs)
      if (!r.dep->range.satisfies(v)) return false;
    return true;
  }

  // Whether a running app's ranges still bind: they do unless this plan redeploys it
  // (as a root or at a repository version), in which case its new ranges take part as
  // ordinary requirements.
  bool binding(const RunningReq& r) const {
    if (r.app->tenant != m_tenant) return true;  // Another tenant's app: this plan never redeploys it.
    auto it = m_ids.find(r.app->name);
    if (it == m_ids.end() || !m_reached[it->second]) return true;
    Kind k = m_choice[it->second].kind;
    return k == Kind::Running || k == Kind::None;
  }

  // The ranges of running apps that a deployment of `v` for name `n` would break.
  std::vector<const RunningReq*> broken_by(int n, const semver::Version& v) const {
    std::vector<const RunningReq*> out;
    auto it = m_running_reqs.find(m_names[n].name);
    if (it == m_running_reqs.end()) return out;
    for (const RunningReq& r : it->second)
      if (binding(r) && !r.range.satisfies(v)) out.push_back(&r);
    return out;
  }

  // Whether deploying `v` for name `n` keeps every running app on it satisfied. Running
  // versions are never filtered by this: reusing one changes nothing for anybody.
  bool keeps_running(int n, const semver::Version& v) const {
    if (m_running_reqs.empty()) return true;
    return broken_by(n, v).empty();
  }

  // A running dependent as a hint names it: TENANT/NAME when another tenant's.
  std::string dependent_name(const RunningReq& r) const {
    return r.app->tenant == m_tenant ? r.app->name : r.app->tenant + "/" + r.app->name;
  }

  std::string running_text(const std::vector<const RunningReq*>& reqs) const {
    std::string out;
    for (const RunningReq* r : reqs) {
      if (!out.empty()) out += ", ";
      out += fmt::format("{}@{} (running{}) requires {}", r->app->name, r->app->version,
                         r->app->tenant == m_tenant ? "" : " in tenant " + r->app->tenant, r->range.text());
    }
    return out;
  }

  // The rule of docs/spec.md section 8: a running version satisfying every range, else
  // the highest repository version satisfying every range.
  Choice best(int n, const std::vector<Req>& reqs) const {
    const NameInfo& info = m_names[n];
    if (info.root) return {Kind::Root, 0};
    for (size_t i = 0; i < info.running.size(); ++i)
      if (satisfies_all(info.running[i].version, reqs)) return {Kind::Running, static_cast<uint32_t>(i)};
    for (size_t i = 0; i < info.repo.size(); ++i)
      if (satisfies_all(info.repo[i]->version, reqs) && keeps_running(n, info.repo[i]->version))
        return {Kind::Repo, static_cast<uint32_t>(i)};
    return {};
  }

  // Which release dependency `d` of release `n` binds to, and why (docs/spec.md section
  // 8, Releases). Decided from what is given and what runs only, never from a round's
  // choices, so it is the same in every round.
  const Binding& bind(int n, const Dependency& d) {
    auto [it, fresh] = m_bindings.try_emplace({n, &d});
    Binding& b = it->second;
    if (!fresh) return b;
    b = choose_binding(n, d);
    // A dependent that runs keeps what it was bound to unless that no longer serves; a
    // move is said, never silent.
    if (std::string was = recorded_binding(n, d); !was.empty() && was != b.release)
      b.reason += fmt::format("; was bound to {}", was);
    return b;
  }

  // The release the running release `n` recorded for `d`'s alias; empty when it does not
  // run or recorded none.
  std::string recorded_binding(int n, const Dependency& d) const {
    const NameInfo& info = m_names[n];
    if (info.running.empty()) return {};
    for (const RunningRequirement& r : info.running.front().app->dependency_ranges)
      if (r.alias == d.alias || (r.alias.empty() && r.name == d.name)) return r.target();
    return {};
  }

  Binding choose_binding(int n, const Dependency& d) {
    Binding b;
    if (!d.tenant.empty() && d.tenant != m_tenant) {
      b = {d.tenant + "/" + (d.release.empty() ? d.name : d.release), fmt::format("exported by tenant {}", d.tenant)};
      return b;
    }
    if (!d.release.empty()) {
      b = {d.release, "named by its release: field"};
      return b;
    }
    // What it was bound to at its last submit, while that runs this app in range (or is
    // given again with this submission).
    if (std::string was = recorded_binding(n, d); !was.empty() && was.find('/') == std::string::npos) {
      auto id = m_ids.find(was);
      if (id != m_ids.end() && m_names[id->second].root && m_names[id->second].root->name == d.name) {
        b = {was, "bound to it since its last submit, given in this submission"};
        return b;
      }
      if (auto r = m_running.find(was); r != m_running.end() && r->second.front().app->app_name() == d.name &&
                                        d.range.satisfies(r->second.front().version)) {
        b = {was, fmt::format("bound to it since its last submit; running {} satisfies {}",
                              r->second.front().version.to_string(), d.range.text())};
        return b;
      }
    }
    auto roots = m_root_releases.find(d.name);
    if (roots != m_root_releases.end())
      for (int n : roots->second)
        if (d.range.satisfies(m_names[n].root->version)) {
          b = {m_names[n].name, "given in this submission"};
          return b;
        }
    auto given = [&](const std::string& release) {
      auto id = m_ids.find(release);
      return id != m_ids.end() && m_names[id->second].root;
    };
    if (auto running = m_releases_of.find(d.name); running != m_releases_of.end()) {
      for (const RunningCandidate& c : running->second)
        if (!given(c.app->name) && d.range.satisfies(c.version)) {
          b = {c.app->name, fmt::format("running {} satisfies {}", c.version.to_string(), d.range.text())};
          return b;
        }
    }
    b = {d.name, "the release named after the app"};
    return b;
  }

  void reach(int n, Choice c) {
    m_reached[n] = 1;
    m_choice[n] = c;
    m_order.push_back(n);
  }

  // One breadth-first walk from the roots. Names seen in the previous round take the
  // choice computed from that round's ranges; new names take the best choice for the
  // ranges found so far, which is usually already right.
  void run_round(const std::vector<int>& root_ids) {
    for (int n : m_order) {
      m_reached[n] = 0;
      m_reqs[n].clear();
      m_choice[n] = {};
    }
    m_order.clear();
    for (int r : root_ids) reach(r, {Kind::Root, 0});
    for (size_t head = 0; head < m_order.size(); ++head) {
      int n = m_order[head];
      const AppSpec* spec = spec_of(n, m_choice[n]);
      if (!spec) continue;  // Reused apps' dependencies are already running.
      const Activity& act = activity(*spec, m_names[n].root == spec);
      for (size_t k = 0; k < spec->dependencies.size(); ++k) {
        if (!act.active[k]) continue;
        const Dependency& d = spec->dependencies[k];
        int m = intern(bind(n, d).release, d.name);
        m_reqs[m].push_back({n, &d});
        if (m_reached[m]) continue;
        Choice c = m_names[m].root ? Choice{Kind::Root, 0} : m_hinted[m] ? m_hint[m] : best(m, m_reqs[m]);
        reach(m, c);
      }
    }
  }

  Location where(const Req& r) const { return r.dep->location; }

  std::string dep_path(const Req& r, std::string_view field) const {
    const AppSpec* spec = spec_of(r.requirer, m_choice[r.requirer]);
    size_t index = static_cast<size_t>(r.dep - spec->dependencies.data());
    return field.empty() ? fmt::format("dependencies[{}]", index) : fmt::format("dependencies[{}].{}", index, field);
  }

  std::string available(int n) const {
    const NameInfo& info = m_names[n];
    std::vector<std::string> repo;
    for (auto it = info.repo.rbegin(); it != info.repo.rend(); ++it) repo.push_back((*it)->version.to_string());
    std::string out = fmt::format("available: {}", versions_text(repo));
    if (!info.running.empty()) {
      std::vector<std::string> running;
      for (auto it = info.running.rbegin(); it != info.running.rend(); ++it) running.push_back(it->version.to_string());
      out += fmt::format("; running in tenant '{}': {}", m_tenant, join_limited(running));
    }
    return out;
  }

  // Which candidates (running first, then repository) satisfy a range.
  std::vector<char> satisfying(int n, const semver::Range& range) const {
    const NameInfo& info = m_names[n];
    std::vector<char> out;
    for (const auto& c : info.running) out.push_back(range.satisfies(c.version));
    for (const AppSpec* s : info.repo) out.push_back(range.satisfies(s->version));
    return out;
  }

  void add_repo_problems(int n, Diagnostics& errors, std::set<int>& reported) const {
    const Diagnostics& problems = m_repo.diagnostics_for(m_names[n].app);
    if (problems.empty() || !reported.insert(n).second) return;
    errors.insert(errors.end(), problems.begin(), problems.end());
  }

  // Explains why no version of name `n` satisfies its ranges.
  void explain_unresolved(int n, Diagnostics& errors, std::set<int>& reported) const {
    const NameInfo& info = m_names[n];
    const std::vector<Req>& reqs = m_reqs[n];
    if (!info.foreign_tenant.empty()) {
      explain_foreign(n, errors);
      return;
    }
    if (info.running.empty() && info.repo.empty()) {
      if (!m_repo.diagnostics_for(info.app).empty()) {
        add_repo_problems(n, errors, reported);
        errors.push_back({where(reqs.front()), dep_path(reqs.front(), "name"),
                          fmt::format("{} depends on '{}', but every version of it in the spec repository is broken",
                                      id_of(reqs.front().requirer), info.app),
                          "fix the errors reported above for that app"});
        return;
      }
      std::vector<std::string> known = m_repo.names();
      for (const auto& [name, list] : m_releases_of)
        if (!m_repo.contains(name)) known.push_back(name);
      std::sort(known.begin(), known.end());
      std::string hint;
      if (auto close = did_you_mean(info.app, known)) hint = fmt::format("did you mean '{}'? ", *close);
      hint += known.empty() ? "the spec repository is empty: pass --repo DIR or set GAIA_REPO"
                            : fmt::format("apps available: {}", join_limited(known));
      for (const Req& r : reqs)
        errors.push_back({where(r), dep_path(r, "name"),
                          fmt::format("{} depends on '{}', which is neither running in tenant '{}' nor in the spec "
                                      "repository",
                                      id_of(r.requirer), info.app, m_tenant),
                          hint});
      return;
    }
    add_repo_problems(n, errors, reported);

    // A range no candidate satisfies on its own is a missing version, whatever the
    // other ranges say.
    std::vector<std::vector<char>> sets;
    bool any_alone = false;
    for (const Req& r : reqs) {
      sets.push_back(satisfying(n, r.dep->range));
      if (std::find(sets.back().begin(), sets.back().end(), 1) == sets.back().end()) {
        any_alone = true;
        errors.push_back({where(r), dep_path(r, "version"),
                          fmt::format("{}: no version satisfies {} (required by {}); {}", info.name,
                                      r.dep->range.text(), id_of(r.requirer), available(n)),
                          fmt::format("change the range, or add a matching version of {} to the spec repository",
                                      info.app)});
      }
    }
    if (any_alone) return;

    // The submitted chain agrees on a version, but apps running on this one need
    // another: moving it would break them, so name each of them and its range.
    const AppSpec* wanted = nullptr;
    for (const AppSpec* s : info.repo)
      if (satisfies_all(s->version, reqs)) {
        wanted = s;
        break;
      }
    if (wanted) {
      auto broken = broken_by(n, wanted->version);
      if (!broken.empty()) {
        std::string asked;
        for (const Req& r : reqs) {
          if (!asked.empty()) asked += ", ";
          asked += fmt::format("{} requires {}", id_of(r.requirer), r.dep->range.text());
        }
        std::string running_now;
        if (!info.running.empty()) running_now = fmt::format(" instead of the running {}", info.running.front().version.to_string());
        std::vector<std::string> dependents;
        for (const RunningReq* r : broken) dependents.push_back(dependent_name(*r));
        errors.push_back(
            {where(reqs.front()), dep_path(reqs.front(), "version"),
             fmt::format("{}: {}, which means deploying {}{}; that breaks apps running on it: {}; {}", info.name,
                         asked, wanted->version.to_string(), running_now, running_text(broken), available(n)),
             fmt::format("a release runs one version, and a submit never moves it out from under a running app: "
                         "loosen the range, submit versions of {} that accept {} together with it, delete them "
                         "first, or run the new version as a release of its own (release: in app.yaml, gaia "
                         "submit --name)",
                         join_limited(dependents), wanted->version.to_string())});
        return;
      }
    }

    // Otherwise find two requirers that cannot agree. Requirers with the same set of
    // acceptable candidates are interchangeable, so only the first of each is compared.
    std::map<std::vector<char>, size_t> distinct;
    for (size_t i = 0; i < sets.size(); ++i) distinct.emplace(sets[i], i);
    std::vector<size_t> reps;
    for (const auto& [set, i] : distinct) reps.push_back(i);
    std::sort(reps.begin(), reps.end());
    for (size_t a = 0; a < reps.size(); ++a) {
      for (size_t b = a + 1; b < reps.size(); ++b) {
        const auto& sa = sets[reps[a]];
        const auto& sb = sets[reps[b]];
        bool common = false;
        for (size_t k = 0; k < sa.size() && !common; ++k) common = sa[k] && sb[k];
        if (common) continue;
        const Req& ra = reqs[reps[a]];
        const Req& rb = reqs[reps[b]];
        errors.push_back({where(rb), dep_path(rb, "version"),
                          fmt::format("{}: {} requires {}, {} requires {}; no version satisfies both; {}", info.name,
                                      id_of(ra.requirer), ra.dep->range.text(), id_of(rb.requirer),
                                      rb.dep->range.text(), available(n)),
                          "a release runs one version: loosen one of the ranges, or bind one of the two to a "
                          "release of its own (release: in app.yaml)"});
        return;
      }
    }
    std::string all;
    for (const Req& r : reqs) {
      if (!all.empty()) all += ", ";
      all += fmt::format("{} requires {}", id_of(r.requirer), r.dep->range.text());
    }
    errors.push_back({where(reqs.back()), dep_path(reqs.back(), "version"),
                      fmt::format("{}: {}; no version satisfies all of them; {}", info.name, all, available(n)),
                      "a release runs one version: loosen one of the ranges, or bind some of them to a release "
                      "of their own (release: in app.yaml)"});
  }

  // A release bound by dependencies naming different apps, or running another app than
  // they name: reported at each such dependency, and the release left out of the plan
  // (replacing it would delete an app nobody named). True when it is such a release.
  bool check_release_app(int n, Diagnostics& errors) const {
    const NameInfo& info = m_names[n];
    bool bad = !info.running_other_app.empty();
    for (const Req& r : m_reqs[n]) bad |= r.dep->name != info.app;
    if (!bad) return false;
    for (const Req& r : m_reqs[n]) {
      std::string runs = !info.running_other_app.empty()
                             ? fmt::format("release '{}' in tenant '{}' runs app {}",
                                           info.foreign_tenant.empty() ? info.name
                                                                       : info.name.substr(info.foreign_tenant.size() + 1),
                                           info.foreign_tenant.empty() ? m_tenant : info.foreign_tenant,
                                           info.running_other_app)
                             : fmt::format("release '{}' is bound to app {} by another dependency", info.name, info.app);
      if (r.dep->name == info.app && info.running_other_app.empty()) continue;
      errors.push_back({r.dep->release.empty() ? where(r) : r.dep->release_location,
                        dep_path(r, r.dep->release.empty() ? "name" : "release"),
                        fmt::format("{} depends on {} through release '{}', but {}", id_of(r.requirer), r.dep->name,
                                    info.name, runs),
                        r.dep->release.empty()
                            ? fmt::format("name the release to bind to with release: (gaia get apps lists them), or "
                                          "deploy {} under another name (gaia submit --name)",
                                          r.dep->name)
                            : fmt::format("name a release of {} (gaia get apps lists them)", r.dep->name)});
    }
    return true;
  }

  // Why a release of another tenant cannot be bound: it does not run there, it is not
  // exported to this tenant, or its version is outside a range (a submit here never
  // changes another tenant's apps).
  void explain_foreign(int n, Diagnostics& errors) const {
    const NameInfo& info = m_names[n];
    std::string release = info.name.substr(info.foreign_tenant.size() + 1);
    for (const Req& r : m_reqs[n]) {
      Location loc = r.dep->tenant_location.file.empty() ? where(r) : r.dep->tenant_location;
      std::string path = dep_path(r, "tenant");
      auto it = m_foreign.find(info.name);
      if (it == m_foreign.end()) {
        errors.push_back({loc, path,
                          fmt::format("{} depends on {} of tenant {}, but no release '{}' runs in tenant {}",
                                      id_of(r.requirer), info.app, info.foreign_tenant, release, info.foreign_tenant),
                          fmt::format("deploy it there first (gaia submit DIR --tenant {}{}) and export it (gaia "
                                      "export {} --tenant {} --to {}); a submit never deploys into another tenant",
                                      info.foreign_tenant, release == info.app ? "" : " --name " + release, release,
                                      info.foreign_tenant, m_tenant)});
      } else if (info.not_exported) {
        errors.push_back({loc, path,
                          fmt::format("{} depends on {} of tenant {}, but tenant {} does not export release '{}' to "
                                      "tenant {}",
                                      id_of(r.requirer), info.app, info.foreign_tenant, info.foreign_tenant, release,
                                      m_tenant),
                          fmt::format("its owners export it with: gaia export {} --tenant {} --to {}", release,
                                      info.foreign_tenant, m_tenant)});
      } else if (!r.dep->range.satisfies(it->second.version)) {
        errors.push_back({where(r), dep_path(r, "version"),
                          fmt::format("{} requires {} {}, but tenant {} runs {} at {}", id_of(r.requirer), info.app,
                                      r.dep->range.text(), info.foreign_tenant, release,
                                      it->second.version.to_string()),
                          fmt::format("a submit never changes another tenant's apps: change the range, or ask tenant "
                                      "{} to move {}",
                                      info.foreign_tenant, release)});
      }
    }
  }

  void check_root_ranges(int n, Diagnostics& errors) const {
    const AppSpec* root = m_names[n].root;
    // Deploying the version that already runs breaks nobody that runs on it now.
    bool running_version = false;
    for (const RunningCandidate& c : m_names[n].running) running_version |= semver::compare(c.version, root->version) == 0;
    if (!running_version) {
      auto broken = broken_by(n, root->version);
      if (!broken.empty()) {
        std::vector<std::string> dependents;
        for (const RunningReq* r : broken) dependents.push_back(dependent_name(*r));
        errors.push_back({Location{root->yaml_file}, "version",
                          fmt::format("{} is given to be deployed, which breaks apps running on {}: {}", root->id(),
                                      m_names[n].name, running_text(broken)),
                          fmt::format("submit versions of {} that accept {} together with it, or delete them first",
                                      join_limited(dependents), root->version.to_string())});
      }
    }
    for (const Req& r : m_reqs[n]) {
      if (r.dep->range.satisfies(root->version)) continue;
      errors.push_back({where(r), dep_path(r, "version"),
                        fmt::format("{}: {} requires {}, but {} is given to be deployed", m_names[n].name,
                                    id_of(r.requirer), r.dep->range.text(), root->id()),
                        fmt::format("deploy a version of {} satisfying {}, or change the range", root->name,
                                    r.dep->range.text())});
    }
  }

  // The outputs a chosen app declares.
  std::vector<std::string> declared_outputs(int n) const {
    Choice c = m_choice[n];
    if (const AppSpec* spec = spec_of(n, c)) return spec->outputs;
    const RunningCandidate& rc = m_names[n].running[c.index];
    if (const AppSpec* spec = m_repo.find(m_names[n].app, rc.version)) return spec->outputs;
    std::vector<std::string> out;
    if (rc.app->outputs.is_object())
      for (const auto& [key, value] : rc.app->outputs.items()) out.push_back(key);
    return out;
  }

  void check_imports(int n, Diagnostics& errors) const {
    std::vector<std::string> declared = declared_outputs(n);
    for (const Req& r : m_reqs[n]) {
      for (size_t i = 0; i < r.dep->imports.size(); ++i) {
        const std::string& want = r.dep->imports[i];
        if (std::find(declared.begin(), declared.end(), want) != declared.end()) continue;
        std::string has =
            declared.empty() ? "declares no outputs" : fmt::format("declares: {}", join_limited(declared));
        std::string hint;
        if (auto close = did_you_mean(want, declared)) hint = fmt::format("did you mean '{}'? ", *close);
        hint += fmt::format("import one of the declared outputs, or add '{}' to outputs: in {}'s app.yaml", want,
                            m_names[n].app);
        errors.push_back({where(r), dep_path(r, fmt::format("import[{}]", i)),
                          fmt::format("{} imports '{}' from {}, which does not declare it; {} {}", id_of(r.requirer),
                                      want, id_of(n), id_of(n), has),
                          hint});
      }
    }
  }

  Result<Plan> finish(const std::vector<int>& root_ids) {
    Diagnostics errors;
    std::set<int> reported;
    std::vector<int> node_of(m_names.size(), -1);
    Plan plan;
    plan.tenant = m_tenant;
    for (int n : m_order) {
      const NameInfo& info = m_names[n];
      if (check_release_app(n, errors)) continue;
      if (info.root) {
        check_root_ranges(n, errors);
      } else if (m_choice[n].kind == Kind::None) {
        explain_unresolved(n, errors, reported);
        continue;
      } else if (m_choice[n].kind == Kind::Repo) {
        // A broken version of a name being deployed may well be the one meant.
        add_repo_problems(n, errors, reported);
      }
      Choice c = m_choice[n];
      PlanNode node;
      node.name = info.foreign_tenant.empty() ? info.name : info.name.substr(info.foreign_tenant.size() + 1);
      node.tenant = info.foreign_tenant;
      node.app = info.app;
      node.version = version_of(n, c);
      node.root = c.kind == Kind::Root;
      if (c.kind == Kind::Running) {
        node.action = Action::Reuse;
        node.outputs = info.running[c.index].app->outputs;
        node.ready = info.running[c.index].app->ready;
      } else {
        node.action = Action::Deploy;
        node.spec = spec_of(n, c);
        if (!info.running.empty() && semver::compare(info.running.front().version, node.version) != 0)
          node.replaces = info.running.front().version;
      }
      node_of[n] = static_cast<int>(plan.nodes.size());
      plan.nodes.push_back(std::move(node));
    }
    for (int n : m_order) {
      if (node_of[n] < 0) continue;
      PlanNode& node = plan.nodes[static_cast<size_t>(node_of[n])];
      for (const Req& r : m_reqs[n])
        node.requirers.push_back({static_cast<size_t>(node_of[r.requirer]), r.dep->alias, r.dep->range,
                                  r.dep->imports, r.dep->location});
      if (node.spec) {
        const Activity& act = activity(*node.spec, m_names[n].root == node.spec);
        node.skipped = act.skipped;
        std::map<std::string, size_t> bound;  // Release -> the entry bound to it first.
        for (size_t k = 0; k < node.spec->dependencies.size(); ++k) {
          if (!act.active[k]) continue;
          const Dependency& d = node.spec->dependencies[k];
          const Binding& b = bind(n, d);
          // Two entries on one release would read and write the same data under two
          // aliases (a copy onto itself): each must name its own.
          if (auto [first, fresh] = bound.emplace(b.release, k); !fresh) {
            errors.push_back({d.location, fmt::format("dependencies[{}]", k),
                              fmt::format("{}: dependencies[{}] ({}) and dependencies[{}] ({}) both bind to release {}",
                                          id_of(n), first->second, node.spec->dependencies[first->second].alias, k,
                                          d.alias, b.release),
                              "name the release each binds to with release:"});
            continue;
          }
          if (int target = node_of[m_ids.find(b.release)->second]; target >= 0)
            node.dependencies.push_back({d.alias, static_cast<size_t>(target), b.reason});
        }
        if (!act.errors.empty() && m_reported_conditions.insert(node.spec).second)
          errors.insert(errors.end(), act.errors.begin(), act.errors.end());
      }
      check_imports(n, errors);
    }
    for (int r : root_ids) plan.roots.push_back(static_cast<size_t>(node_of[r]));
    find_cycles(plan, errors);
    find_foreign_loops(plan, errors);
    if (!errors.empty()) return fail(std::move(errors));
    plan.order = topological_order(plan);
    return plan;
  }

  // Which dependencies of a spec apply, decided once per spec: its config is evaluated
  // only when it has a conditional dependency. A spec whose conditions cannot be decided
  // (a broken config.jsonnet, an unknown parameter) follows none of its conditional
  // dependencies, and its errors are reported if the spec ends up in the plan.
  struct Activity {
    std::vector<bool> active;
    std::vector<SkippedDependency> skipped;
    Diagnostics errors;
  };
  const Activity& activity(const AppSpec& spec, bool root) {
    auto [it, fresh] = m_activity.try_emplace(&spec);
    Activity& a = it->second;
    if (!fresh) return a;
    a.active.assign(spec.dependencies.size(), true);
    bool conditional = std::any_of(spec.dependencies.begin(), spec.dependencies.end(),
                                   [](const Dependency& d) { return d.when.has_value(); });
    if (!conditional || !m_config) return a;
    auto config = m_config(spec, root);
    if (!config) {
      for (size_t k = 0; k < spec.dependencies.size(); ++k) a.active[k] = !spec.dependencies[k].when;
      a.errors = config.error();
      return a;
    }
    auto flags = active_dependencies(spec, *config, &a.skipped);
    if (!flags) {
      for (size_t k = 0; k < spec.dependencies.size(); ++k) a.active[k] = !spec.dependencies[k].when;
      a.errors = flags.error();
      return a;
    }
    a.active = std::move(*flags);
    return a;
  }

  const ConfigEvaluator& m_config;
  std::map<const AppSpec*, Activity> m_activity;
  std::set<const AppSpec*> m_reported_conditions;

  // A release of another tenant that runs on, directly or through others, an app this
  // plan deploys bound to it would close a loop across tenants: each would wait for the
  // other, and neither could be deleted. Followed through what the running apps record.
  void find_foreign_loops(const Plan& plan, Diagnostics& errors) const {
    auto running = [&](const std::string& id) -> const RunningApp* {
      if (id.starts_with(m_tenant + "/")) {
        auto it = m_running.find(id.substr(m_tenant.size() + 1));
        return it == m_running.end() ? nullptr : it->second.front().app;
      }
      auto it = m_foreign.find(id);
      return it == m_foreign.end() ? nullptr : it->second.app;
    };
    for (const PlanNode& f : plan.nodes) {
      if (f.tenant.empty()) continue;
      for (const Requirement& req : f.requirers) {
        const PlanNode& dependent = plan.nodes[req.requirer];
        if (!dependent.tenant.empty() || dependent.action != Action::Deploy) continue;
        const std::string goal = m_tenant + "/" + dependent.name;
        std::set<std::string> seen;
        std::vector<std::pair<std::string, std::string>> stack{{f.tenant + "/" + f.name, goal + " -> " + f.tenant + "/" + f.name}};
        while (!stack.empty()) {
          auto [id, path] = std::move(stack.back());
          stack.pop_back();
          if (id == goal) {
            errors.push_back({req.location, "dependencies", fmt::format("dependency loop across tenants: {}", path),
                              "apps cannot depend on each other in a loop: remove one of these dependencies"});
            break;
          }
          if (!seen.insert(id).second) continue;
          const RunningApp* app = running(id);
          if (!app) continue;
          for (const RunningRequirement& r : app->dependency_ranges) {
            std::string next = r.target().find('/') != std::string::npos ? r.target() : app->tenant + "/" + r.target();
            stack.push_back({next, path + " -> " + next});
          }
        }
      }
    }
  }

  // Iterative depth-first search: chains thousands deep must not exhaust the stack.
  static void find_cycles(const Plan& plan, Diagnostics& errors) {
    enum : uint8_t { White, Grey, Black };
    std::vector<uint8_t> state(plan.nodes.size(), White);
    std::vector<std::pair<size_t, size_t>> stack;  // node, next edge
    std::vector<size_t> depth_of(plan.nodes.size(), 0);
    for (size_t start = 0; start < plan.nodes.size(); ++start) {
      if (state[start] != White) continue;
      state[start] = Grey;
      stack.push_back({start, 0});
      while (!stack.empty()) {
        auto& [v, next] = stack.back();
        const auto& edges = plan.nodes[v].dependencies;
        if (next == edges.size()) {
          state[v] = Black;
          stack.pop_back();
          continue;
        }
        size_t w = edges[next++].node;
        if (state[w] == White) {
          state[w] = Grey;
          depth_of[w] = stack.size();
          stack.push_back({w, 0});
        } else if (state[w] == Grey) {
          std::string text;
          for (size_t i = depth_of[w]; i < stack.size(); ++i) text += plan.nodes[stack[i].first].name + " -> ";
          text += plan.nodes[w].name;
          const PlanNode& from = plan.nodes[stack.back().first];
          Location loc;
          std::string path;
          for (size_t i = 0; i < from.spec->dependencies.size(); ++i)
            if (from.spec->dependencies[i].name == plan.nodes[w].app) {
              loc = from.spec->dependencies[i].location;
              path = fmt::format("dependencies[{}]", i);
            }
          errors.push_back({loc, path, fmt::format("dependency cycle: {}", text),
                            "apps cannot depend on each other in a loop: remove one of these dependencies"});
        }
      }
    }
  }

  // Kahn's algorithm; among apps whose dependencies are all placed, the smallest name
  // goes first, so the order is the same for the same inputs.
  static std::vector<size_t> topological_order(const Plan& plan) {
    size_t n = plan.nodes.size();
    std::vector<size_t> pending(n, 0);
    std::vector<std::vector<size_t>> dependents(n);
    for (size_t i = 0; i < n; ++i) {
      pending[i] = plan.nodes[i].dependencies.size();
      for (const PlanEdge& e : plan.nodes[i].dependencies) dependents[e.node].push_back(i);
    }
    auto later = [&](size_t a, size_t b) { return plan.nodes[a].name > plan.nodes[b].name; };
    std::priority_queue<size_t, std::vector<size_t>, decltype(later)> ready(later);
    for (size_t i = 0; i < n; ++i)
      if (pending[i] == 0) ready.push(i);
    std::vector<size_t> order;
    order.reserve(n);
    while (!ready.empty()) {
      size_t i = ready.top();
      ready.pop();
      order.push_back(i);
      for (size_t d : dependents[i])
        if (--pending[d] == 0) ready.push(d);
    }
    return order;
  }

  std::unexpected<Diagnostics> not_settling(const std::vector<int>& changed) const {
    std::vector<std::string> names;
    for (int n : changed) names.push_back(m_names[n].name);
    return fail(Diagnostic{
        Location{}, "",
        fmt::format("dependency resolution did not settle after {} rounds: the versions chosen for {} keep changing "
                    "because each choice changes the ranges placed on the others",
                    kMaxRounds, join_limited(names)),
        "pin exact versions for these dependencies"});
  }

  const SpecRepository& m_repo;
  std::string m_tenant;
  // Running releases by release name (one each), and by the app they run.
  std::unordered_map<std::string, std::vector<RunningCandidate>> m_running;
  std::unordered_map<std::string, std::vector<RunningCandidate>> m_releases_of;
  std::unordered_map<std::string, const RunningApp*> m_unparsed;  // Versions that do not parse.
  std::unordered_map<std::string, RunningCandidate> m_foreign;     // Other tenants' releases, by TENANT/NAME.
  // The roots' release ids by the app they run, in the order given.
  std::unordered_map<std::string, std::vector<int>> m_root_releases;
  std::map<std::pair<int, const Dependency*>, Binding> m_bindings;
  // Ranges running apps place on a release, by its name.
  std::unordered_map<std::string, std::vector<RunningReq>> m_running_reqs;
  std::unordered_map<std::string, int, StringHash, std::equal_to<>> m_ids;
  // Per name id.
  std::vector<NameInfo> m_names;
  std::vector<Choice> m_choice, m_hint, m_desired;
  std::vector<char> m_hinted, m_reached;
  std::vector<std::vector<Req>> m_reqs;
  std::vector<int> m_order;  // Names reached this round, breadth-first.
};

}  // namespace

Result<Plan> resolve(const std::vector<const AppSpec*>& roots, const SpecRepository& repo,
                     const std::vector<RunningApp>& running, const std::string& tenant, const ConfigEvaluator& config) {
  std::vector<RootSpec> named;
  for (const AppSpec* r : roots) named.push_back({r, {}});
  return Resolver(repo, running, tenant, config).run(named);
}

Result<Plan> resolve_releases(const std::vector<RootSpec>& roots, const SpecRepository& repo,
                     const std::vector<RunningApp>& running, const std::string& tenant, const ConfigEvaluator& config) {
  return Resolver(repo, running, tenant, config).run(roots);
}

Result<std::vector<bool>> active_dependencies(const AppSpec& spec, const nlohmann::json& config,
                                              std::vector<SkippedDependency>* skipped) {
  std::vector<bool> out(spec.dependencies.size(), true);
  Diagnostics errors;
  for (size_t k = 0; k < spec.dependencies.size(); ++k) {
    const Dependency& d = spec.dependencies[k];
    if (!d.when) continue;
    std::string hint;
    auto holds = evaluate_condition(*d.when, config, &hint);
    if (!holds) {
      errors.push_back(Diagnostic{d.when_location, fmt::format("dependencies[{}].when", k),
                                  fmt::format("app {}: the condition of its dependency on {}: {}", spec.name, d.name,
                                              holds.error()),
                                  hint});
      continue;
    }
    out[k] = *holds;
    if (!*holds && skipped)
      skipped->push_back({d.name, d.alias, d.when->text, condition_value_text(*d.when, config)});
  }
  if (!errors.empty()) return fail(std::move(errors));
  return out;
}

std::vector<size_t> reverse_dependents(const Plan& plan, std::string_view name) {
  auto start = plan.find(name);
  if (!start) return {};
  std::vector<std::vector<size_t>> dependents(plan.nodes.size());
  for (size_t i = 0; i < plan.nodes.size(); ++i)
    for (const PlanEdge& e : plan.nodes[i].dependencies) dependents[e.node].push_back(i);
  std::vector<char> seen(plan.nodes.size(), 0);
  seen[*start] = 1;
  std::vector<size_t> out;
  std::vector<size_t> frontier{*start};
  for (size_t head = 0; head < frontier.size(); ++head)
    for (size_t d : dependents[frontier[head]])
      if (!seen[d]) {
        seen[d] = 1;
        frontier.push_back(d);
        out.push_back(d);
      }
  return out;
}

std::vector<RepoDependent> reverse_dependents(const SpecRepository& repo, std::string_view name) {
  // name -> (dependent version, its range on that name)
  std::unordered_map<std::string, std::vector<std::pair<const AppSpec*, const Dependency*>>> by_dependency;
  for (const std::string& n : repo.names())
    for (const AppSpec* spec : repo.versions(n))
      for (const Dependency& d : spec->dependencies) by_dependency[d.name].push_back({spec, &d});

  std::vector<RepoDependent> out;
  std::set<const AppSpec*> listed;
  std::set<std::string, std::less<>> visited{std::string(name)};
  std::vector<std::string> frontier{std::string(name)};
  for (int depth = 1; !frontier.empty(); ++depth) {
    std::vector<std::string> next;
    for (const std::string& target : frontier) {
      auto it = by_dependency.find(target);
      if (it == by_dependency.end()) continue;
      for (const auto& [spec, dep] : it->second) {
        if (!listed.insert(spec).second) continue;
        out.push_back({spec, target, dep->range.text(), depth});
        if (visited.insert(spec->name).second) next.push_back(spec->name);
      }
    }
    frontier = std::move(next);
  }
  std::stable_sort(out.begin(), out.end(), [](const RepoDependent& a, const RepoDependent& b) {
    if (a.depth != b.depth) return a.depth < b.depth;
    if (a.spec->name != b.spec->name) return a.spec->name < b.spec->name;
    return semver::compare(a.spec->version, b.spec->version) > 0;
  });
  return out;
}

}  // namespace gaia::spec
