// gaia migrate INSTANCE [--to NODE], gaia drain NODE, gaia node fail|recover NODE: moving
// instances between nodes. The decisions are controllers/migrate.hpp (one explicit
// move) and controllers/migration.hpp (the node change; the migration controller does
// the moves). Each command commits its own change, then runs the controllers inline
// and prints where every instance went. --dry-run computes the same thing on the
// loaded state (the change applied in memory, then reconcile()) and writes nothing.
#include <fmt/format.h>

#include "controllers/controller_options.hpp"
#include "cli/controller_loop.hpp"
#include "cli/migration_view.hpp"
#include "controllers/migrate.hpp"
#include "lib/instance_ref.hpp"
#include "lib/timeline.hpp"
#include "ops/runner.hpp"

namespace gaia::cli {

namespace {

struct MigrateArgs {
  std::string instance, to;
  bool force = false;
  bool dry_run = false;
  std::string output = "text";
};

struct NodeCmdArgs {
  std::string node;
  bool dry_run = false;
  bool wait = false;
  bool move_stateful = false;
  std::string timeout = "5m";
  std::string output = "text";
};

std::string migrate_text(const Globals& g, const MigrateOutcome& m, bool dry_run) {
  std::string out = fmt::format("{} {} {}to {}", dry_run ? "would move" : "moved", m.instance,
                                m.from.empty() ? "" : "from " + m.from + " ", m.to);
  if (!m.address.empty()) out += fmt::format(" ({})", m.address);
  out += fmt::format("; migration {} of {}\n", m.migrations, m.migrate_times);
  if (!m.copied_volumes.empty()) out += fmt::format("  volumes copied: {}\n", fmt::join(m.copied_volumes, ", "));
  if (!m.dropped_volumes.empty())
    out += fmt::format("  {} volumes left on the down node, starting empty: {}\n", red(g, stdout, "data loss:"),
                       fmt::join(m.dropped_volumes, ", "));
  if (!m.locality.empty()) out += fmt::format("  locality: {}\n", m.locality);
  for (const auto& p : m.preempted)
    out += fmt::format("  {} {} on {} (requeued)\n", yellow(g, stdout, dry_run ? "would preempt" : "preempted"), p.victim,
                       p.node);
  return out;
}

nlohmann::json migrate_json(const MigrateOutcome& m, bool dry_run) {
  nlohmann::json j{{"instance", m.instance}, {"from", m.from},   {"to", m.to},
                   {"address", m.address},   {"dry_run", dry_run}, {"migrations", m.migrations},
                   {"migrate_times", m.migrate_times}};
  j["copied_volumes"] = m.copied_volumes;
  j["dropped_volumes"] = m.dropped_volumes;
  if (!m.locality.empty()) j["locality"] = m.locality;
  j["preempted"] = nlohmann::json::array();
  for (const auto& p : m.preempted) j["preempted"].push_back({{"victim", p.victim}, {"node", p.node}});
  return j;
}

int run_migrate(const Globals& g, const MigrateArgs& a) {
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  std::string key = instance_key_from_ref(a.instance, g.tenant);
  MigrateRequest req{key, a.to.empty() ? std::nullopt : std::optional<std::string>(a.to), a.force};
  int64_t now = to_millis(s.clock.now());
  auto check = [&](const ClusterState& st) -> Result<void> {
    Diagnostics errors;
    if (auto d = unknown_instance(st, a.instance, key)) errors.push_back(*d);
    if (req.to)
      if (auto d = unknown_node(st, *req.to, "--to")) errors.push_back(*d);
    if (!errors.empty()) return fail(errors);
    return {};
  };
  bool json = a.output == "json";
  if (a.dry_run) {
    auto st = s.state->load();
    if (!st) return report(g, st.error());
    if (auto c = check(*st); !c) return report(g, c.error());
    auto m = plan_migrate(*st, req, now);
    if (!m) return report(g, m.error());
    if (json) std::printf("%s\n", migrate_json(*m, true).dump(2).c_str());
    else if (!g.quiet) std::fputs(migrate_text(g, *m, true).c_str(), stdout);
    if (!json) print_dry_run_note(g);
    return k_ok;
  }
  MigrateOutcome m;
  // Victims of a preemption go back to the queue; the scheduler controller, run inline
  // after the move, re-places them.
  auto committed = ops::commit_and_reconcile(s.workspace(), [&](const ClusterState& st, Batch& b) -> Result<void> {
    if (auto c = check(st); !c) return c;
    auto r = plan_migrate(st, req, now);
    if (!r) return fail(r.error());
    m = std::move(*r);
    b = m.batch;
    return {};
  });
  if (!committed) return report(g, committed.error());
  if (json) {
    auto j = migrate_json(m, false);
    j["op"] = s.op;
    std::printf("%s\n", j.dump(2).c_str());
    return k_ok;
  }
  if (!g.quiet) {
    std::fputs(migrate_text(g, m, false).c_str(), stdout);
    print_controller_events(g, committed->controllers.outcome.batch);
    fmt::print("operation {} (see `gaia events --op {}`)\n", s.op, s.op);
  }
  return k_ok;
}

using NodeChangeDecider = Result<NodeChange> (*)(const ClusterState&, const NodeCmdArgs&);

Result<NodeChange> decide_drain_cmd(const ClusterState& st, const NodeCmdArgs& a) { return decide_drain(st, a.node); }
Result<NodeChange> decide_fail_cmd(const ClusterState& st, const NodeCmdArgs& a) {
  return decide_node_fail(st, a.node, a.move_stateful);
}
Result<NodeChange> decide_recover_cmd(const ClusterState& st, const NodeCmdArgs& a) {
  return decide_node_recover(st, a.node);
}

// Instances still on the node and why, for a drain that has not finished.
std::string format_drain_blockers(const std::vector<DrainBlocker>& blockers) {
  std::string out;
  for (const auto& b : blockers) out += fmt::format("  {}: {}\n", b.instance, b.reason);
  return out;
}

bool drained(const ClusterState& st, const std::string& node) {
  const Node* n = st.find_node(node);
  return n && !n->draining && drain_blockers(st, node).empty();
}

// The shared flow of drain, node fail and node recover: validate, decide, then either
// report the what-if (dry run) or commit, run the controllers and report the same.
int run_node_change(const Globals& g, const NodeCmdArgs& a, NodeChangeDecider decide, const std::string& what) {
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  bool json = a.output == "json";
  ControllerContext ctx{to_millis(s.clock.now()), {}};
  auto checked = [&](const ClusterState& st) -> Result<NodeChange> {
    if (auto d = unknown_node(st, a.node)) return fail(*d);
    return decide(st, a);
  };
  if (a.dry_run) {
    auto st = s.state->load();
    if (!st) return report(g, st.error());
    auto change = checked(*st);
    if (!change) return report(g, change.error());
    // The options `gaia sim options` stored, as the real run reads them.
    ctx.options = stored_controller_options(*st);
    WhatIf w = what_if(*st, change->batch, ctx);
    // A repeated drain shows what the running drain still has to do.
    if (!change->changed && what == "drain") w = report_moves(*st, {a.node}, w.outcome.after, w.outcome.batch);
    if (json) {
      auto j = moves_json(w);
      j["node"] = a.node;
      j["dry_run"] = true;
      j["changed"] = change->changed;
      std::printf("%s\n", j.dump(2).c_str());
      return k_ok;
    }
    if (!g.quiet) {
      if (!change->changed) fmt::print("{}\n", change->note);
      std::fputs(format_moves(g, w, fmt::format("{} {} would move its instances:", what, a.node)).c_str(), stdout);
      if (!change->dropped.empty())
        fmt::print("{} {} instance(s) would start elsewhere with empty volumes: {}\n", red(g, stdout, "data loss:"),
                   change->dropped.size(), fmt::join(change->dropped, ", "));
    }
    print_dry_run_note(g);
    return k_ok;
  }

  NodeChange change;
  ClusterState before;
  auto committed = ops::commit_and_reconcile(s.workspace(), [&](const ClusterState& st, Batch& b) -> Result<void> {
    auto r = checked(st);
    if (!r) return fail(r.error());
    change = std::move(*r);
    before = st;
    b = change.batch;
    return {};
  });
  if (!committed) return report(g, committed.error());
  ClusterState after = *committed->controllers.state;
  Batch batch = committed->controllers.outcome.batch;
  bool done = true;
  if (a.wait && !drained(after, a.node)) {
    FollowOptions fo;
    auto timeout = parse_duration(a.timeout);
    if (!timeout) return report(g, timeout.error());
    fo.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*timeout);
    fo.print = !json && !g.quiet;
    auto f = follow_controllers(g, s, [&](const ClusterState& st) { return drained(st, a.node); }, fo);
    if (!f) return report(g, f.error());
    done = f->done;
    after = f->state;
  }
  WhatIf w = report_moves(before, {a.node}, after, batch);
  if (json) {
    auto j = moves_json(w);
    j["node"] = a.node;
    j["changed"] = change.changed;
    j["op"] = s.op;
    std::printf("%s\n", j.dump(2).c_str());
  } else if (!g.quiet) {
    if (!change.changed) fmt::print("{}\n", change.note);
    print_controller_events(g, change.batch);
    if (what != "recover") std::fputs(format_moves(g, w, fmt::format("{} {}:", what, a.node)).c_str(), stdout);
    else print_controller_events(g, batch);
    if (what == "drain" && drained(after, a.node))
      fmt::print("{} node {} is empty; it stays cordoned (`gaia node uncordon {}` opens it again)\n",
                 green(g, stdout, "drained:"), a.node, a.node);
    fmt::print("operation {} (see `gaia events --op {}`)\n", s.op, s.op);
  }
  if (what == "drain") {
    auto blockers = drain_blockers(after, a.node);
    if (!blockers.empty() && !json) {
      std::FILE* to = done && !a.wait ? stdout : stderr;
      if (!g.quiet || to == stderr) {
        std::fprintf(to, "%s %zu instance(s) still on %s:\n", yellow(g, to, "note:").c_str(), blockers.size(),
                     a.node.c_str());
        std::fputs(format_drain_blockers(blockers).c_str(), to);
      }
    }
    if (a.wait && !done) {
      report_error(g, fmt::format("node {} is not drained after {}", a.node, a.timeout),
                   "the instances above cannot move yet; free capacity, raise migrate_times, or lower min_available");
      return k_error;
    }
  }
  return k_ok;
}

}  // namespace

void register_migrate(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("migrate", "Move one instance to another node (explaining a refusal)");
  cmd->footer(
      "Examples:\n"
      "  gaia migrate 0.web.web.default                # the scheduler picks another node\n"
      "  gaia migrate web/web/0 --to node-7 --dry-run  # would it fit there? why not?\n"
      "  gaia migrate 1.datanode.hdfs.default --force  # its node is down: start elsewhere, volume data lost\n"
      "A move counts against the role's migrate_times; a stateful instance's volumes are copied to the new node.\n"
      "Exit codes: 0 moved, 1 refused (with the reason; store unchanged).");
  auto a = std::make_shared<MigrateArgs>();
  cmd->add_option("INSTANCE", a->instance, "Instance key, DNS name, or app/role/ordinal")->required();
  cmd->add_option("--to", a->to, "Only this node")->type_name("NODE");
  cmd->add_flag("--force", a->force,
                "Move even when migrate_times is spent, or when its volume is on a down node (the data is lost)");
  cmd->add_flag("--dry-run", a->dry_run, "Print the move (and any preemption); write nothing");
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([&g, code, a] { *code = run_migrate(g, *a); });
}

void register_drain(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("drain", "Cordon a node and move everything off it, keeping each role's min_available");
  cmd->footer(
      "Examples:\n"
      "  gaia drain node-3 --dry-run   # where each instance would land, what would be preempted, data locality\n"
      "  gaia drain node-3 --wait      # until the node is empty\n"
      "The node stays cordoned afterwards: `gaia node uncordon node-3` opens it again (and cancels a running drain).\n"
      "Exit codes: 0 ok (instances that cannot move yet are listed), 1 error or --wait timed out.");
  auto a = std::make_shared<NodeCmdArgs>();
  cmd->add_option("NODE", a->node, "Node name")->required();
  cmd->add_flag("--dry-run", a->dry_run, "Print where each instance would go; write nothing");
  cmd->add_flag("--wait", a->wait, "Wait until the node is empty");
  cmd->add_option("--timeout", a->timeout, "How long --wait waits (e.g. 30s, 5m)")->capture_default_str();
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([&g, code, a] { *code = run_node_change(g, *a, &decide_drain_cmd, "drain"); });
}

void register_node_faults(CLI::App* node, Globals& g, int* code) {
  auto a = std::make_shared<NodeCmdArgs>();
  auto* fail_cmd = node->add_subcommand("fail", "Mark a node down (sim): its instances are requeued elsewhere");
  fail_cmd->footer(
      "Examples:\n"
      "  gaia node fail node-3 --dry-run        # where its instances would land, what would be preempted\n"
      "  gaia node fail node-3\n"
      "  gaia node fail node-3 --move-stateful  # stateful instances start elsewhere with EMPTY volumes\n"
      "Without --move-stateful, a stateful instance whose volume is on the node waits for `gaia node recover`.\n"
      "Moves caused by a failure do not count against migrate_times.");
  fail_cmd->add_option("NODE", a->node, "Node name")->required();
  fail_cmd->add_flag("--dry-run", a->dry_run, "Print where each instance would go; write nothing");
  fail_cmd->add_flag("--move-stateful", a->move_stateful,
                     "Also move stateful instances, dropping their volumes on the node (data loss)");
  fail_cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  fail_cmd->callback([&g, code, a] { *code = run_node_change(g, *a, &decide_fail_cmd, "fail"); });

  auto r = std::make_shared<NodeCmdArgs>();
  auto* recover = node->add_subcommand("recover", "Mark a down node ready again (sim); what waited for it returns");
  recover->footer(
      "Examples:\n  gaia node recover node-3\n"
      "A node that was draining comes back cordoned and the drain goes on.");
  recover->add_option("NODE", r->node, "Node name")->required();
  recover->add_option("-o,--output", r->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  recover->callback([&g, code, r] { *code = run_node_change(g, *r, &decide_recover_cmd, "recover"); });
}

}  // namespace gaia::cli
