#pragma once
// "Apps already running": what dependency resolution reuses instead of deploying again.
// An interface so resolution is tested with an in-memory list; the store implements it
// once apps are really deployed.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gaia {

// A range a running app places on one of its dependencies, as written in its app.yaml.
struct RunningRequirement {
  std::string name;   // The app depended on.
  std::string range;
  // The release of `name` it is bound to (docs/spec.md section 8, Releases); empty in apps
  // recorded before releases, which were bound to the release named `name`.
  // A release of another tenant is "TENANT/NAME" (an exported release).
  std::string release;
  std::string alias;  // Its deps.* alias; empty in apps recorded before releases.
  const std::string& target() const { return release.empty() ? name : release; }
  bool operator==(const RunningRequirement&) const = default;
};

struct RunningApp {
  std::string tenant;
  std::string name;          // The release name: unique in the tenant.
  std::string version;       // Full semver of the running app.
  nlohmann::json outputs = nlohmann::json::object();  // Its declared outputs' values.
  bool ready = true;
  // What it requires of its dependencies. Resolution keeps these satisfied: a submit may
  // not move a dependency out from under an app that runs on it. Apps recorded before
  // this was kept have none; resolution then reads the ranges from the repository.
  std::vector<RunningRequirement> dependency_ranges;
  // The app (app.yaml's name) the release runs; empty when it is `name` itself.
  std::string app;
  const std::string& app_name() const { return app.empty() ? name : app; }
  // The tenants whose apps may bind to this release ("*": every tenant); see
  // `gaia export`. Empty: only its own tenant's.
  std::vector<std::string> exports;
  bool exported_to(const std::string& tenant) const {
    for (const auto& t : exports)
      if (t == "*" || t == tenant) return true;
    return false;
  }
};

class RunningApps {
 public:
  virtual ~RunningApps() = default;
  virtual std::vector<RunningApp> list(const std::string& tenant) const = 0;
  // Every tenant's apps: releases other tenants export to a tenant, and the apps of
  // other tenants bound to a tenant's releases, take part in its resolution.
  virtual std::vector<RunningApp> list_all() const = 0;
};

class InMemoryRunningApps final : public RunningApps {
 public:
  void add(RunningApp app) { m_apps.push_back(std::move(app)); }
  std::vector<RunningApp> list(const std::string& tenant) const override {
    std::vector<RunningApp> out;
    for (const auto& a : m_apps)
      if (a.tenant == tenant) out.push_back(a);
    return out;
  }
  std::vector<RunningApp> list_all() const override { return m_apps; }

 private:
  std::vector<RunningApp> m_apps;
};

}  // namespace gaia
