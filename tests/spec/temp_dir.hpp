#pragma once
// A scratch directory under the system temp dir, removed with everything in it when the
// test ends.

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>

namespace gaia::test {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    std::random_device rd;
    m_path = std::filesystem::temp_directory_path() /
             ("gaia-spec-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()) + "-" +
              std::to_string(counter++));
    std::filesystem::create_directories(m_path);
  }
  ~TempDir() {
    std::error_code ec;
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
    std::ofstream(p, std::ios::binary) << text;
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
