#include "lib/record_encode.hpp"

#include <charconv>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lib/codec.hpp"

namespace gaia {

namespace {

// Writes one object's fields in the order given, which callers keep sorted as
// nlohmann's std::map-backed objects print them. Any string with a byte outside ASCII
// marks the record for the slow path (nlohmann validates UTF-8 and throws on bad input).
class Writer {
 public:
  explicit Writer(std::string& out) : m_out(out) {}

  bool ascii() const { return m_ascii; }

  void open() {
    m_out.push_back('{');
    m_first = true;
  }
  void close() {
    m_out.push_back('}');
    m_first = false;
  }
  void key(std::string_view k) {
    if (!m_first) m_out.push_back(',');
    m_first = false;
    m_out.push_back('"');
    m_out.append(k);
    m_out.append("\":");
  }
  // A key from data (a label, a port name): escaped as any string.
  void data_key(std::string_view k) {
    if (!m_first) m_out.push_back(',');
    m_first = false;
    string(k);
    m_out.push_back(':');
  }
  void string(std::string_view s) {
    m_out.push_back('"');
    size_t plain = 0;
    for (size_t k = 0; k < s.size(); ++k) {
      unsigned char c = static_cast<unsigned char>(s[k]);
      if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) continue;
      m_out.append(s.substr(plain, k - plain));
      plain = k + 1;
      switch (c) {
        case '"': m_out.append("\\\""); break;
        case '\\': m_out.append("\\\\"); break;
        case '\b': m_out.append("\\b"); break;
        case '\f': m_out.append("\\f"); break;
        case '\n': m_out.append("\\n"); break;
        case '\r': m_out.append("\\r"); break;
        case '\t': m_out.append("\\t"); break;
        default:
          if (c >= 0x80) {
            m_ascii = false;
            m_out.push_back(static_cast<char>(c));
          } else {
            static constexpr char kHex[] = "0123456789abcdef";
            m_out.append("\\u00");
            m_out.push_back(kHex[c >> 4]);
            m_out.push_back(kHex[c & 0xF]);
          }
      }
    }
    m_out.append(s.substr(plain));
    m_out.push_back('"');
  }
  void integer(int64_t v) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    m_out.append(buf, static_cast<size_t>(end - buf));
  }
  void boolean(bool v) { m_out.append(v ? "true" : "false"); }

  void field(std::string_view k, std::string_view s) {
    key(k);
    string(s);
  }
  void field(std::string_view k, int64_t v) {
    key(k);
    integer(v);
  }
  void resources(std::string_view k, const Resources& r) {
    key(k);
    open();
    field("cpu_millis", r.cpu_millis);
    field("disk_bytes", r.disk_bytes);
    field("gpu", r.gpu);
    field("memory_bytes", r.memory_bytes);
    close();
  }

 private:
  std::string& m_out;
  bool m_first = true;
  bool m_ascii = true;
};

std::string_view state_name(InstanceState s) {
  // What NLOHMANN_JSON_SERIALIZE_ENUM writes for a value it does not list: the first.
  std::string_view name = instance_state_name(s);
  return name == "?" ? "Pending" : name;
}

}  // namespace

std::string encode_instance(const Instance& i) {
  std::string out;
  out.reserve(512);
  Writer w(out);
  w.open();
  w.field("address", i.address);
  w.field("app", i.app);
  if (i.exit_code) w.field("exit_code", i.exit_code);
  if (!i.failure.empty()) w.field("failure", i.failure);
  if (i.generation) w.field("generation", i.generation);
  if (!i.hash.empty()) w.field("hash", i.hash);
  if (i.internal_failure) {
    w.key("internal_failure");
    w.boolean(true);
  }
  w.key("labels");
  w.open();
  for (const auto& [k, v] : i.labels.map()) {
    w.data_key(k);
    w.string(v);
  }
  w.close();
  if (i.limit) w.resources("limit", *i.limit);
  w.field("migrations", i.migrations);
  w.field("node", i.node);
  w.field("ordinal", i.ordinal);
  w.field("pending_reason", i.pending_reason);
  w.key("ports");
  w.open();
  for (const auto& [name, port] : i.ports) {
    w.data_key(name);
    w.integer(port);
  }
  w.close();
  w.field("priority", i.priority.to_string());
  w.resources("request", i.request);
  if (i.reservation) w.resources("reservation", *i.reservation);
  if (i.restart_at_ms) w.field("restart_at_ms", i.restart_at_ms);
  w.field("restarts", i.restarts);
  w.field("role", i.role);
  if (i.snapped_back_ms) w.field("snapped_back_ms", i.snapped_back_ms);
  if (i.started_ms) w.field("started_ms", i.started_ms);
  w.field("state", state_name(i.state));
  w.field("tenant", i.tenant);
  if (i.throttled) {
    w.key("throttled");
    w.boolean(true);
  }
  if (i.usage) w.resources("usage", *i.usage);
  w.key("volumes");
  out.push_back('[');
  for (size_t k = 0; k < i.volumes.size(); ++k) {
    if (k) out.push_back(',');
    const VolumeBinding& v = i.volumes[k];
    w.open();
    w.field("group", v.group);
    w.field("iops", v.iops);
    w.field("node", v.node);
    w.field("size_bytes", v.size_bytes);
    w.field("volume", v.volume);
    w.close();
  }
  out.push_back(']');
  w.close();
  if (!w.ascii()) return nlohmann::json(i).dump();
  return out;
}

std::string encode_event(const TimelineEvent& e) {
  std::string out;
  out.reserve(256);
  Writer w(out);
  w.open();
  if (!e.app.empty()) w.field("app", e.app);
  if (!e.instance.empty()) w.field("instance", e.instance);
  w.field("message", e.message);
  if (!e.node.empty()) w.field("node", e.node);
  w.field("op", e.op);
  w.field("reason", e.reason);
  if (!e.role.empty()) w.field("role", e.role);
  w.field("seq", e.seq);
  if (!e.tenant.empty()) w.field("tenant", e.tenant);
  w.field("time", e.time);
  w.field("type", e.type);
  w.close();
  if (!w.ascii()) return nlohmann::json(e).dump();
  return out;
}

}  // namespace gaia
