// Validation of main.jsonnet's result into a Workload. Every field of every role is
// checked and every problem collected, so one render shows all of them. The rendered
// JSON carries no source positions, so diagnostics point at main.jsonnet and name the
// field path ("roles.datanode.resources.memory") instead.

#include "render/workload.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <set>

#include "lib/cluster.hpp"
#include "lib/quantity.hpp"
#include "render/json_fields.hpp"
#include "spec/suggest.hpp"

namespace gaia::render {

namespace {

using nlohmann::json;
using detail::json_preview;
using detail::json_type_name;

// Bounds that no real role reaches; they keep the scheduler's sums (replicas times
// per-instance resources) far from int64 overflow and catch unit mistakes early.
constexpr int64_t kMaxReplicas = 100'000;
constexpr int64_t kMaxCpuMillis = 1'000'000'000;  // A million cores.
constexpr int64_t kMaxMemoryBytes = 64LL << 40;   // 64 TiB per instance.
constexpr int64_t kMaxDiskBytes = 1LL << 50;      // 1 PiB per instance or volume.
constexpr int64_t kMaxGpu = 1024;
constexpr int64_t kMaxIops = 10'000'000;
constexpr int64_t kMaxRetries = 1000;

const std::vector<std::string> kRoleFields = {
    "kind",          "image",    "command", "env",     "replicas", "resources", "priority",
    "labels",        "node_selector", "affinity", "anti_affinity", "ports", "volumes", "near",
    "network",       "restart",  "migration", "health", "grace_period", "limits", "after"};
const std::vector<std::string> kTopologies = {"node", "rack", "switch", "zone"};

// Keys gaia puts on every instance; user labels may not redefine them, so that
// affinity terms such as match_labels {app: 'hdfs', role: 'datanode'} mean one thing.
const std::vector<std::string> kImplicitLabels = {"app", "role", "tenant", "version"};

std::string join(const std::vector<std::string>& items) { return spec::join_limited(items); }

class RoleValidator {
 public:
  RoleValidator(const spec::AppSpec& spec, const std::string& file, const std::string& role, Diagnostics& diags,
                const std::map<std::string, std::string>& dep_releases, const std::string& tenant)
      : m_spec(spec), m_file(file), m_role(role), m_diags(diags), m_dep_releases(dep_releases), m_tenant(tenant) {}

  Role run(const json& v) {
    Role r;
    r.name = m_role;
    r.priority = m_spec.priority;
    if (!v.is_object()) {
      error("", fmt::format("expected an object describing the role, got {} ({})", json_preview(v), json_type_name(v)),
            "a role is an object such as { image: 'repo/app:1.0', resources: { cpu: '1', memory: '1Gi' } }");
      return r;
    }
    check_fields(v, "", kRoleFields);
    if (auto k = one_of(v, "kind", "kind", {"service", "batch"})) r.kind = *k;
    image_and_command(v, r);
    env(v, r);
    if (auto n = int_field(v, "replicas", "replicas", 0, kMaxReplicas)) r.replicas = static_cast<int>(*n);
    resources(v, r);
    limits(v, r);
    after(v, r);
    if (auto p = string_field(v, "priority", "priority")) {
      if (auto parsed = parse_priority(*p)) r.priority = *parsed;
      else error("priority", parsed.error(), "write BAND[:LEVEL], e.g. 'prod', 'prod:200' or 'nonprod:50'");
    }
    r.labels = string_map(v, "labels", true);
    r.node_selector = string_map(v, "node_selector", false);
    affinity(v, "affinity", false, r.required_affinity, r.preferred_affinity);
    affinity(v, "anti_affinity", true, r.required_anti_affinity, r.preferred_anti_affinity);
    ports(v, r);
    volumes(v, r);
    near(v, r);
    network(v, r);
    restart(v, r);
    migration(v, r);
    health(v, r);
    if (auto ms = duration_field(v, "grace_period", "grace_period", 1, 0, 3'600'000)) r.grace_period_ms = *ms;
    return r;
  }

 private:
  void error(const std::string& field, std::string message, std::string hint = {}) {
    Diagnostic d;
    d.location.file = m_file;
    d.path = field.empty() ? "roles." + m_role : "roles." + m_role + "." + field;
    // The field is already in the path; the message names app and role once.
    d.message = fmt::format("app {}, role {}: {}", m_spec.name, m_role, message);
    d.hint = std::move(hint);
    m_diags.push_back(std::move(d));
  }

  static std::string sub(const std::string& field, std::string_view key) {
    return field.empty() ? std::string(key) : fmt::format("{}.{}", field, key);
  }

  void type_error(const std::string& field, const json& v, std::string_view expected, std::string hint = {}) {
    error(field, fmt::format("expected {}, got {} ({})", expected, json_preview(v), json_type_name(v)), std::move(hint));
  }

  void check_fields(const json& obj, const std::string& field, const std::vector<std::string>& known) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (std::find(known.begin(), known.end(), it.key()) != known.end()) continue;
      error(sub(field, it.key()), "unknown field", detail::did_you_mean_hint(it.key(), known));
    }
  }

  // A member, or nullptr when absent. Jsonnet code often writes `if c then x else null`
  // for "no value", so null counts as absent.
  static const json* member(const json& obj, std::string_view key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
  }

  const json* object_field(const json& obj, std::string_view key, const std::string& field) {
    const json* v = member(obj, key);
    if (v && !v->is_object()) {
      type_error(field, *v, "an object");
      return nullptr;
    }
    return v;
  }

  const json* list_field(const json& obj, std::string_view key, const std::string& field) {
    const json* v = member(obj, key);
    if (v && !v->is_array()) {
      type_error(field, *v, "a list");
      return nullptr;
    }
    return v;
  }

  std::optional<std::string> string_field(const json& obj, std::string_view key, const std::string& field) {
    const json* v = member(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_string()) {
      type_error(field, *v, "a string");
      return std::nullopt;
    }
    return v->get<std::string>();
  }

  std::optional<std::string> one_of(const json& obj, std::string_view key, const std::string& field,
                                    const std::vector<std::string>& allowed) {
    auto s = string_field(obj, key, field);
    if (!s) return std::nullopt;
    if (std::find(allowed.begin(), allowed.end(), *s) != allowed.end()) return s;
    error(field, fmt::format("'{}' is not one of {}", *s, join(allowed)),
          detail::did_you_mean_hint(*s, allowed, "allowed values"));
    return std::nullopt;
  }

  std::optional<int64_t> int_value(const json& v, const std::string& field, int64_t lo, int64_t hi) {
    std::string expected = fmt::format("a whole number from {} to {}", lo, hi);
    if (!v.is_number()) {
      type_error(field, v, expected);
      return std::nullopt;
    }
    double d = v.get<double>();
    bool whole = v.is_number_integer() || (std::isfinite(d) && d == std::floor(d));
    if (!whole || d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
      error(field, fmt::format("expected {}, got {}", expected, json_preview(v)));
      return std::nullopt;
    }
    if (v.is_number_unsigned()) return static_cast<int64_t>(v.get<uint64_t>());
    if (v.is_number_integer()) return v.get<int64_t>();
    return static_cast<int64_t>(d);
  }

  std::optional<int64_t> int_field(const json& obj, std::string_view key, const std::string& field, int64_t lo,
                                   int64_t hi) {
    const json* v = member(obj, key);
    return v ? int_value(*v, field, lo, hi) : std::nullopt;
  }

  std::optional<int64_t> duration_field(const json& obj, std::string_view key, const std::string& field,
                                        int64_t unit_ms, int64_t lo, int64_t hi) {
    const json* v = member(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_string()) {
      type_error(field, *v, "a duration string", "write the unit, e.g. '500ms', '1s' or '2m'");
      return std::nullopt;
    }
    auto ms = detail::parse_duration_ms(v->get<std::string>());
    if (!ms) {
      error(field, ms.error(), "e.g. '500ms', '10s' or '2m'");
      return std::nullopt;
    }
    if (*ms % unit_ms != 0) {
      error(field, fmt::format("'{}' is not a whole number of {}", v->get<std::string>(), unit_ms == 1000 ? "seconds" : "units"));
      return std::nullopt;
    }
    int64_t n = *ms / unit_ms;
    if (n < lo || n > hi) {
      error(field, fmt::format("'{}' is out of range: expected {}{} to {}{}", v->get<std::string>(), lo,
                               unit_ms == 1000 ? "s" : "ms", hi, unit_ms == 1000 ? "s" : "ms"));
      return std::nullopt;
    }
    return n;
  }

  void image_and_command(const json& v, Role& r) {
    if (auto image = string_field(v, "image", "image")) {
      if (image->empty()) error("image", "must not be empty", "give an image reference such as 'apache/hadoop:3.3.4'");
      else if (image->find_first_of(" \t\n\r") != std::string::npos)
        error("image", fmt::format("'{}' contains whitespace", *image), "an image reference has no spaces");
      else r.image = *image;
    }
    if (const json* cmd = list_field(v, "command", "command")) {
      for (size_t i = 0; i < cmd->size(); ++i) {
        const json& arg = (*cmd)[i];
        std::string field = fmt::format("command[{}]", i);
        if (!arg.is_string()) type_error(field, arg, "a string", "convert with std.toString(x)");
        else r.command.push_back(arg.get<std::string>());
      }
      if (!r.command.empty() && r.command.front().empty()) error("command[0]", "the program name must not be empty");
    }
    bool has_image = member(v, "image") != nullptr, has_command = member(v, "command") && !(*member(v, "command")).empty();
    if (!has_image && !has_command)
      error("image", "a role needs an image, a command, or both",
            "add image: 'repo/name:tag' or command: ['program', 'arg']");
  }

  void env(const json& v, Role& r) {
    const json* e = object_field(v, "env", "env");
    if (!e) return;
    for (auto it = e->begin(); it != e->end(); ++it) {
      std::string field = "env." + it.key();
      if (!detail::is_env_name(it.key()))
        error(field, fmt::format("'{}' is not a valid environment variable name", it.key()),
              "use letters, digits, '_', '-' and '.', not starting with a digit");
      if (!it->is_string())
        type_error(field, *it, "a string", "environment values are strings: wrap the value in std.toString(...)");
      else r.env[it.key()] = it->get<std::string>();
    }
  }

  // cpu: a string parsed by parse_cpu, or a number of cores.
  std::optional<int64_t> cpu_value(const json& v, const std::string& field) {
    std::optional<int64_t> millis;
    if (v.is_string()) {
      auto parsed = parse_cpu(v.get<std::string>());
      if (!parsed) {
        error(field, parsed.error(), "write cores ('2', '0.5') or millicores ('500m')");
        return std::nullopt;
      }
      millis = *parsed;
    } else if (v.is_number()) {
      double m = v.get<double>() * 1000.0;
      if (!std::isfinite(m) || m < 0 || m > static_cast<double>(kMaxCpuMillis)) {
        error(field, fmt::format("{} cores is out of range: expected more than 0 and at most {} cores", json_preview(v),
                                 kMaxCpuMillis / 1000));
        return std::nullopt;
      }
      if (std::abs(m - std::round(m)) > 1e-6) {
        error(field, fmt::format("{} cores is not a whole number of millicores", json_preview(v)),
              "cpu is allocated in millicores: 0.001 cores is the smallest step");
        return std::nullopt;
      }
      millis = std::llround(m);
    } else {
      type_error(field, v, "a cpu quantity (string or number of cores)", "e.g. cpu: '2', cpu: 0.5 or cpu: '500m'");
      return std::nullopt;
    }
    if (*millis <= 0 || *millis > kMaxCpuMillis) {
      error(field, fmt::format("{} is out of range: expected more than 0 and at most {} cores", json_preview(v),
                               kMaxCpuMillis / 1000));
      return std::nullopt;
    }
    return millis;
  }

  // memory, disk, volume size: a string parsed by parse_bytes, or a number of bytes.
  std::optional<int64_t> bytes_value(const json& v, const std::string& field, int64_t lo, int64_t hi) {
    std::optional<int64_t> bytes;
    if (v.is_string()) {
      auto parsed = parse_bytes(v.get<std::string>());
      if (!parsed) {
        error(field, parsed.error(), "write bytes with a suffix, e.g. '512Mi', '8Gi' or '500M'");
        return std::nullopt;
      }
      bytes = *parsed;
    } else if (v.is_number_unsigned() || v.is_number_integer()) {
      if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) bytes = hi + 1;
      else bytes = v.get<int64_t>();
    } else if (v.is_number()) {
      double d = std::ceil(v.get<double>());
      bytes = !std::isfinite(d) || d > static_cast<double>(hi) ? hi + 1 : static_cast<int64_t>(d);
    } else {
      type_error(field, v, "a byte quantity (string or number of bytes)", "e.g. '8Gi', '512Mi' or 1073741824");
      return std::nullopt;
    }
    if (*bytes < lo || *bytes > hi) {
      error(field, fmt::format("{} is out of range: expected {} to {}", json_preview(v),
                               lo == 0 ? "0" : format_bytes(lo), format_bytes(hi)));
      return std::nullopt;
    }
    return bytes;
  }

  void resources(const json& v, Role& r) {
    const json* res = member(v, "resources");
    if (!res) {
      error("resources", "missing: every role declares the cpu and memory of one instance",
            "add resources: { cpu: '1', memory: '1Gi' }");
      return;
    }
    if (!res->is_object()) {
      type_error("resources", *res, "an object", "e.g. resources: { cpu: '1', memory: '1Gi' }");
      return;
    }
    check_fields(*res, "resources", {"cpu", "memory", "gpu", "disk"});
    if (const json* cpu = member(*res, "cpu")) {
      if (auto m = cpu_value(*cpu, "resources.cpu")) r.resources.cpu_millis = *m;
    } else {
      error("resources.cpu", "missing: every role declares its cpu", "e.g. cpu: '2' (cores) or cpu: '500m'");
    }
    if (const json* mem = member(*res, "memory")) {
      if (auto b = bytes_value(*mem, "resources.memory", 1, kMaxMemoryBytes)) r.resources.memory_bytes = *b;
    } else {
      error("resources.memory", "missing: every role declares its memory", "e.g. memory: '8Gi'");
    }
    if (const json* gpu = member(*res, "gpu")) {
      if (gpu->is_string()) {
        auto n = parse_count(gpu->get<std::string>());
        if (!n) error("resources.gpu", n.error(), "gpu is a whole number of devices");
        else if (*n > kMaxGpu) error("resources.gpu", fmt::format("{} is out of range: expected 0 to {}", *n, kMaxGpu));
        else r.resources.gpu = *n;
      } else if (auto n = int_value(*gpu, "resources.gpu", 0, kMaxGpu)) {
        r.resources.gpu = *n;
      }
    }
    if (const json* disk = member(*res, "disk"))
      if (auto b = bytes_value(*disk, "resources.disk", 0, kMaxDiskBytes)) r.resources.disk_bytes = *b;
  }

  // `limits: { cpu, memory, gpu, disk }` beside the requests in `resources`: each absent
  // key is its request, and no limit may be below its request (Kubernetes refuses such a
  // pod). A gpu limit must equal the request, as devices are not shared.
  void limits(const json& v, Role& r) {
    const json* lim = object_field(v, "limits", "limits");
    if (!lim) return;
    check_fields(*lim, "limits", {"cpu", "memory", "gpu", "disk"});
    Resources out = r.resources;
    auto check = [&](const char* key, std::optional<int64_t> value, int64_t request, auto format, int64_t& slot) {
      if (!value) return;
      if (*value < request)
        error(sub("limits", key), fmt::format("{} is below the request of {}", format(*value), format(request)),
              fmt::format("a limit is at least its request; raise limits.{0} or lower resources.{0}", key));
      else slot = *value;
    };
    if (const json* cpu = member(*lim, "cpu"))
      check("cpu", cpu_value(*cpu, "limits.cpu"), r.resources.cpu_millis, format_cpu, out.cpu_millis);
    if (const json* mem = member(*lim, "memory"))
      check("memory", bytes_value(*mem, "limits.memory", 1, kMaxMemoryBytes), r.resources.memory_bytes, format_bytes,
            out.memory_bytes);
    if (const json* disk = member(*lim, "disk"))
      check("disk", bytes_value(*disk, "limits.disk", 0, kMaxDiskBytes), r.resources.disk_bytes, format_bytes,
            out.disk_bytes);
    if (const json* gpu = member(*lim, "gpu"))
      if (auto n = int_value(*gpu, "limits.gpu", 0, kMaxGpu); n && *n != r.resources.gpu)
        error("limits.gpu", fmt::format("{} differs from the request of {}", *n, r.resources.gpu),
              "gpus are not shared: leave limits.gpu out, or make it equal to resources.gpu");
    if (out != r.resources) r.limits = out;
  }

  // `after: ['zookeeper']`: roles of this app that must be available first. Names are
  // checked here; that they exist and form no cycle is checked once all roles are read.
  void after(const json& v, Role& r) {
    const json* list = list_field(v, "after", "after");
    if (!list) return;
    std::set<std::string> seen;
    for (size_t i = 0; i < list->size(); ++i) {
      std::string field = fmt::format("after[{}]", i);
      const json& item = (*list)[i];
      if (!item.is_string()) {
        type_error(field, item, "a role name", "e.g. after: ['zookeeper']");
        continue;
      }
      std::string name = item.get<std::string>();
      if (name == m_role) error(field, "a role cannot wait for itself", "remove it from after");
      else if (!seen.insert(name).second) error(field, fmt::format("'{}' is listed twice", name));
    }
    if (seen.size() == list->size() && !seen.count(m_role)) r.after.assign(seen.begin(), seen.end());
  }

  bool check_label_key(const std::string& field, const std::string& key, bool instance_label) {
    if (!detail::is_label_key(key)) {
      error(field, fmt::format("'{}' is not a valid label key", key),
            "a key is NAME or PREFIX/NAME; NAME has 1-63 characters [A-Za-z0-9._-] and starts and ends "
            "alphanumeric; PREFIX is a DNS subdomain");
      return false;
    }
    if (instance_label && (std::find(kImplicitLabels.begin(), kImplicitLabels.end(), key) != kImplicitLabels.end() ||
                           key.starts_with("gaia.io/"))) {
      error(field, fmt::format("label key '{}' is reserved", key),
            "gaia sets app, role, tenant and version (and gaia.io/*) on every instance; choose another key");
      return false;
    }
    return true;
  }

  std::map<std::string, std::string> string_map(const json& v, std::string_view key, bool instance_labels) {
    std::map<std::string, std::string> out;
    std::string field{key};
    const json* m = object_field(v, key, field);
    if (!m) return out;
    for (auto it = m->begin(); it != m->end(); ++it) {
      std::string f = field + "." + it.key();
      bool ok = check_label_key(f, it.key(), instance_labels);
      if (!it->is_string()) {
        type_error(f, *it, "a string", "label values are strings: wrap the value in std.toString(...)");
        continue;
      }
      std::string value = it->get<std::string>();
      if (!detail::is_label_value(value)) {
        error(f, fmt::format("'{}' is not a valid label value", value),
              "a value is empty or has 1-63 characters [A-Za-z0-9._-], starting and ending alphanumeric");
        continue;
      }
      if (ok) out[it.key()] = value;
    }
    return out;
  }

  void affinity(const json& v, std::string_view key, bool anti, std::vector<AffinityTerm>& required,
                std::vector<AffinityTerm>& preferred) {
    std::string field{key};
    const json* a = object_field(v, key, field);
    if (!a) return;
    check_fields(*a, field, {"required", "preferred"});
    for (bool pref : {false, true}) {
      std::string list_name = pref ? "preferred" : "required";
      const json* terms = list_field(*a, list_name, field + "." + list_name);
      if (!terms) continue;
      for (size_t i = 0; i < terms->size(); ++i) {
        std::string f = fmt::format("{}.{}[{}]", field, list_name, i);
        if (auto t = term((*terms)[i], f, anti, pref)) (pref ? preferred : required).push_back(*t);
      }
    }
  }

  std::optional<AffinityTerm> term(const json& t, const std::string& field, bool anti, bool preferred) {
    if (!t.is_object()) {
      type_error(field, t, "an object", "a term is { target: 'instance', match_labels: { role: 'x' }, topology: 'node' }");
      return std::nullopt;
    }
    size_t errors_before = m_diags.size();
    check_fields(t, field, {"target", "match", "match_labels", "topology", "weight"});
    AffinityTerm out;
    out.target = AffinityTerm::Target::Instance;
    if (auto target = one_of(t, "target", field + ".target", {"node", "instance"})) {
      out.target = *target == "node" ? AffinityTerm::Target::Node : AffinityTerm::Target::Instance;
    } else if (!member(t, "target") && !anti) {
      error(field + ".target", "missing: an affinity term says what it matches",
            "target: 'node' matches node labels, target: 'instance' matches labels of other instances");
    }
    if (const json* match = list_field(t, "match", field + ".match")) {
      for (size_t i = 0; i < match->size(); ++i)
        if (auto req = requirement((*match)[i], fmt::format("{}.match[{}]", field, i))) out.match.push_back(*req);
    }
    if (const json* labels = object_field(t, "match_labels", field + ".match_labels")) {
      for (auto it = labels->begin(); it != labels->end(); ++it) {
        std::string f = field + ".match_labels." + it.key();
        check_label_key(f, it.key(), false);
        if (!it->is_string()) type_error(f, *it, "a string");
        else out.match.push_back({it.key(), "In", {it->get<std::string>()}});
      }
    }
    if (!member(t, "match") && !member(t, "match_labels"))
      error(field, "the term matches nothing: give match or match_labels",
            "e.g. match_labels: { role: 'datanode' } or match: [{ key: 'zone', op: 'In', values: ['z1'] }]");
    if (auto topo = one_of(t, "topology", field + ".topology", kTopologies)) out.topology = *topo;
    if (out.target == AffinityTerm::Target::Node && out.topology != "node")
      error(field + ".topology", fmt::format("topology '{}' applies to instance terms only", out.topology),
            "a node term matches the labels of the node itself: drop topology or use target: 'instance'");
    const json* weight = member(t, "weight");
    if (preferred) {
      if (!weight) error(field + ".weight", "missing: preferred terms need a weight from 1 to 100", "e.g. weight: 50");
      else if (auto w = int_value(*weight, field + ".weight", 1, 100)) out.weight = static_cast<int>(*w);
    } else if (weight) {
      error(field + ".weight", "weight applies to preferred terms only", "move the term to preferred, or drop weight");
    }
    if (m_diags.size() != errors_before) return std::nullopt;
    return out;
  }

  std::optional<LabelRequirement> requirement(const json& m, const std::string& field) {
    if (!m.is_object()) {
      type_error(field, m, "an object", "e.g. { key: 'zone', op: 'In', values: ['z1'] }");
      return std::nullopt;
    }
    check_fields(m, field, {"key", "op", "values"});
    LabelRequirement req;
    auto key = string_field(m, "key", field + ".key");
    if (!key && !member(m, "key")) error(field + ".key", "missing: a requirement names a label key");
    if (key) {
      check_label_key(field + ".key", *key, false);
      req.key = *key;
    }
    if (auto op = one_of(m, "op", field + ".op", {"In", "NotIn", "Exists", "DoesNotExist"})) req.op = *op;
    else if (member(m, "op")) return std::nullopt;
    if (const json* values = list_field(m, "values", field + ".values")) {
      for (size_t i = 0; i < values->size(); ++i) {
        const json& val = (*values)[i];
        if (!val.is_string()) type_error(fmt::format("{}.values[{}]", field, i), val, "a string");
        else req.values.push_back(val.get<std::string>());
      }
    }
    bool set_op = req.op == "In" || req.op == "NotIn";
    if (set_op && req.values.empty() && !member(m, "values"))
      error(field + ".values", fmt::format("missing: op {} needs a non-empty list of values", req.op));
    else if (set_op && member(m, "values") && member(m, "values")->empty())
      error(field + ".values", fmt::format("op {} needs a non-empty list of values", req.op));
    else if (!set_op && member(m, "values") && !member(m, "values")->empty())
      error(field + ".values", fmt::format("op {} takes no values", req.op), "drop values, or use op In / NotIn");
    std::sort(req.values.begin(), req.values.end());
    return key ? std::optional(req) : std::nullopt;
  }

  void ports(const json& v, Role& r) {
    const json* list = list_field(v, "ports", "ports");
    if (!list) return;
    std::map<std::string, size_t> names;
    std::map<std::pair<int, std::string>, size_t> numbers;
    for (size_t i = 0; i < list->size(); ++i) {
      const json& p = (*list)[i];
      std::string field = fmt::format("ports[{}]", i);
      if (!p.is_object()) {
        type_error(field, p, "an object", "e.g. { name: 'rpc', port: 8020 }");
        continue;
      }
      check_fields(p, field, {"name", "port", "protocol"});
      Port port;
      size_t errors_before = m_diags.size();
      if (const json* name = member(p, "name"); name && name->is_string() &&
          std::find(m_declared_ports.begin(), m_declared_ports.end(), name->get_ref<const std::string&>()) == m_declared_ports.end())
        m_declared_ports.push_back(name->get<std::string>());
      if (auto name = string_field(p, "name", field + ".name")) {
        if (std::string problem = spec::dns_label_problem(*name); !problem.empty())
          error(field + ".name", fmt::format("'{}' is not a valid port name: {}", *name, problem),
                "port names are DNS labels such as 'rpc' or 'http-admin'");
        else if (auto it = names.find(*name); it != names.end())
          error(field + ".name", fmt::format("port name '{}' is already used by ports[{}]", *name, it->second),
                "give each port a distinct name");
        else names[*name] = i;
        port.name = *name;
      } else if (!member(p, "name")) {
        error(field + ".name", "missing: every port has a name", "health checks and outputs refer to ports by name");
      }
      if (auto n = int_field(p, "port", field + ".port", 0, 65535)) port.port = static_cast<int>(*n);
      else if (!member(p, "port")) error(field + ".port", "missing: give a port number, or 0 to allocate one");
      if (auto proto = one_of(p, "protocol", field + ".protocol", {"TCP", "UDP"})) port.protocol = *proto;
      if (port.port != 0) {
        auto key = std::pair(port.port, port.protocol);
        if (auto it = numbers.find(key); it != numbers.end())
          error(field + ".port", fmt::format("{}/{} is already used by ports[{}]", port.port, port.protocol, it->second));
        else numbers[key] = i;
      }
      if (m_diags.size() == errors_before) r.ports.push_back(port);
    }
  }

  void volumes(const json& v, Role& r) {
    const json* list = list_field(v, "volumes", "volumes");
    if (!list) return;
    std::map<std::string, size_t> names, mounts;
    for (size_t i = 0; i < list->size(); ++i) {
      const json& vol = (*list)[i];
      std::string field = fmt::format("volumes[{}]", i);
      if (!vol.is_object()) {
        type_error(field, vol, "an object", "e.g. { name: 'data', size: '100Gi', class: 'ssd', mount: '/data' }");
        continue;
      }
      check_fields(vol, field, {"name", "size", "class", "iops", "mount"});
      Volume out;
      size_t errors_before = m_diags.size();
      if (auto name = string_field(vol, "name", field + ".name")) {
        if (std::string problem = spec::dns_label_problem(*name); !problem.empty())
          error(field + ".name", fmt::format("'{}' is not a valid volume name: {}", *name, problem));
        else if (auto it = names.find(*name); it != names.end())
          error(field + ".name", fmt::format("duplicate volume name '{}' (also volumes[{}])", *name, it->second),
                "give each volume a distinct name");
        else names[*name] = i;
        out.name = *name;
      } else if (!member(vol, "name")) {
        error(field + ".name", "missing: every volume has a name");
      }
      if (const json* size = member(vol, "size")) {
        if (auto b = bytes_value(*size, field + ".size", 1, kMaxDiskBytes)) out.size_bytes = *b;
      } else {
        error(field + ".size", "missing: give the volume size", "e.g. size: '100Gi'");
      }
      // Any class name: the cluster says which it has, so submit and plan check the name
      // against it (ops::check_storage_classes); here only its form.
      if (auto cls = string_field(vol, "class", field + ".class")) {
        if (std::string problem = storage_class_name_problem(*cls); !problem.empty())
          error(field + ".class", fmt::format("'{}' is not a valid storage class name: {}", *cls, problem),
                "name a class of the cluster, e.g. class: 'ssd' (gaia cluster show lists them)");
        else out.storage_class = *cls;
      }
      if (auto iops = int_field(vol, "iops", field + ".iops", 0, kMaxIops)) out.iops = *iops;
      out.mount_path = "/data/" + out.name;
      if (auto mount = string_field(vol, "mount", field + ".mount")) {
        if (!mount->starts_with("/") || mount->find_first_of(" \t\n:") != std::string::npos)
          error(field + ".mount", fmt::format("'{}' is not an absolute path", *mount), "e.g. mount: '/data'");
        else out.mount_path = *mount;
      }
      if (m_diags.size() != errors_before) continue;
      if (auto it = mounts.find(out.mount_path); it != mounts.end()) {
        error(field + ".mount", fmt::format("'{}' is also the mount of volumes[{}]", out.mount_path, it->second));
        continue;
      }
      mounts[out.mount_path] = i;
      r.volumes.push_back(out);
    }
  }

  void near(const json& v, Role& r) {
    auto text = string_field(v, "near", "near");
    if (!text) return;
    size_t slash = text->find('/');
    std::vector<std::string> aliases;
    for (const auto& d : m_spec.dependencies) aliases.push_back(d.alias);
    std::string alias_hint = aliases.empty()
                                 ? fmt::format("app {} has no dependencies: add the app to dependencies in app.yaml", m_spec.name)
                                 : fmt::format("dependency aliases: {}", join(aliases));
    if (slash == std::string::npos || text->find('/', slash + 1) != std::string::npos) {
      error("near", fmt::format("'{}' is not '<dependency alias>/<role>'", *text), alias_hint);
      return;
    }
    std::string alias = text->substr(0, slash), role = text->substr(slash + 1);
    auto dep = std::find_if(m_spec.dependencies.begin(), m_spec.dependencies.end(),
                            [&](const spec::Dependency& d) { return d.alias == alias; });
    if (dep == m_spec.dependencies.end()) {
      std::string hint = alias_hint;
      if (auto best = spec::did_you_mean(alias, aliases)) hint = fmt::format("did you mean '{}'? {}", *best, alias_hint);
      error("near", fmt::format("'{}' is not a dependency alias of app {}", alias, m_spec.name), hint);
      return;
    }
    if (std::string problem = spec::dns_label_problem(role); !problem.empty()) {
      error("near", fmt::format("'{}' is not a valid role name: {}", role, problem));
      return;
    }
    // `near` means the instances of the release the dependency is bound to.
    auto bound = m_dep_releases.find(alias);
    std::string release = bound != m_dep_releases.end() ? bound->second : dep->release.empty() ? dep->name : dep->release;
    if (release.find('/') != std::string::npos || (!dep->tenant.empty() && dep->tenant != m_tenant)) {
      // The scheduler places near instances of the same tenant only.
      error("near", fmt::format("'{}' is bound to a release of tenant {}: near works within a tenant", alias,
                                dep->tenant.empty() ? release.substr(0, release.find('/')) : dep->tenant),
            "drop near, or depend on a release of this tenant");
      return;
    }
    r.near = release + "/" + role;
  }

  void network(const json& v, Role& r) {
    const json* n = object_field(v, "network", "network");
    if (!n) return;
    check_fields(*n, "network", {"subnet", "topology"});
    if (auto subnet = string_field(*n, "subnet", "network.subnet")) {
      if (auto cidr = detail::canonical_cidr(*subnet)) r.required_subnet = *cidr;
      else error("network.subnet", cidr.error(), "e.g. subnet: '10.1.0.0/16'");
    }
    if (auto topo = string_field(*n, "topology", "network.topology")) {
      size_t eq = topo->find('=');
      std::string key = eq == std::string::npos ? *topo : topo->substr(0, eq);
      std::string value = eq == std::string::npos ? "" : topo->substr(eq + 1);
      if (eq == std::string::npos || std::find(kTopologies.begin(), kTopologies.end(), key) == kTopologies.end() ||
          value.empty() || !detail::is_label_value(value))
        error("network.topology", fmt::format("'{}' is not LEVEL=NAME with LEVEL one of {}", *topo, join(kTopologies)),
              "e.g. topology: 'zone=z1'");
      else r.required_topology = *topo;
    }
  }

  void restart(const json& v, Role& r) {
    const json* n = object_field(v, "restart", "restart");
    if (!n) return;
    check_fields(*n, "restart", {"retry_times", "backoff"});
    if (auto t = int_field(*n, "retry_times", "restart.retry_times", 0, kMaxRetries)) r.retry_times = static_cast<int>(*t);
    if (auto ms = duration_field(*n, "backoff", "restart.backoff", 1, 0, 3'600'000)) r.backoff_ms = static_cast<int>(*ms);
  }

  void migration(const json& v, Role& r) {
    const json* n = object_field(v, "migration", "migration");
    if (!n) return;
    check_fields(*n, "migration", {"migrate_times", "min_available"});
    if (auto t = int_field(*n, "migrate_times", "migration.migrate_times", 0, kMaxRetries))
      r.migrate_times = static_cast<int>(*t);
    if (auto m = int_field(*n, "min_available", "migration.min_available", 0, kMaxReplicas)) {
      if (*m > r.replicas)
        error("migration.min_available", fmt::format("{} is more than the role's {} replicas", *m, r.replicas),
              "min_available counts instances that stay up while others move");
      else r.min_available = static_cast<int>(*m);
    }
  }

  void health(const json& v, Role& r) {
    const json* h = object_field(v, "health", "health");
    if (!h) return;
    check_fields(*h, "health", {"type", "target", "period", "timeout", "failure_threshold"});
    HealthCheck out;
    auto type = one_of(*h, "type", "health.type", {"tcp", "http", "exec"});
    if (!type && !member(*h, "type"))
      error("health.type", "missing: tcp, http or exec", "e.g. health: { type: 'tcp', target: 'rpc' }");
    auto target = string_field(*h, "target", "health.target");
    if (!target && !member(*h, "target"))
      error("health.target", "missing: a port name (tcp), PORT/PATH (http) or a shell command (exec)");
    if (type && target) {
      // Checked against every declared name, also of ports with other errors, so one
      // mistake in a port does not show up a second time here.
      std::string port = *type == "http" ? target->substr(0, target->find('/')) : *target;
      const std::vector<std::string>& port_names = m_declared_ports;
      bool known = std::find(port_names.begin(), port_names.end(), port) != port_names.end();
      if (*type == "exec" ? target->empty() : !known)
        error("health.target",
              *type == "exec" ? "the command must not be empty"
                              : fmt::format("'{}' is not a port of the role", port),
              *type == "exec" ? "e.g. target: 'pgrep java'"
              : port_names.empty()
                  ? "declare the port under ports first"
                  : fmt::format("ports: {}{}", join(port_names), *type == "http" ? " (http target is PORT/PATH)" : ""));
      out.type = *type;
      out.target = *target;
    }
    if (auto p = duration_field(*h, "period", "health.period", 1000, 1, 3600)) out.period_s = static_cast<int>(*p);
    if (auto t = duration_field(*h, "timeout", "health.timeout", 1000, 1, 3600)) out.timeout_s = static_cast<int>(*t);
    if (auto f = int_field(*h, "failure_threshold", "health.failure_threshold", 1, 100))
      out.failure_threshold = static_cast<int>(*f);
    r.health = out;
  }

  const spec::AppSpec& m_spec;
  const std::string& m_file;
  std::string m_role;
  Diagnostics& m_diags;
  const std::map<std::string, std::string>& m_dep_releases;
  const std::string& m_tenant;
  std::vector<std::string> m_declared_ports;
};

}  // namespace

Result<Workload> validate_workload(const spec::AppSpec& spec, const std::string& tenant, const RawRender& raw,
                                   const std::string& release, const std::map<std::string, std::string>& dep_releases) {
  Diagnostics diags;
  const std::string file = detail::main_jsonnet_path(spec);
  auto app_error = [&](std::string path, std::string message, std::string hint) {
    Diagnostic d;
    d.location.file = file;
    d.message = path.empty() ? fmt::format("app {}: {}", spec.name, message)
                             : fmt::format("app {}: {}: {}", spec.name, path, message);
    d.path = std::move(path);
    d.hint = std::move(hint);
    diags.push_back(std::move(d));
  };

  Workload w;
  w.app = release.empty() ? spec.name : release;
  w.version = spec.version.to_string();
  w.tenant = tenant;
  w.priority = spec.priority;
  w.config = raw.config;
  w.reads = raw.reads;
  std::stable_sort(w.reads.begin(), w.reads.end(), [](const ConfigRead& a, const ConfigRead& b) {
    return std::tie(a.kind, a.key) < std::tie(b.kind, b.key);
  });

  const json& main = raw.main;
  if (!main.is_object()) {
    app_error("", fmt::format("main.jsonnet returned {} ({}): expected an object {{ roles: {{...}}, outputs: {{...}} }}",
                              json_preview(main), json_type_name(main)),
              "main.jsonnet is function(config, deps, app) { roles: {...}, outputs: {...} }");
    return fail(diags);
  }
  const std::vector<std::string> top = {"roles", "outputs"};
  for (auto it = main.begin(); it != main.end(); ++it)
    if (std::find(top.begin(), top.end(), it.key()) == top.end())
      app_error(it.key(), "unknown field in main.jsonnet's result", detail::did_you_mean_hint(it.key(), top));

  auto roles = main.find("roles");
  if (roles == main.end() || roles->is_null()) {
    app_error("roles", "missing: main.jsonnet's result has no roles", "return { roles: { name: { ... } }, outputs: {} }");
  } else if (!roles->is_object()) {
    app_error("roles", fmt::format("expected an object of roles, got {}", json_type_name(*roles)),
              "roles maps role names to roles: roles: { namenode: { ... } }");
  } else {
    for (auto it = roles->begin(); it != roles->end(); ++it) {
      if (std::string problem = spec::dns_label_problem(it.key()); !problem.empty()) {
        std::string suggestion = spec::suggest_dns_label(it.key());
        app_error("roles." + it.key(), fmt::format("'{}' is not a valid role name: {}", it.key(), problem),
                  suggestion.empty() ? "role names are DNS labels: a-z, 0-9 and '-'"
                                     : fmt::format("role names are DNS labels: try '{}'", suggestion));
      }
      RoleValidator validator(spec, file, it.key(), diags, dep_releases, tenant);
      w.roles.push_back(validator.run(it.value()));
    }
  }

  check_start_order(spec, file, w.roles, diags);

  // Outputs are exactly what app.yaml declares: dependents import them by name, so a
  // missing one breaks them and an undeclared one could never be imported.
  auto outputs = main.find("outputs");
  std::string declared = spec.outputs.empty() ? "app.yaml declares no outputs" : "declared outputs: " + spec::join_limited(spec.outputs);
  if (outputs != main.end() && !outputs->is_null() && !outputs->is_object()) {
    app_error("outputs", fmt::format("expected an object, got {}", json_type_name(*outputs)), declared);
  } else {
    json given = outputs == main.end() || outputs->is_null() ? json::object() : *outputs;
    for (const auto& name : spec.outputs)
      if (!given.contains(name))
        app_error("outputs." + name, "missing: app.yaml declares this output but main.jsonnet does not set it",
                  fmt::format("add outputs: {{ {}: ... }} to main.jsonnet's result", name));
    for (auto it = given.begin(); it != given.end(); ++it)
      if (std::find(spec.outputs.begin(), spec.outputs.end(), it.key()) == spec.outputs.end())
        app_error("outputs." + it.key(), "not declared in app.yaml's outputs",
                  fmt::format("add it to outputs in app.yaml, or remove it; {}", declared));
    w.outputs = given;
  }

  if (!diags.empty()) return fail(std::move(diags));
  return w;
}

}  // namespace gaia::render
