// gaia init NAME: scaffolds an app spec that validates and renders as it is, so a new
// user starts from something working rather than from an empty directory. Its port is
// allocated from the node's range, so scaffolded apps never compete for one host port.
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "cli/common.hpp"
#include "spec/app_spec.hpp"

namespace gaia::cli {

namespace {

constexpr const char* k_app_yaml = R"(# Identity and dependencies of the app. Reference: docs/spec.md.
name: {name}
version: 0.1.0
description: {name}, scaffolded by gaia init
priority: prod
# dependencies:
#   - name: zookeeper
#     version: "^3.6"
#     as: zk
#     import: [quorum]
outputs: [url]
)";

constexpr const char* k_config = R"(// Parameters of {name}, with their defaults. Values can be overridden with
// `--set key=value`, `--values FILE`, or the config center (gaia.config).
local gaia = import 'gaia.libsonnet';

{{
  replicas: gaia.config('{name}.replicas', 2),
  image: 'nginx:1.25',
  // 0: each instance gets a free port from its node's range (as $GAIA_PORT_HTTP), so
  // instances of any number of apps share a node. A number pins that port on every
  // node instead, and the Kubernetes target needs one: --set port=8080.
  port: 0,
  cpu: '500m',
  memory: '256Mi',
}}
)";

constexpr const char* k_main = R"(// The template: a function of the parameters, the imported outputs of the
// dependencies, and the app's identity, returning roles and outputs.
local gaia = import 'gaia.libsonnet';

function(config, deps, app) {{
  roles: {{
    web: {{
      kind: 'service',
      image: config.image,
      replicas: config.replicas,
      resources: {{ cpu: config.cpu, memory: config.memory }},
      ports: [{{ name: 'http', port: config.port }}],
      health: {{ type: 'tcp', target: 'http' }},
      migration: {{ min_available: 1 }},
    }},
  }},
  // With an allocated port the url names the service only: a dependent finds each
  // instance's address and port in $GAIA_DEP_<APP>_WEB_HTTP.
  outputs: {{
    local host = gaia.serviceName(app.name, 'web', app.tenant),
    url: if config.port == 0 then 'http://%s' % host else 'http://%s:%d' % [host, config.port],
  }},
}}
)";

int run_init(const Globals& g, const std::string& name, const std::string& dir_opt, bool force) {
  if (!spec::is_dns_label(name))
    return report_error(g, fmt::format("'{}' is not a valid app name", name),
                        "use 1-63 lowercase letters, digits and '-', starting and ending with a letter or digit");
  std::filesystem::path dir = dir_opt.empty() ? std::filesystem::path(name) : std::filesystem::path(dir_opt);
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    if (!std::filesystem::is_directory(dir, ec))
      return report_error(g, fmt::format("{} exists and is not a directory", dir.string()), "choose another --dir");
    if (!std::filesystem::is_empty(dir, ec) && !force)
      return report_error(g, fmt::format("{} exists and is not empty", dir.string()),
                          "choose another --dir, or pass --force to overwrite app.yaml, config.jsonnet and main.jsonnet");
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) return report_error(g, fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  struct File { const char* name; const char* tmpl; };
  for (File f : {File{"app.yaml", k_app_yaml}, File{"config.jsonnet", k_config}, File{"main.jsonnet", k_main}}) {
    std::ofstream out(dir / f.name, std::ios::binary | std::ios::trunc);
    out << fmt::format(fmt::runtime(f.tmpl), fmt::arg("name", name));
    if (!out) return report_error(g, fmt::format("cannot write {}", (dir / f.name).string()));
  }
  if (!g.quiet) {
    std::printf("created %s/ with app.yaml, config.jsonnet, main.jsonnet\n", dir.string().c_str());
    std::printf("next: gaia validate %s && gaia render %s\n", dir.string().c_str(), dir.string().c_str());
  }
  return k_ok;
}

}  // namespace

void register_init(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("init", "Scaffold a new app spec that validates and renders");
  cmd->footer("Examples:\n  gaia init my-service\n  gaia init my-service --dir specs/my-service");
  auto name = std::make_shared<std::string>();
  auto dir = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  cmd->add_option("NAME", *name, "App name (a DNS label)")->required();
  cmd->add_option("--dir", *dir, "Directory to create (default: ./NAME)");
  cmd->add_flag("--force", *force, "Overwrite the three spec files in a non-empty directory");
  cmd->callback([&g, code, name, dir, force] { *code = run_init(g, *name, *dir, *force); });
}

}  // namespace gaia::cli
