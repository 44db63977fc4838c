#include "ops/storage_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace gaia::ops {

namespace fs = std::filesystem;

Location find_literal(const std::string& spec_dir, const std::string& value) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const char* first : {"main.jsonnet", "config.jsonnet"})
    if (fs::is_regular_file(fs::path(spec_dir) / first, ec)) files.push_back(fs::path(spec_dir) / first);
  std::vector<fs::path> rest;
  for (auto it = fs::recursive_directory_iterator(spec_dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    if (!it->is_regular_file(ec)) continue;
    std::string ext = p.extension().string();
    if ((ext == ".jsonnet" || ext == ".libsonnet") &&
        std::find(files.begin(), files.end(), p) == files.end())
      rest.push_back(p);
  }
  std::sort(rest.begin(), rest.end());
  files.insert(files.end(), rest.begin(), rest.end());
  for (const auto& p : files) {
    std::ifstream in(p);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      for (const std::string& quoted : {"'" + value + "'", "\"" + value + "\""})
        if (size_t at = line.find(quoted); at != std::string::npos)
          return Location{p.string(), n, static_cast<int>(at) + 1};
  }
  return Location{(fs::path(spec_dir) / "main.jsonnet").string(), 0, 0};
}

Result<void> check_storage_classes(const ClusterState& state, const std::vector<AppToDeploy>& apps) {
  Diagnostics errors;
  std::vector<StorageClass> classes = effective_storage_classes(state.snapshot);
  std::vector<std::string> names;
  for (const auto& c : classes)
    names.push_back(c.kind == StorageKind::Claim ? c.name + " (claim)" : c.name);
  for (const auto& a : apps) {
    const AppRecord& rec = a.record;
    for (const auto& role : rec.workload.roles)
      for (size_t v = 0; v < role.volumes.size(); ++v) {
        const Volume& vol = role.volumes[v];
        if (find_storage_class(state.snapshot, vol.storage_class)) continue;
        Diagnostic d;
        d.location = rec.spec_dir.empty() ? Location{} : find_literal(rec.spec_dir, vol.storage_class);
        d.path = fmt::format("roles.{}.volumes[{}].class", role.name, v);
        // A volume without `class` asks for hdd: say so where the spec does not write it.
        bool defaulted = vol.storage_class == Volume{}.storage_class && !d.location.known();
        d.message = fmt::format("app {}, role {}, volume {}: this cluster has no storage class '{}'{}; it has {}",
                                rec.name, role.name, vol.name, vol.storage_class,
                                defaulted ? " (the class of a volume that names none)" : "", fmt::join(names, ", "));
        d.hint = "name one of the cluster's classes, or declare the class under storage_classes in the cluster file "
                 "(gaia cluster show lists the classes)";
        errors.push_back(std::move(d));
      }
  }
  if (!errors.empty()) return fail(std::move(errors));
  return {};
}

}  // namespace gaia::ops
