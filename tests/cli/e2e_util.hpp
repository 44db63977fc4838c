#pragma once
// Helpers for the end-to-end tests of the gaia binary: building small app specs in a
// scratch directory, copying the examples next to them, and making outputs comparable
// with golden files (the scratch directory's path differs on every run, so it is
// replaced by "<scratch>").

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "tests/cli/run_util.hpp"
#include "tests/golden_util.hpp"

namespace gaia::test {

// Copies the repository's examples/ into `s` as `examples/`, so commands can name them
// with a relative path and their messages do not depend on where the source tree is.
inline void copy_examples(const Scratch& s) {
  std::filesystem::copy(examples_dir(), s.dir() / "examples", std::filesystem::copy_options::recursive);
}

// A minimal valid main.jsonnet: one role, no outputs.
inline std::string one_role_main() {
  return "function(config, deps, app) {\n"
         "  roles: { web: { image: 'nginx:1.25', resources: { cpu: '1', memory: '1Gi' } } },\n"
         "  outputs: {},\n"
         "}\n";
}

// Writes an app directory `dir` (relative to the scratch dir) with the three spec
// files. `deps_yaml` is appended to app.yaml verbatim (e.g. a dependencies: block).
inline void write_app(const Scratch& s, const std::string& dir, const std::string& name, const std::string& version,
                      const std::string& deps_yaml = "", const std::string& config = "{}\n",
                      const std::string& main = one_role_main()) {
  s.write(dir + "/app.yaml", "name: " + name + "\nversion: " + version + "\n" + deps_yaml);
  s.write(dir + "/config.jsonnet", config);
  s.write(dir + "/main.jsonnet", main);
}

// An app whose main.jsonnet has `prelude` before the function and returns one output x
// whose value is `expr`: the shape used for hostile templates.
inline void write_output_app(const Scratch& s, const std::string& dir, const std::string& prelude,
                             const std::string& expr) {
  std::string name = std::filesystem::path(dir).filename().string();
  write_app(s, dir, name, "1.0.0", "outputs: [x]\n", "{}\n",
            prelude + "\nfunction(config, deps, app) { roles: {}, outputs: { x: " + expr + " } }\n");
}

inline void replace_all(std::string& text, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// Replaces the scratch directory (as given and with symbolic links resolved, since the
// spec repository reports canonical paths) by "<scratch>".
inline std::string normalise(const Scratch& s, std::string text) {
  std::error_code ec;
  std::string canonical = std::filesystem::weakly_canonical(s.dir(), ec).string();
  std::string given = s.dir().string();
  if (canonical.size() >= given.size()) {
    replace_all(text, canonical, "<scratch>");
    replace_all(text, given, "<scratch>");
  } else {
    replace_all(text, given, "<scratch>");
    replace_all(text, canonical, "<scratch>");
  }
  return text;
}

// Runs gaia in `s`, expects exit code `code` and compares the normalised stderr with
// tests/golden/cli/<name>.err. Returns the result for further checks.
inline RunResult expect_error_golden(const Scratch& s, const std::string& name, const std::vector<std::string>& args,
                                     int code = 1) {
  RunResult r = s.gaia(args);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.code == code);
  check_golden("cli/" + name + ".err", normalise(s, r.err));
  return r;
}

}  // namespace gaia::test
