#include "ops/center_changes.hpp"

#include <fmt/format.h>

#include "controllers/submit.hpp"

namespace gaia::ops {

std::string scope_name(const std::string& scope) {
  return scope == k_global_scope ? std::string("global") : "tenant " + scope;
}

CenterChange config_change(const std::string& scope, const std::vector<ConfigEdit>& edits,
                           const StoreConfigSource& before) {
  CenterChange c;
  std::vector<std::string> names;
  std::map<std::string, std::optional<nlohmann::json>> previous;
  for (const auto& e : edits) {
    names.push_back(e.key);
    c.keys.push_back(ChangedKey{"config", e.key});
    const ConfigEntry* old = before.find(scope, e.key);
    previous[e.key] = old ? std::optional<nlohmann::json>(old->value) : std::nullopt;
  }
  c.description = fmt::format("config {} ({})", fmt::join(names, ", "), scope_name(scope));
  c.apply = [scope, edits](StoreConfigSource& centers, int64_t revision) {
    for (const auto& e : edits) {
      if (e.value) centers.put(ConfigEntry{scope, e.key, *e.value, revision, ""});
      else centers.erase(scope, e.key);
    }
  };
  c.write = [scope, edits](const Workspace& ws, const StoreConfigSource& read) -> Result<void> {
    std::map<std::string, int64_t> expected;
    for (const auto& e : edits)
      if (const ConfigEntry* x = read.find(scope, e.key)) expected[e.key] = x->revision;
    auto w = write_config(ws.store, scope, edits, expected, ws.op, ws.state.now_rfc3339());
    if (!w) return fail(w.error());
    if (!w->succeeded)
      return fail(Diagnostic{{}, "", fmt::format("a key of this change was changed by another command meanwhile"),
                             "nothing was written; run the command again"});
    return {};
  };
  c.events = [scope, edits, previous](Batch& b, const StoreConfigSource& after, const SecretKeys& secrets) {
    for (const auto& e : edits) {
      const auto& was = previous.at(e.key);
      std::string old_text = was ? secrets.text(e.key, *was) : "unset";
      std::string message;
      if (e.value) {
        const ConfigEntry* now = after.find(scope, e.key);
        message = fmt::format("{} = {} ({}, revision {}; was {})", e.key, secrets.text(e.key, *e.value),
                              scope_name(scope), now ? now->revision : 0, old_text);
      } else {
        message = fmt::format("{} unset ({}; was {})", e.key, scope_name(scope), old_text);
      }
      auto& ev = b.event("ConfigChanged", message);
      if (scope != k_global_scope) ev.tenant = scope;
    }
  };
  return c;
}

CenterChange label_change(const std::string& kind, const std::string& tenant, const std::string& name,
                          const std::vector<LabelChange>& changes, const StoreConfigSource& before) {
  CenterChange c;
  std::string owner = kind == "app" ? tenant : "";
  std::map<std::string, std::string> previous;
  for (const auto& ch : changes) {
    c.keys.push_back(ChangedKey{"label", kind + "/" + name + "/" + ch.key});
    if (const LabelEntry* old = before.find_label(kind, owner, name, ch.key)) previous[ch.key] = old->value;
  }
  c.description = kind == "app" ? fmt::format("labels of app {} (tenant {})", name, tenant)
                                : fmt::format("labels of {} {}", kind, name);
  c.apply = [kind, owner, name, changes](StoreConfigSource& centers, int64_t revision) {
    for (const auto& ch : changes) {
      if (ch.value) centers.put_label(LabelEntry{kind, owner, name, ch.key, *ch.value, revision});
      else centers.erase_label(kind, owner, name, ch.key);
    }
  };
  c.write = [kind, owner, name, changes](const Workspace& ws, const StoreConfigSource& read) -> Result<void> {
    std::map<std::string, int64_t> expected;
    for (const auto& ch : changes)
      if (const LabelEntry* x = read.find_label(kind, owner, name, ch.key)) expected[ch.key] = x->revision;
    auto w = write_labels(ws.store, kind, owner, name, changes, expected);
    if (!w) return fail(w.error());
    if (!w->succeeded)
      return fail(Diagnostic{{}, "", "a label of this change was changed by another command meanwhile",
                             "nothing was written; run the command again"});
    return {};
  };
  c.events = [kind, tenant, name, changes, previous](Batch& b, const StoreConfigSource&, const SecretKeys&) {
    std::vector<std::string> parts;
    for (const auto& ch : changes) {
      auto was = previous.find(ch.key);
      std::string old_text = was == previous.end() ? "" : fmt::format(" (was {})", was->second);
      parts.push_back(ch.value ? fmt::format("{}={}{}", ch.key, *ch.value, old_text) : fmt::format("{}-{}", ch.key, old_text));
    }
    auto& ev = b.event("LabelChanged", fmt::format("{} {}: {}", kind, name, fmt::join(parts, ", ")));
    if (kind == "app") {
      ev.tenant = tenant;
      ev.app = name;
    } else {
      ev.tenant = name;
    }
  };
  return c;
}

CenterChange node_label_change(const std::vector<std::string>& names, const std::vector<LabelEdit>& edits,
                               bool overwrite, std::shared_ptr<NodeOpOutcome> outcome) {
  CenterChange c;
  for (const auto& n : names)
    for (const auto& e : edits) c.keys.push_back(ChangedKey{"label", "node/" + n + "/" + e.key});
  c.description = fmt::format("labels of node {}", fmt::join(names, ", "));
  c.apply = [names, edits](StoreConfigSource& centers, int64_t revision) {
    for (const auto& n : names)
      for (const auto& e : edits) {
        if (e.value) centers.put_label(LabelEntry{"node", "", n, e.key, *e.value, revision});
        else centers.erase_label("node", "", n, e.key);
      }
  };
  c.preview = [names, edits, overwrite](const ClusterState& state) -> Result<ClusterState> {
    auto o = decide_node_label(state, names, edits, overwrite);
    if (!o) return fail(o.error());
    return apply_batch(state, o->batch);
  };
  c.write = [names, edits, overwrite, outcome](const Workspace& ws, const StoreConfigSource&) -> Result<void> {
    auto r = ws.state.update(ws.op, [&](const ClusterState& st, Batch& b) -> Result<void> {
      auto o = decide_node_label(st, names, edits, overwrite);
      if (!o) return fail(o.error());
      *outcome = std::move(*o);
      b = outcome->batch;
      return {};
    });
    if (!r) return fail(r.error());
    return {};
  };
  // decide_node_label records NodeLabeled itself.
  c.events = [](Batch&, const StoreConfigSource&, const SecretKeys&) {};
  return c;
}

}  // namespace gaia::ops
