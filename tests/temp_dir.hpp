#pragma once
// A scratch directory under the system temp dir, made with mkdtemp (unique even across
// processes running tests in parallel) and removed with everything in it when the test
// ends. Every test folder uses this one; tests/cli/e2e_util.hpp builds its Scratch on it.

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace gaia::test {

class TempDir {
 public:
  // `prefix` names the directory (<temp>/<prefix>-XXXXXX), so a leftover says whose it is.
  explicit TempDir(const std::string& prefix = "gaia-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
    m_path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    // A test may have taken its own permissions away to provoke an error.
    std::filesystem::permissions(m_path, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(m_path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return m_path; }

  // Writes `text` to path()/relpath, creating parent directories.
  std::filesystem::path write(const std::string& relpath, const std::string& text) const {
    std::filesystem::path p = m_path / relpath;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
    return p;
  }

  // An app directory with app.yaml, config.jsonnet and main.jsonnet.
  std::filesystem::path write_app(const std::string& reldir, const std::string& app_yaml) const {
    write(reldir + "/app.yaml", app_yaml);
    write(reldir + "/config.jsonnet", "{}\n");
    write(reldir + "/main.jsonnet", "function(config, deps, app) { roles: {}, outputs: {} }\n");
    return m_path / reldir;
  }

 private:
  std::filesystem::path m_path;
};

}  // namespace gaia::test
