// gaia endpoints APP[/ROLE]: what an app's names resolve to (docs/cli.md). Each
// instance is registered as <ordinal>.<role>.<app>.<tenant>.gaia, and each role as
// <role>.<app>.<tenant>.gaia (resolving to all its running instances), with the address
// from the node's instance subnet, the host ports allocated from the node's range, and
// the node.
#include <fmt/format.h>

#include <algorithm>

#include "cli/context.hpp"
#include "cli/table.hpp"

namespace gaia::cli {

namespace {

struct EndpointsArgs {
  std::string target;  // APP or APP/ROLE
  std::string tenant;
  std::string output = "text";
};

std::string ports_text(const Instance& i, const Role* role) {
  std::vector<std::string> parts;
  for (const auto& [name, host] : i.ports) {
    int container = 0;
    if (role)
      for (const auto& p : role->ports)
        if (p.name == name) container = p.port;
    parts.push_back(container > 0 && container != host ? fmt::format("{}={}->{}", name, host, container)
                                                       : fmt::format("{}={}", name, host));
  }
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, ","));
}

int run_endpoints(const Globals& g, const EndpointsArgs& a) {
  std::string tenant = a.tenant.empty() ? g.tenant : a.tenant;
  std::string app = a.target, role_filter;
  if (auto slash = app.find('/'); slash != std::string::npos) {
    role_filter = app.substr(slash + 1);
    app = app.substr(0, slash);
  }
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  auto st = (*session)->state->load();
  if (!st) return report(g, st.error());
  const AppRecord* rec = st->find_app(tenant, app);
  if (!rec) {
    std::vector<std::string> names;
    for (const auto& [id, x] : st->apps)
      if (x.tenant == tenant) names.push_back(x.name);
    return report_error(g, fmt::format("no app named '{}' in tenant '{}'", app, tenant),
                        names.empty() ? "nothing is deployed in this tenant; `gaia submit DIR` deploys an app"
                                      : fmt::format("apps: {}", fmt::join(names, ", ")));
  }
  std::vector<const Role*> roles;
  for (const auto& r : rec->workload.roles)
    if (role_filter.empty() || r.name == role_filter) roles.push_back(&r);
  if (roles.empty()) {
    std::vector<std::string> names;
    for (const auto& r : rec->workload.roles) names.push_back(r.name);
    return report_error(g, fmt::format("app {} has no role '{}'", app, role_filter),
                        fmt::format("roles: {}", fmt::join(names, ", ")));
  }

  std::vector<const Instance*> instances;
  for (const auto& i : st->snapshot.instances)
    if (i.tenant == tenant && i.app == app) instances.push_back(&i);
  std::sort(instances.begin(), instances.end(), [](const Instance* x, const Instance* y) {
    return std::tie(x->role, x->ordinal) < std::tie(y->role, y->ordinal);
  });

  nlohmann::json jroles = nlohmann::json::array();
  Table t({"NAME", "ADDRESS", "PORTS", "NODE", "STATE"});
  std::vector<std::pair<std::string, std::vector<std::string>>> role_names;
  for (const Role* r : roles) {
    std::string role_name = fmt::format("{}.{}.{}.gaia", r->name, app, tenant);
    std::vector<std::string> addresses;
    nlohmann::json jinst = nlohmann::json::array();
    for (const Instance* i : instances) {
      if (i->role != r->name) continue;
      bool running = i->state == InstanceState::Running && !i->address.empty();
      if (running) addresses.push_back(i->address);
      t.add_row({i->dns_name(), i->address.empty() ? "<none>" : i->address, ports_text(*i, r),
                 i->node.empty() ? "<pending>" : i->node, std::string(instance_state_name(i->state))});
      jinst.push_back({{"name", i->dns_name()},
                       {"instance", i->key()},
                       {"address", i->address},
                       {"ports", i->ports},
                       {"node", i->node},
                       {"state", std::string(instance_state_name(i->state))}});
    }
    role_names.emplace_back(role_name, addresses);
    jroles.push_back({{"role", r->name}, {"name", role_name}, {"addresses", addresses}, {"instances", jinst}});
  }

  if (a.output == "json") {
    nlohmann::json j = {{"tenant", tenant}, {"app", app}, {"version", rec->version}, {"roles", jroles}};
    std::printf("%s\n", j.dump(2).c_str());
    return k_ok;
  }
  std::fputs(t.render(table_options_for(stdout)).c_str(), stdout);
  std::printf("\n");
  Table names({"ROLE NAME", "RESOLVES TO"});
  for (const auto& [name, addresses] : role_names)
    names.add_row({name, addresses.empty() ? "<no running instance>" : fmt::format("{}", fmt::join(addresses, ","))});
  std::fputs(names.render(table_options_for(stdout)).c_str(), stdout);
  return k_ok;
}

}  // namespace

void register_endpoints(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("endpoints", "List the names an app's instances are registered under, with addresses and ports");
  cmd->footer(
      "Examples:\n"
      "  gaia endpoints zookeeper\n"
      "  gaia endpoints hdfs/datanode -o json\n"
      "Names: <ordinal>.<role>.<app>.<tenant>.gaia per instance, <role>.<app>.<tenant>.gaia per role.");
  auto a = std::make_shared<EndpointsArgs>();
  cmd->add_option("APP", a->target, "APP or APP/ROLE")->required();
  cmd->add_option("--tenant", a->tenant, "Tenant of the app (default: the global --tenant)")->type_name("TENANT")
      ->check(tenant_validator());
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([&g, code, a] { *code = run_endpoints(g, *a); });
}

}  // namespace gaia::cli
