#include "lib/state_file.hpp"

#include <unordered_map>

#include "lib/binary_io.hpp"
#include "lib/huge_pages.hpp"
#include "lib/kept_file.hpp"

namespace gaia {

namespace {

// "GAIASTF" and a newline, so `head` on the file says what it is.
constexpr std::string_view k_magic = "GAIASTF\n";
// Raised whenever the encoding changes.
constexpr uint32_t k_format = 2;
constexpr uint32_t k_layout = (sizeof(Instance) << 16) | sizeof(Node);
constexpr KeptFileKind k_kind{k_magic, k_format, k_layout};

// Every field of these types is written below. A field added to one of them breaks the
// count of names here, at compile time (a size check would miss a field that fits in
// padding): write the new field in the file, then add its name and raise k_format.
[[maybe_unused]] void every_field_written(const Instance& i, const Node& n, const VolumeGroup& g,
                                          const KeptVolume& k, const VolumeBinding& b, const Resources& r,
                                          const Priority& p) {
  [[maybe_unused]] auto& [i1, i2, i3, i4, i5, i6, i7, i8, i9, i10, i11, i12, i13, i14, i15, i16, i17, i18, i19, i20,
                          i21, i22, i23, i24, i25, i26, i27] = i;
  [[maybe_unused]] auto& [n1, n2, n3, n4, n5, n6, n7, n8, n9, n10, n11, n12, n13, n14, n15, n16, n17] = n;
  [[maybe_unused]] auto& [g1, g2, g3, g4] = g;
  [[maybe_unused]] auto& [k1, k2, k3, k4, k5, k6, k7, k8] = k;
  [[maybe_unused]] auto& [b1, b2, b3, b4, b5] = b;
  [[maybe_unused]] auto& [r1, r2, r3, r4] = r;
  [[maybe_unused]] auto& [p1, p2, p3] = p;
}

// Flags of the optional and boolean fields of an instance.
enum : uint8_t { k_flag_limit = 1, k_flag_reservation = 2, k_flag_usage = 4, k_flag_throttled = 8, k_flag_internal_failure = 16 };

void write_instance(BinaryWriter& w, const Instance& i, uint32_t labels) {
  w.str(i.tenant);
  w.str(i.app);
  w.str(i.role);
  w.i32(i.ordinal);
  w.str(i.node);
  w.u8(static_cast<uint8_t>(i.state));
  write_resources(w, i.request);
  uint8_t flags = (i.limit ? k_flag_limit : 0) | (i.reservation ? k_flag_reservation : 0) | (i.usage ? k_flag_usage : 0) |
                  (i.throttled ? k_flag_throttled : 0) | (i.internal_failure ? k_flag_internal_failure : 0);
  w.u8(flags);
  if (i.limit) write_resources(w, *i.limit);
  if (i.reservation) write_resources(w, *i.reservation);
  if (i.usage) write_resources(w, *i.usage);
  w.u8(static_cast<uint8_t>(i.priority.band));
  w.i32(i.priority.level);
  w.u8(i.priority.preemptible ? 1 : 0);
  w.u32(labels);
  w.str(i.address);
  w.u32(static_cast<uint32_t>(i.ports.size()));
  for (const auto& [name, port] : i.ports) {
    w.str(name);
    w.i32(port);
  }
  w.u32(static_cast<uint32_t>(i.volumes.size()));
  for (const auto& v : i.volumes) {
    w.str(v.volume);
    w.str(v.node);
    w.str(v.group);
    w.i64(v.size_bytes);
    w.i64(v.iops);
  }
  w.str(i.pending_reason);
  w.i32(i.restarts);
  w.i32(i.migrations);
  w.i64(i.started_ms);
  w.i64(i.restart_at_ms);
  w.str(i.failure);
  w.str(i.hash);
  w.i64(i.snapped_back_ms);
  w.i64(i.generation);
  w.i32(i.exit_code);
}

void read_instance(BinaryReader& r, Instance& i, const std::vector<Labels>& labels) {
  r.str_into(i.tenant);
  r.str_into(i.app);
  r.str_into(i.role);
  i.ordinal = r.i32();
  r.str_into(i.node);
  uint8_t state = r.u8();
  if (state > static_cast<uint8_t>(InstanceState::Terminating)) r.fail();
  i.state = static_cast<InstanceState>(state);
  i.request = read_resources(r);
  uint8_t flags = r.u8();
  if (flags & k_flag_limit) i.limit = read_resources(r);
  if (flags & k_flag_reservation) i.reservation = read_resources(r);
  if (flags & k_flag_usage) i.usage = read_resources(r);
  i.throttled = flags & k_flag_throttled;
  i.internal_failure = flags & k_flag_internal_failure;
  uint8_t band = r.u8();
  if (band > static_cast<uint8_t>(Band::Sys)) r.fail();
  i.priority.band = static_cast<Band>(band);
  i.priority.level = r.i32();
  i.priority.preemptible = r.u8() != 0;
  uint32_t l = r.u32();
  if (l >= labels.size()) {
    r.fail();
    return;
  }
  i.labels = labels[l];
  r.str_into(i.address);
  for (uint32_t n = r.count(8); n > 0 && r.good(); --n) {
    std::string name = r.str();
    i.ports[std::move(name)] = r.i32();
  }
  uint32_t volumes = r.count(28);
  i.volumes.resize(volumes);
  for (auto& v : i.volumes) {
    r.str_into(v.volume);
    r.str_into(v.node);
    r.str_into(v.group);
    v.size_bytes = r.i64();
    v.iops = r.i64();
  }
  r.str_into(i.pending_reason);
  i.restarts = r.i32();
  i.migrations = r.i32();
  i.started_ms = r.i64();
  i.restart_at_ms = r.i64();
  r.str_into(i.failure);
  r.str_into(i.hash);
  i.snapped_back_ms = r.i64();
  i.generation = r.i64();
  i.exit_code = r.i32();
}

void write_map(BinaryWriter& w, const std::map<std::string, std::string>& m) {
  w.u32(static_cast<uint32_t>(m.size()));
  for (const auto& [k, v] : m) {
    w.str(k);
    w.str(v);
  }
}

void read_map(BinaryReader& r, std::map<std::string, std::string>& m) {
  for (uint32_t n = r.count(8); n > 0 && r.good(); --n) {
    std::string k = r.str();
    m.insert_or_assign(m.end(), std::move(k), r.str());
  }
}

void write_node(BinaryWriter& w, const Node& n) {
  w.str(n.name);
  w.str(n.address);
  w.str(n.instance_subnet);
  write_resources(w, n.capacity);
  w.i32(n.port_min);
  w.i32(n.port_max);
  write_map(w, n.labels);
  w.u32(static_cast<uint32_t>(n.volume_groups.size()));
  for (const auto& g : n.volume_groups) {
    w.str(g.name);
    w.str(g.storage_class);
    w.i64(g.size_bytes);
    w.i64(g.iops);
  }
  w.u32(static_cast<uint32_t>(n.kept_volumes.size()));
  for (const auto& k : n.kept_volumes) {
    w.str(k.tenant);
    w.str(k.app);
    w.str(k.role);
    w.i32(k.ordinal);
    w.str(k.volume);
    w.str(k.group);
    w.i64(k.size_bytes);
    w.i64(k.iops);
  }
  w.u32(static_cast<uint32_t>(n.cached_images.size()));
  for (const auto& i : n.cached_images) w.str(i);
  w.u8(static_cast<uint8_t>(n.state));
  w.u8(n.draining ? 1 : 0);
  w.str(n.down_reason);
  w.str(n.cordon_reason);
  w.str(n.zone);
  w.str(n.rack);
  w.str(n.switch_);
}

void read_node(BinaryReader& r, Node& n) {
  r.str_into(n.name);
  r.str_into(n.address);
  r.str_into(n.instance_subnet);
  n.capacity = read_resources(r);
  n.port_min = r.i32();
  n.port_max = r.i32();
  read_map(r, n.labels);
  n.volume_groups.resize(r.count(24));
  for (auto& g : n.volume_groups) {
    r.str_into(g.name);
    r.str_into(g.storage_class);
    g.size_bytes = r.i64();
    g.iops = r.i64();
  }
  n.kept_volumes.resize(r.count(40));
  for (auto& k : n.kept_volumes) {
    r.str_into(k.tenant);
    r.str_into(k.app);
    r.str_into(k.role);
    k.ordinal = r.i32();
    r.str_into(k.volume);
    r.str_into(k.group);
    k.size_bytes = r.i64();
    k.iops = r.i64();
  }
  n.cached_images.resize(r.count(4));
  for (auto& i : n.cached_images) r.str_into(i);
  uint8_t state = r.u8();
  if (state > static_cast<uint8_t>(NodeState::Down)) r.fail();
  n.state = static_cast<NodeState>(state);
  n.draining = r.u8() != 0;
  r.str_into(n.down_reason);
  r.str_into(n.cordon_reason);
  r.str_into(n.zone);
  r.str_into(n.rack);
  r.str_into(n.switch_);
}

}  // namespace

std::string encode_state_file(std::string_view store_id, const KeptFileHead& head,
                              std::span<const KeyValue* const> records, std::span<const Node> nodes,
                              std::span<const Instance> instances) {
  BinaryWriter w = kept_payload_writer(store_id, head);
  w.u32(static_cast<uint32_t>(records.size()));
  for (const KeyValue* p : records) {
    const KeyValue& kv = *p;
    w.str(kv.key);
    w.str(kv.value);
    w.i64(kv.create_revision);
    w.i64(kv.mod_revision);
    w.i64(kv.version);
    w.i64(kv.lease);
  }
  w.u32(static_cast<uint32_t>(nodes.size()));
  for (const auto& n : nodes) write_node(w, n);
  // Each set of labels once, as the instances of a role share one (lib/labels.hpp); the
  // instances refer to it by number, and a reader shares it again.
  std::unordered_map<const void*, uint32_t> sets;
  std::vector<const Labels*> order;
  std::vector<uint32_t> refs;
  refs.reserve(instances.size());
  for (const auto& i : instances) {
    auto [it, fresh] = sets.try_emplace(&i.labels.map(), static_cast<uint32_t>(order.size()));
    if (fresh) order.push_back(&i.labels);
    refs.push_back(it->second);
  }
  w.u32(static_cast<uint32_t>(order.size()));
  for (const Labels* l : order) {
    w.u32(static_cast<uint32_t>(l->size()));
    for (const auto& [k, v] : *l) {
      w.str(k);
      w.str(v);
    }
  }
  w.u32(static_cast<uint32_t>(instances.size()));
  for (size_t k = 0; k < instances.size(); ++k) write_instance(w, instances[k], refs[k]);

  return frame_kept_file(k_kind, head, std::move(w.out()));
}

std::optional<KeptFileHead> peek_state_file(std::string_view bytes) {
  return peek_kept_file(bytes, k_kind);
}

std::expected<StateFileContents, std::string> decode_state_file(
    std::string_view bytes, std::string_view store_id, const std::function<void(std::vector<KeyValue>&&)>& records_ready) {
  StateFileContents c;
  auto reader = kept_payload_reader(bytes, k_kind, store_id, &c.head);
  if (!reader) return std::unexpected(std::move(reader.error()));
  BinaryReader& r = *reader;
  c.records.resize(r.count(40));
  for (auto& kv : c.records) {
    r.str_into(kv.key);
    r.str_into(kv.value);
    kv.create_revision = r.i64();
    kv.mod_revision = r.i64();
    kv.version = r.i64();
    kv.lease = r.i64();
  }
  if (records_ready && r.good()) {
    records_ready(std::move(c.records));
    c.records.clear();
  }
  c.nodes.resize(r.count(60));
  for (auto& n : c.nodes) {
    if (!r.good()) break;
    read_node(r, n);
  }
  std::vector<Labels> labels(r.count(4));
  for (auto& l : labels) {
    Labels::Map map;
    for (uint32_t n = r.count(8); n > 0 && r.good(); --n) {
      std::string k = r.str();
      map[std::move(k)] = r.str();
    }
    l = Labels(std::move(map));
  }
  // Room for a few more, as a load of the store keeps (lib/state.cpp), so the instances
  // the next commits add are merged in place.
  const uint32_t n = r.count(100);
  c.instances.reserve(n + n / 16 + 64);
  advise_huge_pages(c.instances);
  c.instances.resize(n);
  for (auto& i : c.instances) {
    if (!r.good()) break;
    read_instance(r, i, labels);
  }
  if (!r.good() || !r.done()) return std::unexpected(std::string(k_damaged_kept_file));
  return c;
}

}  // namespace gaia
