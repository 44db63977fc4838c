// gaia cluster create|show: the embedded cluster as a whole. `create` lays the nodes out
// from flags or reads a cluster file (spec/cluster_file.hpp), then commits nodes,
// tenants and the scheduler profile in one transaction and retries pending instances.
#include <fmt/format.h>

#include <memory>
#include <set>

#include "cli/agent_control.hpp"
#include "cli/cluster_view.hpp"
#include "cli/context.hpp"
#include "cli/node_flags.hpp"
#include "cli/table.hpp"
#include "lib/codec.hpp"
#include "lib/quantity.hpp"
#include "process/cgroup.hpp"
#include "process/preflight.hpp"
#include "spec/cluster_file.hpp"

namespace gaia::cli {

namespace {

struct CreateArgs {
  std::string file;
  std::string name;
  std::string strategy;
  bool replace = false;
  std::string backend;  // Empty: the context's.
  bool no_agent = false;
  NodeFlags nodes;
};


struct ShowArgs {
  std::string output;
};

std::string topology_summary(const std::vector<Node>& nodes) {
  std::set<std::string> zones, racks, switches;
  for (const auto& n : nodes) {
    if (!n.zone.empty()) zones.insert(n.zone);
    if (!n.rack.empty()) racks.insert(n.zone + "/" + n.rack);
    if (!n.switch_.empty()) switches.insert(n.zone + "/" + n.switch_);
  }
  return fmt::format("{} zone(s), {} rack(s), {} switch(es)", zones.size(), racks.size(), switches.size());
}

Resources total_capacity(const std::vector<Node>& nodes) {
  Resources r;
  for (const auto& n : nodes) {
    r.cpu_millis += n.capacity.cpu_millis;
    r.memory_bytes += n.capacity.memory_bytes;
    r.gpu += n.capacity.gpu;
    r.disk_bytes += n.capacity.disk_bytes;
  }
  return r;
}

int run_create(const Globals& g, CLI::App* cmd, const CreateArgs& a) {
  ClusterSpec spec;
  // --backend, else the context's: known before the nodes are laid out, since a process
  // cluster's default subnet is loopback.
  auto context = resolve_context(g);
  if (!context) return report(g, context.error());
  const std::string backend = a.backend.empty() ? context->backend : a.backend;
  if (auto known = check_backend_name(backend); !known) return report(g, known.error());
  std::string kube_summary, kube_owner;
  std::unique_ptr<Session> session;
  if (backend == "kubernetes") {
    // The API server owns the nodes: they are read from it (and followed by every
    // runner cycle), never generated or read from a file.
    std::vector<std::string> conflicting;
    for (const char* flag : {"-f", "--nodes", "--cpu", "--memory", "--gpu", "--disk", "--ssd", "--racks", "--zones",
                             "--subnet", "--name-prefix", "--label", "--hdd-size", "--ssd-size", "--image", "--ports"})
      if (cmd->count(flag) > 0) conflicting.push_back(flag);
    if (!conflicting.empty())
      return report_error(g, fmt::format("{} cannot be combined with --backend kubernetes", fmt::join(conflicting, ", ")),
                          "the nodes come from the API server (kubectl get nodes); label them there");
    // The pods' owner id lives in the store, so the store is opened first.
    auto opened = open_session(g, SessionOptions{.create_store = true});
    if (!opened) return report(g, opened.error());
    session = std::move(*opened);
    auto owner = kube_owner_of(*session->store);
    if (!owner) return report(g, owner.error());
    kube_owner = *owner;
    auto kb = open_kube_backend(*context, kube_owner);
    if (!kb) return report(g, kb.error());
    auto summary = check_kube_backend(*context, **kb);
    if (!summary) return report(g, summary.error());
    kube_summary = *summary;
    auto obs = (*kb)->observe(0);
    if (!obs) return report_error(g, fmt::format("reading the nodes: {}", obs.error().message), "");
    for (const auto& inv : *obs->inventory) {
      Node n = inv.node;
      n.state = inv.unschedulable ? NodeState::Cordoned : NodeState::Ready;
      spec.nodes.push_back(std::move(n));
    }
    if (spec.nodes.empty())
      return report_error(g, "the API server has no nodes", "join nodes to the cluster first (kubectl get nodes)");
    // Its StorageClasses become gaia's claim classes, beside the nodes' local classes.
    std::string note;
    auto classes = kube_storage_classes(*context, **kb, spec.nodes, &note);
    if (!classes) return report(g, classes.error());
    spec.storage_classes = std::move(*classes);
    if (!note.empty()) kube_summary += "; " + note;
    ensure_default_tenant(spec.tenants);
  } else if (!a.file.empty()) {
    // Node-shape flags describe generated nodes; with a file they would be ignored.
    std::vector<std::string> conflicting;
    for (const char* flag : {"--nodes", "--cpu", "--memory", "--gpu", "--disk", "--ssd", "--racks", "--zones",
                             "--subnet", "--name-prefix", "--label", "--hdd-size", "--ssd-size", "--image", "--ports"})
      if (cmd->count(flag) > 0) conflicting.push_back(flag);
    if (!conflicting.empty())
      return report_error(g, fmt::format("{} cannot be combined with -f", fmt::join(conflicting, ", ")),
                          "describe the nodes in the cluster file, or drop -f and use flags only");
    auto file = spec::load_cluster_file(a.file);
    if (!file) return report(g, file.error());
    spec = std::move(file->cluster);
  } else {
    NodeFlags flags = a.nodes;
    // A process cluster's default subnet is loopback, so every instance binds an address
    // of its own on this machine without configuring anything (controllers/node_ops.hpp
    // refuses any other), and a range of its own on this machine.
    if (backend == "process" && cmd->count("--subnet") == 0)
      flags.subnet = process::default_loopback_subnet(context->store);
    auto options = generate_options(flags);
    if (!options) return report(g, options.error());
    auto nodes = generate_nodes(*options);
    if (!nodes) return report_error(g, nodes.error(), "see `gaia cluster create --help`");
    spec.nodes = std::move(*nodes);
    ensure_default_tenant(spec.tenants);
  }
  spec.backend = backend;
  if (!a.name.empty()) spec.name = a.name;
  if (!a.strategy.empty()) spec.profile.strategy = a.strategy;

  if (!session) {
    auto opened = open_session(g, SessionOptions{.create_store = true});
    if (!opened) return report(g, opened.error());
    session = std::move(*opened);
  }
  NodeOpOutcome outcome;
  bool had_nodes = false;
  auto result = session->state->update(session->op, [&](const ClusterState& s, Batch& batch) -> Result<void> {
    had_nodes = !s.snapshot.nodes.empty();
    auto o = decide_cluster_create(s, spec, a.replace);
    if (!o) return fail(o.error());
    outcome = std::move(*o);
    batch = outcome.batch;
    if (!kube_owner.empty()) batch.put_settings[keys::k_kube_owner_setting] = kube_owner;
    return {};
  });
  if (!result) return report(g, result.error());
  if (g.quiet) return k_ok;
  Resources cap = total_capacity(spec.nodes);
  fmt::print("cluster {}{}: {} nodes, {}\n", had_nodes ? "replaced" : "created",
             spec.name.empty() ? "" : " " + spec.name, spec.nodes.size(), topology_summary(spec.nodes));
  fmt::print("  capacity: cpu {}, memory {}, gpu {}, disk {}\n", format_cpu(cap.cpu_millis),
             format_bytes_short(cap.memory_bytes), cap.gpu, format_bytes_short(cap.disk_bytes));
  std::vector<std::string> tenants;
  for (const auto& t : spec.tenants) tenants.push_back(t.name);
  fmt::print("  tenants: {}; scheduler strategy {}\n", fmt::join(tenants, ", "), spec.profile.strategy);
  if (!outcome.displaced.empty()) fmt::print("  {} instance(s) taken off the old nodes\n", outcome.displaced.size());
  print_retry(g, outcome);
  if (spec.backend == "kubernetes")
    fmt::print("  backend kubernetes: {}; gaia schedules pods with schedulerName gaia and binds them\n", kube_summary);
  if (spec.backend == "process") {
    fmt::print("  backend process: instances run as local processes (state in {})\n",
               run_dir_of(session->context.store).string());
    // Said once, where a user sets the cluster up (and in the agent's log), rather than
    // after every command.
    if (auto w = process::cgroup::take_limits_warning(true); !w.empty()) fmt::print("  warning: {}\n", w);
    if (!a.no_agent) {
      auto agent = ensure_agent(g, session->context.store);
      if (!agent) return report(g, agent.error());
      fmt::print("  {}\n", agent->message);
    }
  }
  return k_ok;
}

nlohmann::json tenant_json(const Tenant& t) {
  nlohmann::json j = t;
  return j;
}

std::string quota_text(int64_t v, const std::string& formatted) { return v < 0 ? "-" : formatted; }

int run_show(const Globals& g, const ShowArgs& a) {
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  auto state = (*session)->state->load();
  if (!state) return report(g, state.error());
  const Snapshot& s = state->snapshot;
  auto usage = node_usage(*state);
  Resources cap = total_capacity(s.nodes), used;
  int ready = 0, cordoned = 0, down = 0;
  for (const auto& n : s.nodes) {
    (n.state == NodeState::Ready ? ready : n.state == NodeState::Cordoned ? cordoned : down)++;
    const auto& u = usage[n.name].allocated;
    used.cpu_millis += u.cpu_millis;
    used.memory_bytes += u.memory_bytes;
    used.gpu += u.gpu;
    used.disk_bytes += u.disk_bytes;
  }
  std::map<std::string, int> by_state;
  std::map<std::string, Resources> tenant_used;
  for (const auto& i : s.instances) {
    by_state[std::string(instance_state_name(i.state))]++;
    if (!occupies_node(i)) continue;
    auto& r = tenant_used[i.tenant];
    r.cpu_millis += i.request.cpu_millis;
    r.memory_bytes += i.request.memory_bytes;
    r.gpu += i.request.gpu;
  }
  std::map<std::string, int> tenant_instances;
  for (const auto& i : s.instances)
    if (occupies_node(i)) tenant_instances[i.tenant]++;
  const SchedulerProfile& p = s.profile;
  if (a.output == "json" || a.output == "yaml") {
    nlohmann::json j;
    j["context"] = (*session)->context.name;
    j["store"] = (*session)->context.store;
    j["nodes"] = {{"total", s.nodes.size()}, {"ready", ready}, {"cordoned", cordoned}, {"down", down}};
    j["capacity"] = cap;
    j["allocated"] = used;
    j["instances"] = by_state;
    j["apps"] = state->apps.size();
    j["tenants"] = nlohmann::json::array();
    for (const auto& t : s.tenants) {
      nlohmann::json tj = tenant_json(t);
      tj["used"] = tenant_used[t.name];
      tj["instances"] = tenant_instances[t.name];
      j["tenants"].push_back(std::move(tj));
    }
    j["profile"] = p;
    j["storage_classes"] = nlohmann::json::array();
    for (const auto& u : storage_class_usage(*state)) {
      nlohmann::json cj = u.cls;
      cj["capacity_bytes"] = u.capacity_bytes;
      cj["used_bytes"] = u.used_bytes;
      cj["nodes"] = u.nodes;
      j["storage_classes"].push_back(std::move(cj));
    }
    print_structured(j, a.output);
    return k_ok;
  }
  if (s.nodes.empty()) {
    fmt::print("no cluster in context {} (store {})\n", (*session)->context.name, (*session)->context.store);
    fmt::print("create one with `gaia cluster create --nodes 3` or `gaia cluster create -f examples/clusters/bigdata-50.yaml`\n");
    return k_ok;
  }
  fmt::print("Context:     {} (store {})\n", (*session)->context.name, (*session)->context.store);
  fmt::print("Nodes:       {} ({} ready, {} cordoned, {} down)\n", s.nodes.size(), ready, cordoned, down);
  fmt::print("Topology:    {}\n", topology_summary(s.nodes));
  fmt::print("Capacity:    cpu {}, memory {}, gpu {}, disk {}\n", format_cpu(cap.cpu_millis),
             format_bytes_short(cap.memory_bytes), cap.gpu, format_bytes_short(cap.disk_bytes));
  fmt::print("Allocated:   cpu {} ({}%), memory {} ({}%), gpu {} ({}%), disk {} ({}%)\n", format_cpu(used.cpu_millis),
             percent(used.cpu_millis, cap.cpu_millis), format_bytes_short(used.memory_bytes),
             percent(used.memory_bytes, cap.memory_bytes), used.gpu, percent(used.gpu, cap.gpu),
             format_bytes_short(used.disk_bytes), percent(used.disk_bytes, cap.disk_bytes));
  std::vector<std::string> states;
  for (const auto& [st, n] : by_state) states.push_back(fmt::format("{} {}", n, st));
  fmt::print("Instances:   {}\n", states.empty() ? "none" : fmt::format("{}", fmt::join(states, ", ")));
  fmt::print("Apps:        {}\n", state->apps.size());
  fmt::print("Scheduler:   strategy {}; weights allocation {}, balance {}, locality {}, image {}, affinity {}, spread {}, "
             "scarce {}; scores {}% of nodes\n",
             p.strategy, p.w_allocation, p.w_balance, p.w_locality, p.w_image, p.w_affinity, p.w_spread, p.w_scarce,
             p.percentage_of_nodes_to_score);
  fmt::print("Tenants:\n");
  Table t({"NAME", "CPU", "MEMORY", "GPU", "INSTANCES", "POOL"});
  for (const auto& tenant : s.tenants) {
    const Quota& q = tenant.quota;
    const Resources& u = tenant_used[tenant.name];
    t.add_row({tenant.name,
               fmt::format("{}/{}", format_cpu(u.cpu_millis), quota_text(q.cpu_millis, format_cpu(q.cpu_millis))),
               fmt::format("{}/{}", format_bytes_short(u.memory_bytes),
                           quota_text(q.memory_bytes, format_bytes_short(q.memory_bytes))),
               fmt::format("{}/{}", u.gpu, quota_text(q.gpu, std::to_string(q.gpu))),
               fmt::format("{}/{}", tenant_instances[tenant.name], quota_text(q.instances, std::to_string(q.instances))),
               tenant.pool_selector.empty() ? "<all nodes>" : labels_text(tenant.pool_selector)});
  }
  // Indent each table under its heading.
  auto indented = [](const std::string& table) {
    size_t pos = 0;
    while (pos < table.size()) {
      size_t nl = table.find('\n', pos);
      fmt::print("  {}\n", table.substr(pos, nl - pos));
      pos = nl + 1;
    }
  };
  indented(t.render(table_options_for(stdout)));
  fmt::print("Storage classes:\n");
  Table sc({"NAME", "KIND", "USED", "NODES", "DESCRIPTION"});
  for (const auto& u : storage_class_usage(*state)) {
    bool claim = u.cls.kind == StorageKind::Claim;
    std::string used = claim && u.capacity_bytes < 0
                           ? fmt::format("{}/unbounded", format_bytes_short(u.used_bytes))
                           : bytes_cell(u.used_bytes, u.capacity_bytes);
    std::string nodes = fmt::format("{}{}", u.nodes,
                                    claim ? (u.cls.node_selector.empty() ? " (all)" : " (" + labels_text(u.cls.node_selector) + ")")
                                          : "");
    sc.add_row({u.cls.name, std::string(storage_kind_name(u.cls.kind)), used, nodes,
                u.cls.description.empty() ? "-" : u.cls.description});
  }
  indented(sc.render(table_options_for(stdout)));
  return k_ok;
}

}  // namespace

void register_cluster(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("cluster", "Create and inspect the cluster (nodes, tenants, scheduler profile)");
  cmd->require_subcommand(1);
  cmd->footer(
      "Examples:\n"
      "  gaia cluster create -f examples/clusters/bigdata-50.yaml\n"
      "  gaia --context k8s cluster create --backend kubernetes     # the API server's nodes\n"
      "  gaia cluster show");

  auto ca = std::make_shared<CreateArgs>();
  auto* create = cmd->add_subcommand("create", "Create the cluster from flags or a cluster file");
  create->add_option("-f,--file", ca->file, "Cluster file (YAML; see examples/clusters/)")->type_name("FILE");
  create->add_option("--name", ca->name, "A name for the cluster, shown in its events");
  create->add_option("--strategy", ca->strategy, "Scheduler strategy: spread (least allocated) or stack (most allocated)")
      ->check(CLI::IsMember({"spread", "stack"}));
  create->add_flag("--replace", ca->replace,
                   "Recreate over an existing cluster: old nodes go, instances are scheduled again on the new ones");
  create->add_option("--backend", ca->backend,
                     "Where instances run: sim (simulated, the default), process (local processes, with an agent "
                     "started in the background) or kubernetes (pods on the context's API server, whose nodes "
                     "become the cluster); default: the context's")
      ->check(CLI::IsMember({"sim", "process", "kubernetes"}));
  create->add_flag("--no-agent", ca->no_agent,
                   "With --backend process: do not start the agent (start it with `gaia agent start`)");
  add_node_flags(create, ca->nodes, false);
  create->footer(
      "Examples:\n"
      "  gaia cluster create --nodes 50 --cpu 32 --memory 128Gi --racks 3 --ssd\n"
      "  gaia cluster create -f examples/clusters/bigdata-50.yaml\n"
      "  gaia --context k8s cluster create --backend kubernetes     # the API server's nodes\n"
      "Addresses: node i gets host i+1 of the --subnet's lower half and the i-th /24 (IPv6: /64) of its upper half\n"
      "for its instances; a /16 holds 128 nodes, a /12 2048.");
  create->callback([&g, ca, create, code] { *code = run_create(g, create, *ca); });

  auto sa = std::make_shared<ShowArgs>();
  auto* show = cmd->add_subcommand("show", "Summary: nodes, capacity, allocation, tenants, scheduler profile");
  show->add_option("-o,--output", sa->output, "json or yaml instead of text")->check(CLI::IsMember({"json", "yaml"}));
  show->footer("Examples:\n  gaia cluster show\n  gaia cluster show -o json | jq .nodes");
  show->callback([&g, sa, code] { *code = run_show(g, *sa); });
}

}  // namespace gaia::cli
