#include "lib/instance_scan.hpp"

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>

#include "lib/priority.hpp"

namespace gaia {

namespace {

// A cursor over one record. Every reader returns false when the text is not of the
// shape the fast path follows; the record is then decoded the slow way, which gives
// the same result or the same error.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : m_text(text) {}

  void skip_space() {
    while (m_pos < m_text.size() &&
           (m_text[m_pos] == ' ' || m_text[m_pos] == '\t' || m_text[m_pos] == '\n' || m_text[m_pos] == '\r'))
      ++m_pos;
  }

  bool eat(char c) {
    skip_space();
    if (m_pos >= m_text.size() || m_text[m_pos] != c) return false;
    ++m_pos;
    return true;
  }

  // Whether the next token is `c`, without taking it.
  bool next_is(char c) {
    skip_space();
    return m_pos < m_text.size() && m_text[m_pos] == c;
  }

  bool at_end() {
    skip_space();
    return m_pos == m_text.size();
  }

  // A string of printable ASCII without escapes, as gaia writes names: anything else
  // (an escape, a control character that JSON forbids, UTF-8 that must be validated)
  // goes the slow way.
  bool string(std::string_view& out) {
    if (!eat('"')) return false;
    size_t start = m_pos;
    while (m_pos < m_text.size()) {
      auto c = static_cast<unsigned char>(m_text[m_pos]);
      if (c == '"') {
        out = m_text.substr(start, m_pos - start);
        ++m_pos;
        return true;
      }
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
      ++m_pos;
    }
    return false;
  }

  bool string(std::string& out) {
    std::string_view v;
    if (!string(v)) return false;
    out.assign(v);
    return true;
  }

  // An integer within [lo, hi]. A fraction or an exponent (which nlohmann converts) and
  // anything out of range (which it would wrap) go the slow way.
  bool integer(int64_t& out, int64_t lo = std::numeric_limits<int64_t>::min(),
               int64_t hi = std::numeric_limits<int64_t>::max()) {
    skip_space();
    size_t start = m_pos;
    if (m_pos < m_text.size() && m_text[m_pos] == '-') ++m_pos;
    size_t digits = m_pos;
    while (m_pos < m_text.size() && m_text[m_pos] >= '0' && m_text[m_pos] <= '9') ++m_pos;
    if (m_pos == digits) return false;
    // JSON allows no leading zeros ("01"); nlohmann rejects them.
    if (m_text[digits] == '0' && m_pos - digits > 1) return false;
    if (m_pos < m_text.size() && (m_text[m_pos] == '.' || m_text[m_pos] == 'e' || m_text[m_pos] == 'E')) return false;
    int64_t v = 0;
    auto [end, ec] = std::from_chars(m_text.data() + start, m_text.data() + m_pos, v);
    if (ec != std::errc() || end != m_text.data() + m_pos || v < lo || v > hi) return false;
    out = v;
    return true;
  }

  bool integer(int& out) {
    int64_t v = 0;
    if (!integer(v, std::numeric_limits<int>::min(), std::numeric_limits<int>::max())) return false;
    out = static_cast<int>(v);
    return true;
  }

  bool boolean(bool& out) {
    skip_space();
    if (m_text.substr(m_pos, 4) == "true") {
      m_pos += 4;
      out = true;
      return true;
    }
    if (m_text.substr(m_pos, 5) == "false") {
      m_pos += 5;
      out = false;
      return true;
    }
    return false;
  }

  // An object: `member(key)` reads each member's value (false: not followed).
  template <class Member>
  bool object(Member&& member) {
    if (!eat('{')) return false;
    if (eat('}')) return true;
    for (;;) {
      std::string_view key;
      if (!string(key) || !eat(':') || !member(key)) return false;
      if (eat('}')) return true;
      if (!eat(',')) return false;
    }
  }

  template <class Element>
  bool array(Element&& element) {
    if (!eat('[')) return false;
    if (eat(']')) return true;
    for (;;) {
      if (!element()) return false;
      if (eat(']')) return true;
      if (!eat(',')) return false;
    }
  }

 private:
  std::string_view m_text;
  size_t m_pos = 0;
};

// Resources as NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT reads them: missing
// fields keep their defaults. Other keys (which it ignores) go the slow way.
bool scan_resources(Scanner& s, Resources& r) {
  r = Resources{};
  return s.object([&](std::string_view key) {
    if (key == "cpu_millis") return s.integer(r.cpu_millis);
    if (key == "memory_bytes") return s.integer(r.memory_bytes);
    if (key == "gpu") return s.integer(r.gpu);
    if (key == "disk_bytes") return s.integer(r.disk_bytes);
    return false;
  });
}

bool scan_volume(Scanner& s, VolumeBinding& v) {
  v = VolumeBinding{};
  return s.object([&](std::string_view key) {
    if (key == "volume") return s.string(v.volume);
    if (key == "node") return s.string(v.node);
    if (key == "group") return s.string(v.group);
    if (key == "size_bytes") return s.integer(v.size_bytes);
    if (key == "iops") return s.integer(v.iops);
    return false;
  });
}

// The names NLOHMANN_JSON_SERIALIZE_ENUM(InstanceState) writes. nlohmann reads an
// unknown name as the first state; that (corrupt) case goes the slow way.
bool scan_state(Scanner& s, InstanceState& state) {
  std::string_view name;
  if (!s.string(name)) return false;
  for (auto st : {InstanceState::Pending, InstanceState::Placed, InstanceState::Running, InstanceState::Failed,
                  InstanceState::Succeeded, InstanceState::Terminating})
    if (instance_state_name(st) == name) {
      state = st;
      return true;
    }
  return false;
}

bool scan_optional_resources(Scanner& s, std::optional<Resources>& out) {
  Resources r;
  if (!scan_resources(s, r)) return false;
  out = r;
  return true;
}

bool scan_member(Scanner& s, std::string_view key, Instance& i) {
  switch (key.empty() ? '\0' : key.front()) {
    case 'a':
      if (key == "app") return s.string(i.app);
      if (key == "address") return s.string(i.address);
      break;
    case 'e':
      if (key == "exit_code") return s.integer(i.exit_code);
      break;
    case 'f':
      if (key == "failure") return s.string(i.failure);
      break;
    case 'g':
      if (key == "generation") return s.integer(i.generation);
      break;
    case 'h':
      if (key == "hash") return s.string(i.hash);
      break;
    case 'i':
      if (key == "internal_failure") return s.boolean(i.internal_failure);
      break;
    case 'l':
      if (key == "labels") {
        i.labels.clear();
        return s.object([&](std::string_view k) {
          std::string v;
          if (!s.string(v)) return false;
          i.labels.insert_or_assign(std::string(k), std::move(v));
          return true;
        });
      }
      if (key == "limit") return scan_optional_resources(s, i.limit);
      break;
    case 'm':
      if (key == "migrations") return s.integer(i.migrations);
      break;
    case 'n':
      if (key == "node") return s.string(i.node);
      break;
    case 'o':
      if (key == "ordinal") return s.integer(i.ordinal);
      break;
    case 'p':
      if (key == "pending_reason") return s.string(i.pending_reason);
      if (key == "priority") {
        std::string_view text;
        if (!s.string(text)) return false;
        auto p = parse_priority(text);
        if (!p) return false;  // The slow way reports the corrupt record.
        i.priority = *p;
        return true;
      }
      if (key == "ports") {
        i.ports.clear();
        return s.object([&](std::string_view k) {
          int port = 0;
          if (!s.integer(port)) return false;
          i.ports.insert_or_assign(std::string(k), port);
          return true;
        });
      }
      break;
    case 'r':
      if (key == "role") return s.string(i.role);
      if (key == "request") return scan_resources(s, i.request);
      if (key == "reservation") return scan_optional_resources(s, i.reservation);
      if (key == "restarts") return s.integer(i.restarts);
      if (key == "restart_at_ms") return s.integer(i.restart_at_ms);
      break;
    case 's':
      if (key == "state") return scan_state(s, i.state);
      if (key == "started_ms") return s.integer(i.started_ms);
      if (key == "snapped_back_ms") return s.integer(i.snapped_back_ms);
      break;
    case 't':
      if (key == "tenant") return s.string(i.tenant);
      if (key == "throttled") return s.boolean(i.throttled);
      break;
    case 'u':
      if (key == "usage") return scan_optional_resources(s, i.usage);
      break;
    case 'v':
      if (key == "volumes") {
        i.volumes.clear();
        return s.array([&] {
          VolumeBinding v;
          if (!scan_volume(s, v)) return false;
          i.volumes.push_back(std::move(v));
          return true;
        });
      }
      break;
    default:
      break;
  }
  return false;  // A key from_json does not read: the slow way ignores it correctly.
}

}  // namespace

std::optional<Instance> scan_instance(std::string_view text) {
  Scanner s(text);
  Instance i;
  if (!s.next_is('{')) return std::nullopt;
  if (!s.object([&](std::string_view key) { return scan_member(s, key, i); })) return std::nullopt;
  if (!s.at_end()) return std::nullopt;
  return i;
}

}  // namespace gaia
