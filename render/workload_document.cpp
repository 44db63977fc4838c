// The canonical gaia/v1 document of a Workload and its inverse. The document has every
// role field present with defaults filled and quantities in canonical spelling, so two
// renders that mean the same thing produce the same bytes and the same hash.

#include <fmt/format.h>

#include "lib/hash.hpp"
#include "lib/quantity.hpp"
#include "render/json_fields.hpp"
#include "render/workload.hpp"

namespace gaia::render {

namespace {

using nlohmann::json;

json term_json(const AffinityTerm& t) {
  json match = json::array();
  for (const auto& m : t.match) match.push_back({{"key", m.key}, {"op", m.op}, {"values", m.values}});
  return {{"target", t.target == AffinityTerm::Target::Node ? "node" : "instance"},
          {"match", match},
          {"topology", t.topology},
          {"weight", t.weight}};
}

json terms_json(const std::vector<AffinityTerm>& required, const std::vector<AffinityTerm>& preferred) {
  json req = json::array(), pref = json::array();
  for (const auto& t : required) req.push_back(term_json(t));
  for (const auto& t : preferred) pref.push_back(term_json(t));
  return {{"required", req}, {"preferred", pref}};
}

json resources_json(const Resources& q) {
  return {{"cpu", format_cpu(q.cpu_millis)},
          {"memory", format_bytes(q.memory_bytes)},
          {"gpu", q.gpu},
          {"disk", format_bytes(q.disk_bytes)}};
}

json role_json(const Role& r) {
  json ports = json::array(), volumes = json::array();
  for (const auto& p : r.ports) ports.push_back({{"name", p.name}, {"port", p.port}, {"protocol", p.protocol}});
  for (const auto& v : r.volumes)
    volumes.push_back({{"name", v.name},
                       {"size", format_bytes(v.size_bytes)},
                       {"class", v.storage_class},
                       {"iops", v.iops},
                       {"mount", v.mount_path}});
  json out = {
      {"kind", r.kind},
      {"image", r.image},
      {"command", r.command},
      {"env", r.env},
      {"replicas", r.replicas},
      {"resources", resources_json(r.resources)},
      {"priority", r.priority.to_string()},
      {"labels", r.labels},
      {"node_selector", r.node_selector},
      {"affinity", terms_json(r.required_affinity, r.preferred_affinity)},
      {"anti_affinity", terms_json(r.required_anti_affinity, r.preferred_anti_affinity)},
      {"ports", ports},
      {"volumes", volumes},
      {"near", r.near},
      {"network", {{"subnet", r.required_subnet}, {"topology", r.required_topology}}},
      {"restart", {{"retry_times", r.retry_times}, {"backoff_ms", r.backoff_ms}}},
      {"migration", {{"migrate_times", r.migrate_times}, {"min_available", r.min_available}}},
      {"health",
       {{"type", r.health.type},
        {"target", r.health.target},
        {"period_s", r.health.period_s},
        {"timeout_s", r.health.timeout_s},
        {"failure_threshold", r.health.failure_threshold}}},
  };
  // Written only when it differs from the default, so documents rendered before the
  // field existed keep their content hash (and a re-apply of them is no change).
  if (r.grace_period_ms != Role{}.grace_period_ms) out["grace_period_ms"] = r.grace_period_ms;
  if (r.burstable()) out["limits"] = resources_json(*r.limits);
  if (!r.after.empty()) out["after"] = r.after;
  return out;
}

// Reads a document strictly: every field must be present with the right type. Problems
// are collected with their path in the document; no file is known here.
class DocumentReader {
 public:
  explicit DocumentReader(Diagnostics& diags) : m_diags(diags) {}

  void error(const std::string& path, std::string message) {
    m_diags.push_back({Location{"<gaia/v1 document>"}, path, std::move(message),
                       "documents are written by `gaia render`; re-render instead of editing them"});
  }

  const json* get(const json& obj, std::string_view key, const std::string& path, json::value_t type) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    std::string p = path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
    if (it == obj.end()) {
      error(p, "missing");
      return nullptr;
    }
    bool ok = it->type() == type || (type == json::value_t::number_integer && it->is_number_integer());
    if (!ok) {
      json sample(type);
      error(p, fmt::format("expected {}, got {}", detail::json_type_name(sample), detail::json_type_name(*it)));
      return nullptr;
    }
    return &*it;
  }

  std::string str(const json& obj, std::string_view key, const std::string& path) {
    const json* v = get(obj, key, path, json::value_t::string);
    return v ? v->get<std::string>() : std::string();
  }

  int64_t integer(const json& obj, std::string_view key, const std::string& path) {
    const json* v = get(obj, key, path, json::value_t::number_integer);
    return v ? v->get<int64_t>() : 0;
  }

  bool boolean(const json& obj, std::string_view key, const std::string& path) {
    const json* v = get(obj, key, path, json::value_t::boolean);
    return v && v->get<bool>();
  }

  std::map<std::string, std::string> string_map(const json& obj, std::string_view key, const std::string& path) {
    std::map<std::string, std::string> out;
    const json* v = get(obj, key, path, json::value_t::object);
    if (!v) return out;
    for (auto it = v->begin(); it != v->end(); ++it) {
      if (it->is_string()) out[it.key()] = it->get<std::string>();
      else error(fmt::format("{}.{}.{}", path, key, it.key()), "expected a string");
    }
    return out;
  }

  std::vector<std::string> strings(const json& obj, std::string_view key, const std::string& path) {
    std::vector<std::string> out;
    const json* v = get(obj, key, path, json::value_t::array);
    if (!v) return out;
    for (const auto& s : *v) {
      if (s.is_string()) out.push_back(s.get<std::string>());
      else error(fmt::format("{}.{}", path, key), "expected a list of strings");
    }
    return out;
  }

  // A string field parsed by one of the lib/ parsers (parse_cpu, parse_priority...).
  template <class T, class Parse>
  T parsed(const json& obj, std::string_view key, const std::string& path, Parse parse) {
    const json* v = get(obj, key, path, json::value_t::string);
    if (!v) return T{};
    auto result = parse(v->get<std::string>());
    if (!result) {
      error(path.empty() ? std::string(key) : fmt::format("{}.{}", path, key), result.error());
      return T{};
    }
    return *result;
  }

  std::vector<AffinityTerm> terms(const json& obj, std::string_view key, const std::string& path) {
    std::vector<AffinityTerm> out;
    const json* list = get(obj, key, path, json::value_t::array);
    if (!list) return out;
    for (size_t i = 0; i < list->size(); ++i) {
      const json& t = (*list)[i];
      std::string p = fmt::format("{}.{}[{}]", path, key, i);
      AffinityTerm term;
      std::string target = str(t, "target", p);
      if (target != "node" && target != "instance") error(p + ".target", "expected node or instance");
      term.target = target == "node" ? AffinityTerm::Target::Node : AffinityTerm::Target::Instance;
      term.topology = str(t, "topology", p);
      term.weight = static_cast<int>(integer(t, "weight", p));
      if (const json* match = get(t, "match", p, json::value_t::array)) {
        for (size_t j = 0; j < match->size(); ++j) {
          std::string mp = fmt::format("{}.match[{}]", p, j);
          const json& m = (*match)[j];
          term.match.push_back({str(m, "key", mp), str(m, "op", mp), strings(m, "values", mp)});
        }
      }
      out.push_back(std::move(term));
    }
    return out;
  }

  Resources resources(const json& res, const std::string& rp) {
    Resources q;
    q.cpu_millis = parsed<int64_t>(res, "cpu", rp, parse_cpu);
    q.memory_bytes = parsed<int64_t>(res, "memory", rp, parse_bytes);
    q.gpu = integer(res, "gpu", rp);
    q.disk_bytes = parsed<int64_t>(res, "disk", rp, parse_bytes);
    return q;
  }

  Role role(const std::string& name, const json& r, const std::string& p) {
    Role out;
    out.name = name;
    out.kind = str(r, "kind", p);
    out.image = str(r, "image", p);
    out.command = strings(r, "command", p);
    out.env = string_map(r, "env", p);
    out.replicas = static_cast<int>(integer(r, "replicas", p));
    if (const json* res = get(r, "resources", p, json::value_t::object)) out.resources = resources(*res, p + ".resources");
    // Optional: documents rendered before limits and start order existed lack them.
    if (r.contains("limits"))
      if (const json* lim = get(r, "limits", p, json::value_t::object)) out.limits = resources(*lim, p + ".limits");
    if (r.contains("after")) out.after = strings(r, "after", p);
    out.priority = parsed<Priority>(r, "priority", p, parse_priority);
    out.labels = string_map(r, "labels", p);
    out.node_selector = string_map(r, "node_selector", p);
    if (const json* a = get(r, "affinity", p, json::value_t::object)) {
      out.required_affinity = terms(*a, "required", p + ".affinity");
      out.preferred_affinity = terms(*a, "preferred", p + ".affinity");
    }
    if (const json* a = get(r, "anti_affinity", p, json::value_t::object)) {
      out.required_anti_affinity = terms(*a, "required", p + ".anti_affinity");
      out.preferred_anti_affinity = terms(*a, "preferred", p + ".anti_affinity");
    }
    if (const json* ports = get(r, "ports", p, json::value_t::array)) {
      for (size_t i = 0; i < ports->size(); ++i) {
        std::string pp = fmt::format("{}.ports[{}]", p, i);
        const json& port = (*ports)[i];
        out.ports.push_back({str(port, "name", pp), static_cast<int>(integer(port, "port", pp)), str(port, "protocol", pp)});
      }
    }
    if (const json* volumes = get(r, "volumes", p, json::value_t::array)) {
      for (size_t i = 0; i < volumes->size(); ++i) {
        std::string vp = fmt::format("{}.volumes[{}]", p, i);
        const json& v = (*volumes)[i];
        Volume vol;
        vol.name = str(v, "name", vp);
        vol.size_bytes = parsed<int64_t>(v, "size", vp, parse_bytes);
        vol.storage_class = str(v, "class", vp);
        vol.iops = integer(v, "iops", vp);
        vol.mount_path = str(v, "mount", vp);
        out.volumes.push_back(std::move(vol));
      }
    }
    out.near = str(r, "near", p);
    if (const json* n = get(r, "network", p, json::value_t::object)) {
      out.required_subnet = str(*n, "subnet", p + ".network");
      out.required_topology = str(*n, "topology", p + ".network");
    }
    if (const json* n = get(r, "restart", p, json::value_t::object)) {
      out.retry_times = static_cast<int>(integer(*n, "retry_times", p + ".restart"));
      out.backoff_ms = static_cast<int>(integer(*n, "backoff_ms", p + ".restart"));
    }
    if (const json* n = get(r, "migration", p, json::value_t::object)) {
      out.migrate_times = static_cast<int>(integer(*n, "migrate_times", p + ".migration"));
      out.min_available = static_cast<int>(integer(*n, "min_available", p + ".migration"));
    }
    if (auto g = r.find("grace_period_ms"); g != r.end()) {
      if (g->is_number_integer() && g->get<int64_t>() >= 0) out.grace_period_ms = g->get<int64_t>();
      else error(p + ".grace_period_ms", "expected a non-negative integer (milliseconds)");
    }
    if (const json* h = get(r, "health", p, json::value_t::object)) {
      std::string hp = p + ".health";
      out.health.type = str(*h, "type", hp);
      out.health.target = str(*h, "target", hp);
      out.health.period_s = static_cast<int>(integer(*h, "period_s", hp));
      out.health.timeout_s = static_cast<int>(integer(*h, "timeout_s", hp));
      out.health.failure_threshold = static_cast<int>(integer(*h, "failure_threshold", hp));
    }
    return out;
  }

 private:
  Diagnostics& m_diags;
};

}  // namespace

json to_document(Workload& w) {
  json roles = json::object();
  for (const auto& r : w.roles) roles[r.name] = role_json(r);
  json reads = json::array();
  for (const auto& r : w.reads)
    reads.push_back({{"kind", r.kind}, {"key", r.key}, {"value", r.value}, {"revision", r.revision},
                     {"defaulted", r.defaulted}});
  json doc = {
      {"apiVersion", "gaia/v1"},
      {"kind", "App"},
      {"metadata",
       {{"name", w.app},
        {"version", w.version},
        {"tenant", w.tenant},
        {"priority", w.priority.to_string()},
        {"labels", {{"gaia.io/app", w.app}, {"gaia.io/version", w.version}, {"gaia.io/tenant", w.tenant}}}}},
      {"spec", {{"roles", roles}, {"outputs", w.outputs}}},
      {"config", w.config},
      {"reads", reads},
  };
  // The hash covers the document as it is without the hash itself, so a reader can
  // recompute it and detect a document that was changed after rendering.
  w.hash = content_hash(doc.dump());
  doc["metadata"]["hash"] = w.hash;
  return doc;
}

Result<Workload> from_document(const json& doc) {
  Diagnostics diags;
  DocumentReader in(diags);
  Workload w;
  if (!doc.is_object()) {
    in.error("", fmt::format("expected a gaia/v1 document (an object), got {}", detail::json_type_name(doc)));
    return fail(diags);
  }
  if (std::string api = in.str(doc, "apiVersion", ""); doc.contains("apiVersion") && api != "gaia/v1")
    in.error("apiVersion", fmt::format("'{}' is not gaia/v1", api));
  if (std::string kind = in.str(doc, "kind", ""); doc.contains("kind") && kind != "App")
    in.error("kind", fmt::format("'{}' is not App", kind));
  std::string stored_hash;
  if (const json* meta = in.get(doc, "metadata", "", json::value_t::object)) {
    w.app = in.str(*meta, "name", "metadata");
    w.version = in.str(*meta, "version", "metadata");
    w.tenant = in.str(*meta, "tenant", "metadata");
    w.priority = in.parsed<Priority>(*meta, "priority", "metadata", parse_priority);
    stored_hash = in.str(*meta, "hash", "metadata");
  }
  if (const json* spec = in.get(doc, "spec", "", json::value_t::object)) {
    if (const json* roles = in.get(*spec, "roles", "spec", json::value_t::object))
      for (auto it = roles->begin(); it != roles->end(); ++it)
        w.roles.push_back(in.role(it.key(), it.value(), "spec.roles." + it.key()));
    if (const json* outputs = in.get(*spec, "outputs", "spec", json::value_t::object)) w.outputs = *outputs;
  }
  if (const json* config = in.get(doc, "config", "", json::value_t::object)) w.config = *config;
  if (const json* reads = in.get(doc, "reads", "", json::value_t::array)) {
    for (size_t i = 0; i < reads->size(); ++i) {
      const json& r = (*reads)[i];
      std::string p = fmt::format("reads[{}]", i);
      ConfigRead read;
      read.kind = in.str(r, "kind", p);
      read.key = in.str(r, "key", p);
      if (r.is_object() && r.contains("value")) read.value = r["value"];
      else in.error(p + ".value", "missing");
      read.revision = in.integer(r, "revision", p);
      read.defaulted = in.boolean(r, "defaulted", p);
      w.reads.push_back(std::move(read));
    }
  }
  if (!diags.empty()) return fail(std::move(diags));
  json unhashed = doc;
  unhashed["metadata"].erase("hash");
  if (std::string actual = content_hash(unhashed.dump()); actual != stored_hash)
    in.error("metadata.hash", fmt::format("{} does not match the content (hash {}): the document was changed after "
                                          "rendering",
                                          stored_hash, actual));
  if (!diags.empty()) return fail(std::move(diags));
  w.hash = stored_hash;
  return w;
}

}  // namespace gaia::render
