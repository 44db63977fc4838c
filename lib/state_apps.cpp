// State::load_apps: what `gaia get apps` reads (lib/state.hpp). A full load decodes
// every instance record into an Instance (labels, ports, resources...) and the listing
// then needs three strings of each; at 100,000 instances the decoding was most of the
// command's time. Here an instance record is scanned for its top-level tenant, app and
// state only, and a record the scan does not understand is decoded as a full load
// would, so the counts are the same for every record a full load accepts.
#include <cstring>
#include <iterator>

#include "lib/codec.hpp"
#include "lib/journal.hpp"
#include "lib/state.hpp"
#include "lib/state_apply.hpp"

namespace gaia {

int AppsState::serving_count(const std::string& id) const {
  auto it = serving.find(id);
  return it == serving.end() ? 0 : it->second;
}

AppsState apps_state_of(const ClusterState& state) {
  AppsState out;
  out.apps = state.apps;
  out.revision = state.revision;
  for (const auto& i : state.snapshot.instances)
    if (serving(i)) ++out.serving[i.tenant + "/" + i.app];
  return out;
}

namespace {

// Instances read per request when the store has no preference of its own: bounded, so a
// million instances never sit in memory at once.
constexpr size_t k_apps_instance_page = 20000;

// The top-level fields of an instance record the count needs.
struct InstanceHead {
  std::string_view tenant, app, state;
  bool has_tenant = false, has_app = false, has_state = false;
};

size_t skip_json_space(std::string_view s, size_t at) {
  while (at < s.size() && (s[at] == ' ' || s[at] == '\n' || s[at] == '\r' || s[at] == '\t')) ++at;
  return at;
}

// `at` is just past an opening quote: the position of the closing one, or npos. Sets
// `escaped` when the string holds a backslash escape anywhere.
size_t json_string_end(std::string_view s, size_t at, bool& escaped) {
  const size_t start = at;
  for (;;) {
    const void* q = std::memchr(s.data() + at, '"', s.size() - at);
    if (!q) return std::string_view::npos;
    size_t end = static_cast<size_t>(static_cast<const char*>(q) - s.data());
    size_t slashes = 0;
    while (end - slashes > at && s[end - slashes - 1] == '\\') ++slashes;
    if (slashes % 2 == 0) {
      escaped = std::memchr(s.data() + start, '\\', end - start) != nullptr;
      return end;
    }
    at = end + 1;
  }
}

// `at` is on the first character of a value: the position just past it, or npos.
size_t skip_json_value(std::string_view s, size_t at) {
  int depth = 0;
  bool escaped = false;
  while (at < s.size()) {
    char c = s[at];
    if (c == '"') {
      at = json_string_end(s, at + 1, escaped);
      if (at == std::string_view::npos) return at;
      ++at;
      if (depth == 0) return at;
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return at;  // The end of the enclosing object: a scalar ended here.
      if (--depth == 0) return at + 1;
    } else if (c == ',' && depth == 0) {
      return at;
    }
    ++at;
  }
  return depth == 0 ? at : std::string_view::npos;
}

// Reads the top-level tenant, app and state of an instance record. False when the text
// is not a plain JSON object or one of those fields is not a plain string (escapes
// included): the caller then decodes the record in full.
bool scan_instance_head(std::string_view s, InstanceHead& out) {
  size_t at = skip_json_space(s, 0);
  if (at >= s.size() || s[at] != '{') return false;
  at = skip_json_space(s, at + 1);
  if (at < s.size() && s[at] == '}') return true;
  bool escaped = false;
  while (at < s.size()) {
    if (s[at] != '"') return false;
    size_t key_end = json_string_end(s, at + 1, escaped);
    if (key_end == std::string_view::npos || escaped) return false;
    std::string_view key = s.substr(at + 1, key_end - at - 1);
    at = skip_json_space(s, key_end + 1);
    if (at >= s.size() || s[at] != ':') return false;
    at = skip_json_space(s, at + 1);
    if (at >= s.size()) return false;
    std::string_view* field = nullptr;
    bool* seen = nullptr;
    if (key == "tenant") field = &out.tenant, seen = &out.has_tenant;
    else if (key == "app") field = &out.app, seen = &out.has_app;
    else if (key == "state") field = &out.state, seen = &out.has_state;
    if (field) {
      // A repeated key: nlohmann keeps the last, and so would this, but such a record
      // is rare enough to leave to the full decoder.
      if (*seen || s[at] != '"') return false;
      size_t end = json_string_end(s, at + 1, escaped);
      if (end == std::string_view::npos || escaped) return false;
      *field = s.substr(at + 1, end - at - 1);
      *seen = true;
      at = end + 1;
    } else {
      at = skip_json_value(s, at);
      if (at == std::string_view::npos) return false;
    }
    at = skip_json_space(s, at);
    if (at >= s.size()) return false;
    if (s[at] == '}') return skip_json_space(s, at + 1) == s.size();
    if (s[at] != ',') return false;
    at = skip_json_space(s, at + 1);
  }
  return false;
}

// Adds one instance record to the serving counts. `id` is a buffer reused from record to
// record, so a count of an app already seen allocates nothing.
Result<void> count_serving(AppsState& out, const KeyValue& kv, std::string& id) {
  InstanceHead head;
  if (scan_instance_head(kv.value, head) && head.has_tenant && head.has_app) {
    // A missing state decodes as Pending, and so does a name the codec does not know.
    if (head.state == instance_state_name(InstanceState::Running) ||
        head.state == instance_state_name(InstanceState::Succeeded)) {
      id.clear();
      id.append(head.tenant).append("/").append(head.app);
      ++out.serving[id];
    }
    return {};
  }
  // Whatever the scan does not follow, the codec decides, as in a full load: the same
  // count, or the same error for a record that does not decode.
  ClusterState one;
  if (auto r = apply_put(one, kv, /*in_order=*/true); !r) return fail(r.error());
  for (const auto& i : one.snapshot.instances)
    if (serving(i)) ++out.serving[i.tenant + "/" + i.app];
  return {};
}

enum class AppsReadStep { Done, Again };

// Reads every key under `prefix` at `*revision` (0: the current one, which it then
// fixes), `page` keys per request, handing each to `each`.
template <class Each>
Result<AppsReadStep> read_pages(Store& store, std::string_view prefix, int64_t* revision, size_t page, Each&& each) {
  RangeRequest request = RangeRequest::prefix(prefix, *revision, page);
  for (;;) {
    auto got = store.read(request);
    if (!got && got.error().code == StoreErrc::Compacted) return AppsReadStep::Again;
    if (!got) return fail(got.error().to_diagnostic());
    request.revision = *revision = got->revision;
    for (const auto& kv : got->kvs)
      if (auto r = each(kv); !r) return fail(r.error());
    if (!got->more || got->kvs.empty()) return AppsReadStep::Done;
    request.key = got->kvs.back().key + std::string(1, '\0');
  }
}

}  // namespace

Result<AppsState> State::load_apps() {
  // As load_all: one revision for every read, fixed by the first, and a half-applied
  // journal commit finished before anything is read.
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto journal = m_store.read(RangeRequest{k_journal_key});
    if (!journal) return fail(journal.error().to_diagnostic());
    if (!journal->kvs.empty()) {
      if (auto r = roll_forward(m_store); !r) return fail(r.error().to_diagnostic());
      continue;
    }
    int64_t at = journal->revision;
    // Apps and their status keys go through the full load's own code, so an app here is
    // the same record, status and all.
    ClusterState apps;
    auto put = [&](const KeyValue& kv) { return apply_put(apps, kv, /*in_order=*/true); };
    AppsState out;
    std::string id;
    auto count = [&](const KeyValue& kv) { return count_serving(out, kv, id); };
    const size_t page = m_store.read_page_size();
    auto step = read_pages(m_store, "apps/", &at, page, put);
    if (step && *step == AppsReadStep::Done) step = read_pages(m_store, "status/apps/", &at, page, put);
    if (step && *step == AppsReadStep::Done)
      step = read_pages(m_store, "instances/", &at, page ? std::min(page, k_apps_instance_page) : k_apps_instance_page,
                        count);
    if (!step) return fail(step.error());
    if (*step == AppsReadStep::Again) continue;
    out.apps = std::move(apps.apps);
    out.revision = at;
    return out;
  }
  return fail(Diagnostic{{}, "", "the store kept changing while it was read", "retry; many writers are active"});
}

}  // namespace gaia
