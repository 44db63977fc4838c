// gaia node add|remove|label|cordon|uncordon: changing the cluster one node at a time.
// Decisions are controllers/node_ops.hpp; each change is an event, and adding capacity
// (add, uncordon, label) retries pending instances at once and says what got placed.
#include <fmt/format.h>

#include <memory>

#include "cli/cluster_view.hpp"
#include "cli/context.hpp"
#include "cli/node_flags.hpp"
#include "cli/propagation_view.hpp"
#include "ops/center_changes.hpp"
#include "ops/runner.hpp"

namespace gaia::cli {

namespace {

struct NodeArgs {
  NodeFlags flags;
  std::string address, instance_subnet, rack, zone, switch_;
  std::vector<std::string> names;
  std::vector<std::string> changes;  // For label: NODE KEY=VAL...
  bool force = false;
  bool overwrite = false;
};

using Decide = std::function<Result<NodeOpOutcome>(const ClusterState&)>;

// Runs a node decision through State::update, then the controllers inline, and returns
// the decision's outcome.
Result<NodeOpOutcome> commit(Session& session, const Decide& decide) {
  NodeOpOutcome outcome;
  auto result = ops::commit_and_reconcile(session.workspace(), [&](const ClusterState& s, Batch& batch) -> Result<void> {
    auto o = decide(s);
    if (!o) return fail(o.error());
    outcome = std::move(*o);
    batch = outcome.batch;
    return {};
  });
  if (!result) return fail(result.error());
  return outcome;
}

int run_add(const Globals& g, CLI::App* cmd, const NodeArgs& a) {
  auto options = generate_options(a.flags);
  if (!options) return report(g, options.error());
  if (!a.address.empty() && a.flags.count != 1)
    return report_error(g, "--address names one node's address", "add one node at a time with --address, or leave it out");
  if (!a.instance_subnet.empty() && a.flags.count != 1)
    return report_error(g, "--instance-subnet is one node's block", "add one node at a time with it, or leave it out");
  for (const auto& [flag, value] : {std::pair{"rack", a.rack}, {"zone", a.zone}, {"switch", a.switch_}})
    if (!value.empty()) options->shape.labels[flag] = value;
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  bool explicit_subnet = cmd->count("--subnet") > 0;
  auto outcome = commit(**session, [&](const ClusterState& s) -> Result<NodeOpOutcome> {
    // Addresses continue in --subnet (by default the one `cluster create` uses) after
    // those the existing nodes hold; --address and --instance-subnet override them.
    auto nodes = generate_nodes(*options, s.snapshot.nodes);
    if (!nodes) {
      std::string hint = explicit_subnet ? "give a larger --subnet" : "give --subnet CIDR (the cluster's subnet) or --address";
      return fail(Diagnostic{{}, "", nodes.error(), hint});
    }
    if (!a.address.empty()) (*nodes)[0].address = a.address;
    if (!a.instance_subnet.empty()) (*nodes)[0].instance_subnet = a.instance_subnet;
    return decide_node_add(s, *nodes);
  });
  if (!outcome) return report(g, outcome.error());
  if (!g.quiet)
    for (const auto& n : outcome->batch.put_nodes)
      fmt::print("node {} added ({}, {})\n", n.name, n.address, n.instance_subnet);
  print_retry(g, *outcome);
  return k_ok;
}

int run_remove(const Globals& g, const NodeArgs& a) {
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  auto outcome = commit(**session, [&](const ClusterState& s) { return decide_node_remove(s, a.names, a.force); });
  if (!outcome) return report(g, outcome.error());
  if (!g.quiet) {
    for (const auto& n : outcome->nodes) fmt::print("node {} removed\n", n);
    if (!outcome->displaced.empty())
      fmt::print("{} instance(s) taken off and requeued: {}\n", outcome->displaced.size(),
                 fmt::join(outcome->displaced, ", "));
  }
  print_retry(g, *outcome);
  return k_ok;
}

int run_label(const Globals& g, const NodeArgs& a) {
  // kubectl style: NODE... KEY=VAL... — the first argument that looks like a change
  // starts the changes.
  std::vector<std::string> names, changes;
  for (const auto& arg : a.changes) {
    bool change = arg.find('=') != std::string::npos || (!arg.empty() && arg.back() == '-');
    (change || !changes.empty() ? changes : names).push_back(arg);
  }
  if (names.empty()) return report_error(g, "no node given", "gaia node label NODE... KEY=VALUE... (KEY- removes)");
  auto edits = parse_label_edits(changes);
  if (!edits) return report(g, edits.error());
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  // The same change as `gaia label set node` (ops/center_changes.hpp): apps that read
  // these labels are re-rendered, and instances whose node no longer fits are moved.
  auto outcome = std::make_shared<NodeOpOutcome>();
  auto change = ops::apply_center_change((*session)->workspace(), ops::node_label_change(names, *edits, a.overwrite, outcome), false);
  if (!change) return report(g, change.error());
  if (!g.quiet) {
    if (!outcome->changed) fmt::print("labels unchanged\n");
    for (const auto& n : outcome->nodes) fmt::print("node {} labeled\n", n);
  }
  print_retry(g, *outcome);
  bool impact = !change->propagation.apps.empty() || !change->placement.empty() || !change->moved.empty();
  if (!g.quiet && impact) fmt::print("{}", format_propagation(g, *change));
  return k_ok;
}

int run_cordon(const Globals& g, const NodeArgs& a, bool cordon) {
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  auto outcome = commit(**session, [&](const ClusterState& s) { return decide_node_cordon(s, a.names, cordon); });
  if (!outcome) return report(g, outcome.error());
  if (!g.quiet) {
    if (!outcome->changed) fmt::print("already {}\n", cordon ? "cordoned" : "uncordoned");
    for (const auto& n : outcome->nodes) fmt::print("node {} {}\n", n, cordon ? "cordoned" : "uncordoned");
  }
  print_retry(g, *outcome);
  return k_ok;
}

}  // namespace

void register_node(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("node", "Add, remove, label, cordon, uncordon, fail and recover nodes");
  cmd->require_subcommand(1);
  cmd->footer(
      "Examples:\n"
      "  gaia node add --nodes 2 --cpu 32 --memory 128Gi\n"
      "  gaia node cordon node-3 && gaia drain node-3\n"
      "  gaia node label node-3 disk=ssd");
  auto a = std::make_shared<NodeArgs>();
  a->flags.count = 1;

  auto* add = cmd->add_subcommand("add", "Add nodes (then retry pending instances)");
  add_node_flags(add, a->flags, true);
  add->add_option("--address", a->address, "The node's address (one node only)");
  add->add_option("--instance-subnet", a->instance_subnet, "The node's instance subnet (one node only)")->type_name("CIDR");
  add->add_option("--rack", a->rack, "Rack label for the new nodes");
  add->add_option("--zone", a->zone, "Zone label for the new nodes");
  add->add_option("--switch", a->switch_, "Switch label for the new nodes");
  add->footer(
      "Examples:\n"
      "  gaia node add --nodes 2 --cpu 32 --memory 128Gi --ssd --rack r4 --name-prefix datanode\n"
      "  gaia node add --address 10.0.0.9 --instance-subnet 10.128.9.0/24");
  add->callback([&g, a, add, code] { *code = run_add(g, add, *a); });

  auto* remove = cmd->add_subcommand("remove", "Remove nodes (refuses while instances run there, unless --force)");
  remove->add_option("NODE", a->names, "Node names")->required();
  remove->add_flag("--force", a->force, "Remove anyway: its instances go back to pending and are retried elsewhere");
  remove->footer("Examples:\n  gaia node remove node-7\n  gaia node remove node-7 node-8 --force     # instances are requeued");
  remove->callback([&g, a, code] { *code = run_remove(g, *a); });

  auto* label = cmd->add_subcommand("label", "Set (KEY=VALUE) or remove (KEY-) node labels");
  label->add_option("ARGS", a->changes, "NODE... then KEY=VALUE or KEY- ...")->required();
  label->add_flag("--overwrite", a->overwrite, "Allow changing the value of an existing label");
  label->footer("Examples:\n  gaia node label node-3 disk=ssd\n  gaia node label node-3 node-4 gpu-model=a100 pool-\n"
                "rack, switch and zone labels also move the node in the topology.");
  label->callback([&g, a, code] { *code = run_label(g, *a); });

  auto* cordon = cmd->add_subcommand("cordon", "Stop placing new instances on nodes (running ones stay)");
  cordon->add_option("NODE", a->names, "Node names")->required();
  cordon->footer("Examples:\n  gaia node cordon node-3\n  gaia node cordon node-3 node-4");
  cordon->callback([&g, a, code] { *code = run_cordon(g, *a, true); });

  auto* uncordon = cmd->add_subcommand("uncordon", "Open cordoned nodes again (then retry pending instances)");
  uncordon->add_option("NODE", a->names, "Node names")->required();
  uncordon->footer("Examples:\n  gaia node uncordon node-3");
  uncordon->callback([&g, a, code] { *code = run_cordon(g, *a, false); });

  register_node_faults(cmd, g, code);
}

}  // namespace gaia::cli
