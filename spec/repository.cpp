#include "spec/repository.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace gaia::spec {
namespace fs = std::filesystem;

namespace {

// Sub-directories of `dir`, sorted so that loading order (and so diagnostics) is stable.
// Hidden directories (.git, .cache) are never app versions.
std::vector<fs::path> sorted_subdirs(const fs::path& dir, Diagnostics& problems) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  if (ec) {
    problems.push_back({Location{dir.string()}, "", fmt::format("cannot list directory: {}", ec.message()),
                        "check the directory's permissions"});
    return out;
  }
  for (; it != end; it.increment(ec)) {
    if (ec) break;
    std::string name = it->path().filename().string();
    if (name.empty() || name.front() == '.') continue;
    std::error_code ec2;
    if (it->is_directory(ec2)) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool has_app_yaml(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / "app.yaml", ec);
}

}  // namespace

std::vector<fs::path> SpecRepository::split_path_list(std::string_view value) {
  std::vector<fs::path> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t colon = value.find(':', start);
    if (colon == std::string_view::npos) colon = value.size();
    if (colon > start) out.emplace_back(std::string(value.substr(start, colon - start)));
    start = colon + 1;
  }
  return out;
}

Result<SpecRepository> SpecRepository::load(const std::vector<fs::path>& roots) {
  Diagnostics errors;
  for (const auto& root : roots) {
    std::error_code ec;
    auto status = fs::status(root, ec);
    if (!fs::exists(status))
      errors.push_back({Location{root.string()}, "", fmt::format("spec repository '{}' does not exist", root.string()),
                        "pass an existing directory with --repo or in GAIA_REPO (colon-separated)"});
    else if (!fs::is_directory(status))
      errors.push_back({Location{root.string()}, "",
                        fmt::format("spec repository '{}' is a file, expected a directory of app directories",
                                    root.string()),
                        "a repository holds one folder per app (root/hdfs/app.yaml or root/hdfs/3.3.4/app.yaml)"});
  }
  if (!errors.empty()) return fail(std::move(errors));

  SpecRepository repo;
  repo.m_roots = roots;
  for (const auto& root : roots) {
    Diagnostics listing_problems;
    for (const auto& dir : sorted_subdirs(root, listing_problems)) {
      // root/name/app.yaml, else root/name/<version>/app.yaml.
      std::vector<std::pair<fs::path, std::string>> candidates;  // dir, name guessed from the path
      if (has_app_yaml(dir)) {
        candidates.emplace_back(dir, dir.filename().string());
      } else {
        for (const auto& sub : sorted_subdirs(dir, listing_problems))
          if (has_app_yaml(sub)) candidates.emplace_back(sub, dir.filename().string());
      }
      for (auto& [app_dir, guessed_name] : candidates) {
        AppSpecParse parsed = load_app_spec_partial(app_dir);
        if (parsed.errors.empty()) {
          repo.add(std::move(parsed.spec));
          continue;
        }
        // File the problem under the name the app.yaml declares when it could be read,
        // so that resolving that name reports it; else under the folder's name.
        std::string name = parsed.name_valid ? parsed.spec.name : guessed_name;
        repo.file_problem(name, std::move(parsed.errors));
      }
    }
    for (auto& d : listing_problems) repo.m_all_diagnostics.push_back(std::move(d));
  }
  return repo;
}

void SpecRepository::file_problem(const std::string& name, Diagnostics ds) {
  auto& slot = m_problems[name];
  for (auto& d : ds) {
    m_all_diagnostics.push_back(d);
    slot.push_back(std::move(d));
  }
}

void SpecRepository::add(AppSpec spec) {
  if (const AppSpec* existing = find(spec.name, spec.version)) {
    file_problem(spec.name,
                 {Diagnostic{Location{spec.yaml_file}, "",
                             fmt::format("{} is defined twice: in '{}' and in '{}'", spec.id(), existing->dir.string(),
                                         spec.dir.string()),
                             "keep one of the two directories, or give one of them another version"}});
    return;
  }
  m_specs.push_back(std::make_unique<AppSpec>(std::move(spec)));
  const AppSpec* added = m_specs.back().get();
  auto& list = m_index[added->name];
  // Keep the list sorted highest first; insertion keeps loading linear for the usual
  // handful of versions per app.
  auto pos = std::find_if(list.begin(), list.end(),
                          [&](const AppSpec* s) { return semver::compare(s->version, added->version) < 0; });
  list.insert(pos, added);
}

std::span<const AppSpec* const> SpecRepository::versions(std::string_view name) const {
  auto it = m_index.find(name);
  if (it == m_index.end()) return {};
  return it->second;
}

const AppSpec* SpecRepository::find(std::string_view name, const semver::Version& version) const {
  for (const AppSpec* s : versions(name))
    if (semver::compare(s->version, version) == 0) return s;
  return nullptr;
}

std::vector<std::string> SpecRepository::names() const {
  std::vector<std::string> out;
  out.reserve(m_index.size());
  for (const auto& [name, list] : m_index) out.push_back(name);
  return out;
}

const Diagnostics& SpecRepository::diagnostics_for(std::string_view name) const {
  static const Diagnostics kNone;
  auto it = m_problems.find(name);
  return it == m_problems.end() ? kNone : it->second;
}

}  // namespace gaia::spec
