#pragma once
// Small app directories written by the tests themselves, so the renderer's tests do not
// depend on examples/ and can make files hostile, change them, or add symlinks.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "render/renderer.hpp"
#include "spec/app_spec.hpp"

namespace gaia::test {

// A fresh directory ROOT/<name> holding config.jsonnet and main.jsonnet, with an
// AppSpec describing it; ROOT is removed again by the destructor.
class TempApp {
 public:
  explicit TempApp(std::string config = "{ replicas: 2 }", std::string main = default_main(),
                   const std::string& name = "demo") {
    static int counter = 0;
    m_root = std::filesystem::temp_directory_path() /
             ("gaia-render-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(m_root);
    m_dir = m_root / name;
    std::filesystem::create_directories(m_dir);
    m_dir = std::filesystem::canonical(m_dir);
    m_root = std::filesystem::canonical(m_root);
    write("config.jsonnet", config);
    write("main.jsonnet", main);
    write("app.yaml", "name: " + name + "\nversion: 1.2.3\n");
    spec.name = name;
    spec.version = *semver::parse_version("1.2.3");
    spec.dir = m_dir;
    spec.yaml_file = m_dir.string() + "/app.yaml";
  }
  ~TempApp() {
    std::error_code ec;
    std::filesystem::remove_all(m_root, ec);
  }
  TempApp(const TempApp&) = delete;
  TempApp& operator=(const TempApp&) = delete;

  static std::string default_main() {
    return "function(config, deps, app) {\n"
           "  roles: { web: { image: 'nginx:1.25', replicas: config.replicas,\n"
           "                  resources: { cpu: '1', memory: '1Gi' } } },\n"
           "  outputs: {},\n"
           "}\n";
  }

  // Writes `content` to DIR/rel (or ROOT/rel with `in_root`), creating directories.
  std::filesystem::path write(const std::string& rel, const std::string& content, bool in_root = false) {
    auto p = (in_root ? m_root : m_dir) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
    return p;
  }

  const std::filesystem::path& dir() const { return m_dir; }
  const std::filesystem::path& root() const { return m_root; }

  // A request for this app with short limits suitable for tests.
  render::RenderRequest request() const {
    render::RenderRequest r;
    r.spec = &spec;
    r.options.display_dir = "demo";
    return r;
  }

  spec::AppSpec spec;

 private:
  std::filesystem::path m_root;
  std::filesystem::path m_dir;
};

}  // namespace gaia::test
