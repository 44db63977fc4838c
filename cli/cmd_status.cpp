// gaia status: one screen about the cluster of the current context: the store, nodes by
// state, apps and instances by state, allocation of the schedulable capacity, and the
// latest events.
#include <fmt/format.h>

#include <algorithm>

#include "cli/context.hpp"
#include "cli/table.hpp"
#include "lib/quantity.hpp"

namespace gaia::cli {

namespace {

struct StatusArgs {
  std::string output = "text";
  int events = 5;
};

int pct(int64_t used, int64_t cap) { return cap > 0 ? static_cast<int>(used * 100 / cap) : 0; }

// Cores with at most one decimal ("125.5", "1544"), so both sides of a ratio read alike.
std::string cores(int64_t millis) {
  if (millis % 1000 == 0) return std::to_string(millis / 1000);
  return fmt::format("{:.1f}", static_cast<double>(millis) / 1000.0);
}

int run_status(const Globals& g, const StatusArgs& a) {
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  auto st = s.state->load();
  if (!st) return report(g, st.error());

  int ready = 0, cordoned = 0, down = 0;
  Resources capacity, allocated;
  for (const auto& n : st->snapshot.nodes) {
    if (n.state == NodeState::Ready) ++ready;
    else if (n.state == NodeState::Cordoned) ++cordoned;
    else ++down;
    if (n.state == NodeState::Down) continue;
    capacity.cpu_millis += n.capacity.cpu_millis;
    capacity.memory_bytes += n.capacity.memory_bytes;
    capacity.gpu += n.capacity.gpu;
  }
  std::map<std::string, int> instance_states;
  for (const auto& i : st->snapshot.instances) {
    ++instance_states[std::string(instance_state_name(i.state))];
    bool occupies = occupies_node(i);
    const Node* n = occupies ? st->find_node(i.node) : nullptr;
    if (!n || n->state == NodeState::Down) continue;
    allocated.cpu_millis += i.request.cpu_millis;
    allocated.memory_bytes += i.request.memory_bytes;
    allocated.gpu += i.request.gpu;
  }
  std::map<std::string, int> app_states;
  for (const auto& [id, app] : st->apps) ++app_states[app.status];
  auto last = s.state->events_after(std::max<int64_t>(0, st->seq - a.events));
  if (!last) return report(g, last.error());

  if (a.output == "json") {
    nlohmann::json events = nlohmann::json::array();
    for (const auto& e : *last) events.push_back(e);
    nlohmann::json j = {
        {"context", s.context.name},
        {"store", s.context.store},
        {"backend", s.context.backend},
        {"revision", st->revision},
        {"nodes", {{"total", st->snapshot.nodes.size()}, {"ready", ready}, {"cordoned", cordoned}, {"down", down}}},
        {"apps", {{"total", st->apps.size()}, {"by_status", app_states}}},
        {"instances", {{"total", st->snapshot.instances.size()}, {"by_state", instance_states}}},
        {"allocation",
         {{"cpu_millis", {{"allocated", allocated.cpu_millis}, {"capacity", capacity.cpu_millis}}},
          {"memory_bytes", {{"allocated", allocated.memory_bytes}, {"capacity", capacity.memory_bytes}}},
          {"gpu", {{"allocated", allocated.gpu}, {"capacity", capacity.gpu}}}}},
        {"events", events}};
    std::printf("%s\n", j.dump(2).c_str());
    return k_ok;
  }

  auto counts = [](const std::map<std::string, int>& m) {
    std::vector<std::string> parts;
    for (const auto& [k, v] : m) parts.push_back(fmt::format("{} {}", v, k));
    return parts.empty() ? std::string("none") : fmt::format("{}", fmt::join(parts, ", "));
  };
  std::printf("%s %s (backend %s)\n", bold(g, stdout, "context:  ").c_str(), s.context.name.c_str(),
              s.context.backend.c_str());
  std::printf("%s %s (revision %lld)\n", bold(g, stdout, "store:    ").c_str(), s.context.store.c_str(),
              static_cast<long long>(st->revision));
  std::printf("%s %zu: %d ready, %d cordoned, %d down\n", bold(g, stdout, "nodes:    ").c_str(),
              st->snapshot.nodes.size(), ready, cordoned, down);
  std::printf("%s %zu: %s\n", bold(g, stdout, "apps:     ").c_str(), st->apps.size(), counts(app_states).c_str());
  std::printf("%s %zu: %s\n", bold(g, stdout, "instances:").c_str(), st->snapshot.instances.size(),
              counts(instance_states).c_str());
  std::string alloc = fmt::format("cpu {}/{} ({}%), memory {}/{} ({}%)", cores(allocated.cpu_millis),
                                  cores(capacity.cpu_millis), pct(allocated.cpu_millis, capacity.cpu_millis),
                                  format_bytes(allocated.memory_bytes), format_bytes(capacity.memory_bytes),
                                  pct(allocated.memory_bytes, capacity.memory_bytes));
  if (capacity.gpu > 0)
    alloc += fmt::format(", gpu {}/{} ({}%)", allocated.gpu, capacity.gpu, pct(allocated.gpu, capacity.gpu));
  std::printf("%s %s\n", bold(g, stdout, "allocated:").c_str(), alloc.c_str());
  if (st->snapshot.nodes.empty())
    std::printf("\nno nodes yet: create a cluster with `gaia cluster create --nodes 3` or `-f FILE`\n");
  std::printf("\n%s\n", bold(g, stdout, fmt::format("last {} events:", last->size())).c_str());
  if (last->empty()) {
    std::printf("  (none)\n");
    return k_ok;
  }
  Table t({"SEQ", "TIME", "TYPE", "REASON", "OBJECT", "MESSAGE"});
  for (const auto& e : *last) {
    std::string object = !e.instance.empty() ? e.instance
                         : !e.app.empty()    ? e.tenant + "/" + e.app
                         : !e.node.empty()   ? "node/" + e.node
                                             : "-";
    t.add_row({std::to_string(e.seq), e.time, e.type, e.reason, object, e.message});
  }
  std::string text = t.render(table_options_for(stdout));
  std::fputs(text.c_str(), stdout);
  return k_ok;
}

}  // namespace

void register_status(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("status", "Summary of the current context's cluster: nodes, apps, allocation, events");
  cmd->footer(
      "Examples:\n"
      "  gaia status\n"
      "  gaia --context lab status -o json");
  auto a = std::make_shared<StatusArgs>();
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--events", a->events, "How many of the latest events to show")->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->callback([&g, code, a] { *code = run_status(g, *a); });
}

}  // namespace gaia::cli
