#pragma once
// The spec repository: the app versions dependency resolution may deploy. It is a list of
// root folders (--repo, GAIA_REPO colon-separated); an app version is any directory with
// an app.yaml directly under a root (root/hdfs/app.yaml) or one level deeper
// (root/hdfs/3.3.4/app.yaml).
//
// A broken app.yaml does not make the whole repository unusable: its diagnostics are
// filed under the app's name and reported only when a resolution touches that name.

#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/error.hpp"
#include "spec/app_spec.hpp"

namespace gaia::spec {

class SpecRepository {
 public:
  SpecRepository() = default;

  // Loads every app version under `roots`. Fails only when a root does not exist or is
  // not a directory; problems with single apps are kept (see diagnostics()).
  static Result<SpecRepository> load(const std::vector<std::filesystem::path>& roots);

  // Splits a GAIA_REPO value ("a:b:c"); empty parts are skipped.
  static std::vector<std::filesystem::path> split_path_list(std::string_view value);

  // Adds an app version (tests build repositories in memory this way). A second spec with
  // the same name@version is not added; a diagnostic naming both directories is filed
  // under the name instead.
  void add(AppSpec spec);

  // The valid versions of `name`, highest first; empty when unknown.
  std::span<const AppSpec* const> versions(std::string_view name) const;
  const AppSpec* find(std::string_view name, const semver::Version& version) const;
  // Names with at least one valid version, sorted.
  std::vector<std::string> names() const;
  bool contains(std::string_view name) const { return m_index.find(name) != m_index.end(); }
  size_t size() const { return m_specs.size(); }

  // Every problem found while loading (broken app.yaml files, duplicates, unreadable
  // directories), in the order found.
  const Diagnostics& diagnostics() const { return m_all_diagnostics; }
  // The problems filed under `name`; empty when it has none.
  const Diagnostics& diagnostics_for(std::string_view name) const;

  const std::vector<std::filesystem::path>& roots() const { return m_roots; }

 private:
  void file_problem(const std::string& name, Diagnostics ds);

  std::vector<std::filesystem::path> m_roots;
  // Owning storage; the pointers in m_index stay valid when the repository is moved.
  std::vector<std::unique_ptr<AppSpec>> m_specs;
  std::map<std::string, std::vector<const AppSpec*>, std::less<>> m_index;
  std::map<std::string, Diagnostics, std::less<>> m_problems;
  Diagnostics m_all_diagnostics;
};

}  // namespace gaia::spec
