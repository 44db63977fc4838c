// gaia export RELEASE --to TENANT [--revoke TENANT]: lets apps of other tenants bind to a
// release (`tenant:` in their app.yaml), or takes that back. A revoke is refused while an
// app of that tenant is bound to the release.
#include <fmt/format.h>

#include "cli/context.hpp"
#include "controllers/app_export.hpp"
#include "spec/app_spec.hpp"

namespace gaia::cli {

namespace {

struct ExportArgs {
  std::string name;
  std::string tenant;
  std::vector<std::string> to, revoke;
  std::string output = "text";
};

int run_export(const Globals& g, const ExportArgs& a) {
  ExportRequest req;
  req.tenant = a.tenant.empty() ? g.tenant : a.tenant;
  req.name = a.name;
  if (auto slash = req.name.find('/'); slash != std::string::npos) {  // "tenant/release"
    req.tenant = req.name.substr(0, slash);
    req.name = req.name.substr(slash + 1);
  }
  req.to = a.to;
  req.revoke = a.revoke;
  Diagnostics bad;
  for (const auto* list : {&req.to, &req.revoke})
    for (const auto& t : *list)
      if (std::string problem = t == "*" ? "" : spec::dns_label_problem(t); !problem.empty())
        bad.push_back({{}, "", fmt::format("'{}' is not a tenant name: {}", t, problem),
                       "tenant names are DNS labels (a-z, 0-9 and '-'), or '*' for every tenant"});
  if (!bad.empty()) return report(g, bad);
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  ExportOutcome out;
  auto committed = s.state->update(s.op, [&](const ClusterState& st, Batch& b) -> Result<void> {
    auto decided = plan_export(st, req);
    if (!decided) return fail(decided.error());
    out = std::move(*decided);
    b = out.batch;
    return {};
  });
  if (!committed) return report(g, committed.error());
  bool changed = !out.added.empty() || !out.removed.empty();
  if (a.output == "json") {
    nlohmann::json j = {{"tenant", req.tenant}, {"name", req.name},       {"exports", out.exports},
                        {"added", out.added},   {"removed", out.removed}, {"changed", changed}};
    if (changed) j["op"] = s.op;
    std::printf("%s\n", j.dump(2).c_str());
    return k_ok;
  }
  if (g.quiet) return k_ok;
  if (!out.added.empty()) fmt::print("release {} (tenant {}) exported to {}\n", req.name, req.tenant, fmt::join(out.added, ", "));
  if (!out.removed.empty())
    fmt::print("release {} (tenant {}) no longer exported to {}\n", req.name, req.tenant, fmt::join(out.removed, ", "));
  if (!changed) fmt::print("no changes: release {} (tenant {}) is exported to {}\n", req.name, req.tenant,
                           out.exports.empty() ? "no tenant" : fmt::format("{}", fmt::join(out.exports, ", ")));
  else fmt::print("operation {} (see `gaia events --op {}`)\n", s.op, s.op);
  return k_ok;
}

}  // namespace

void register_export(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("export", "Let apps of other tenants bind to a release, or take that back");
  cmd->footer(
      "Examples:\n"
      "  gaia export hdfs --tenant shared --to analytics   # analytics' apps may bind with tenant: shared\n"
      "  gaia export shared/hdfs --to '*'                  # every tenant\n"
      "  gaia export hdfs --tenant shared --revoke analytics\n"
      "A revoke is refused while an app of that tenant is bound to the release. Exit codes: 0 done (or nothing "
      "to change), 1 error.");
  auto a = std::make_shared<ExportArgs>();
  cmd->add_option("RELEASE", a->name, "The release (or TENANT/RELEASE)")->required();
  cmd->add_option("--tenant", a->tenant, "Tenant of the release (default: the global --tenant)")->type_name("TENANT");
  cmd->add_option("--to", a->to, "Tenant that may bind to it ('*': every tenant); repeatable")->type_name("TENANT");
  cmd->add_option("--revoke", a->revoke, "Tenant to take it back from; repeatable")->type_name("TENANT");
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([&g, a, code] { *code = run_export(g, *a); });
}

}  // namespace gaia::cli
