// gaia delete APP [--cascade] [--dry-run]: removes an app and its instances. Refuses while
// other apps depend on it (naming them); --cascade deletes the dependents first. The
// freed capacity is offered to pending instances in the same transaction. --dry-run
// prints the same decision and writes nothing.
#include <fmt/format.h>

#include "cli/context.hpp"
#include "controllers/app_delete.hpp"
#include "ops/runner.hpp"

namespace gaia::cli {

namespace {

// ", and 4 kept volume(s)": the data earlier scale downs kept goes with the app.
std::string kept_text(const DeletedApp& d) {
  return d.kept_volumes == 0 ? "" : fmt::format(", and {} kept volume(s) with their data", d.kept_volumes);
}

struct DeleteArgs {
  std::vector<std::string> args;  // APP, or kubectl-style "app APP".
  std::string tenant;
  bool cascade = false;
  bool dry_run = false;
  std::string output = "text";
};

int run_delete(const Globals& g, const DeleteArgs& a) {
  std::vector<std::string> names = a.args;
  if (names.size() >= 2 && (names[0] == "app" || names[0] == "apps")) names.erase(names.begin());
  if (names.size() != 1)
    return report_error(g, fmt::format("delete takes one app name, got {}", names.size()),
                        "gaia delete APP [--cascade]; `gaia get apps` lists them");
  std::string name = names[0];
  std::string tenant = a.tenant.empty() ? g.tenant : a.tenant;
  if (auto slash = name.find('/'); slash != std::string::npos) {  // "tenant/app"
    tenant = name.substr(0, slash);
    name = name.substr(slash + 1);
  }
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  DeleteOutcome out;
  if (a.dry_run) {
    // The same decision on the state as it is now, never committed, and no controller
    // run: the store's revision does not move.
    auto state = s.state->load();
    if (!state) return report(g, state.error());
    auto d = plan_delete(*state, tenant, name, a.cascade);
    if (!d) return report(g, d.error());
    out = std::move(*d);
  } else {
    auto committed = ops::commit_and_reconcile(s.workspace(), [&](const ClusterState& st, Batch& b) -> Result<void> {
      auto d = plan_delete(st, tenant, name, a.cascade);
      if (!d) return fail(d.error());
      out = std::move(*d);
      b = out.batch;
      return {};
    });
    if (!committed) return report(g, committed.error());
  }

  if (a.output == "json") {
    nlohmann::json deleted = nlohmann::json::array(), placed = nlohmann::json::array(),
                   pending = nlohmann::json::array();
    for (const auto& d : out.deleted)
      deleted.push_back({{"tenant", d.tenant},
                         {"name", d.name},
                         {"version", d.version},
                         {"instances", d.instances},
                         {"kept_volumes_deleted", d.kept_volumes}});
    for (const auto& r : out.rescheduled.others) {
      for (const auto& p : r.placed) placed.push_back({{"instance", p.instance}, {"node", p.node}, {"address", p.address}});
      for (const auto& p : r.pending) pending.push_back({{"instance", p.instance}, {"reason", p.reason}});
    }
    nlohmann::json j = {{"deleted", deleted}, {"placed", placed}, {"still_pending", pending}, {"op", s.op}};
    if (a.dry_run) {
      j["dry_run"] = true;
      j.erase("op");  // Nothing was written under it.
    }
    std::printf("%s\n", j.dump(2).c_str());
    return k_ok;
  }
  if (g.quiet && !a.dry_run) return k_ok;
  for (const auto& d : out.deleted) {
    if (a.dry_run) {
      // A dry run is asked for to see exactly what would go, so it names every instance.
      std::printf("%s %s %s (tenant %s): %zu instance(s)%s\n", red(g, stdout, "would delete").c_str(), d.name.c_str(),
                  d.version.c_str(), d.tenant.c_str(), d.instances.size(), kept_text(d).c_str());
      for (const auto& i : d.instances) std::printf("  %s\n", i.c_str());
    } else {
      std::printf("%s %s %s (tenant %s): %zu instance(s) removed%s\n", red(g, stdout, "deleted").c_str(),
                  d.name.c_str(), d.version.c_str(), d.tenant.c_str(), d.instances.size(), kept_text(d).c_str());
    }
  }
  std::vector<std::string> still;
  for (const auto& r : out.rescheduled.others) {
    for (const auto& p : r.placed)
      std::printf("%s %s on %s (freed capacity)\n", green(g, stdout, a.dry_run ? "would place" : "placed").c_str(),
                  p.instance.c_str(), p.node.c_str());
    for (const auto& p : r.pending) still.push_back(fmt::format("  {}: {}", p.instance, p.reason));
  }
  if (!still.empty()) {
    std::printf("%zu instance(s) %s pending:\n", still.size(), a.dry_run ? "would stay" : "still");
    for (const auto& l : still) std::printf("%s\n", l.c_str());
  }
  if (a.dry_run) std::printf("dry run: nothing was written\n");
  return k_ok;
}

}  // namespace

void register_delete(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("delete", "Delete an app and its instances (refuses while other apps depend on it)");
  cmd->footer(
      "Examples:\n"
      "  gaia delete web\n"
      "  gaia delete zookeeper --cascade     # its dependents first (reverse dependency order)\n"
      "  gaia delete shop/web                # tenant/app\n"
      "  gaia delete zookeeper --cascade --dry-run   # what would be deleted; writes nothing");
  auto a = std::make_shared<DeleteArgs>();
  cmd->add_option("APP", a->args, "App name (or tenant/app)")->required();
  cmd->add_option("--tenant", a->tenant, "Tenant of the app (default: the global --tenant)")->type_name("TENANT")
      ->check(tenant_validator());
  cmd->add_flag("--cascade", a->cascade, "Also delete the apps that depend on it, dependents first");
  cmd->add_flag("--dry-run", a->dry_run, "Show what would be deleted (and placed on the freed capacity); write nothing");
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([&g, code, a] { *code = run_delete(g, *a); });
}

}  // namespace gaia::cli
