#include "lib/cluster_layout.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

namespace gaia {

namespace {

using u128 = unsigned __int128;

// One address step for the family: bits are left-aligned in 128, so the lowest bit of
// an IPv4 address is bit 96.
u128 unit(IpFamily f) { return static_cast<u128>(1) << (128 - IpAddress::max_length(f)); }

uint64_t capped_pow2(int bits) { return bits >= 62 ? (uint64_t{1} << 62) : (uint64_t{1} << bits); }

}  // namespace

std::expected<AddressAllocator, std::string> AddressAllocator::create(std::string_view subnet,
                                                                      const std::vector<Node>& existing) {
  auto prefix = parse_cidr(subnet);
  if (!prefix) return std::unexpected(prefix.error());
  AddressAllocator a;
  a.m_subnet = *prefix;
  const IpFamily family = prefix->address.family;
  const int max = IpAddress::max_length(family);
  a.m_block_length = family == IpFamily::V4 ? kInstanceBlockV4 : kInstanceBlockV6;
  if (prefix->length > a.m_block_length - 1)
    return std::unexpected(fmt::format(
        "subnet {} is too small: its upper half must hold at least one /{} instance block, so the prefix must be "
        "/{} or shorter (for example {}/{})",
        prefix->to_string(), a.m_block_length, a.m_block_length - 1, prefix->address.to_string(),
        family == IpFamily::V4 ? 16 : 48));
  // Lower half: hosts, skipping the network address.
  a.m_host_capacity = capped_pow2(max - prefix->length - 1) - 1;
  a.m_block_capacity = capped_pow2(a.m_block_length - prefix->length - 1);
  for (const auto& n : existing) {
    if (!n.address.empty()) a.reserve_address(n.address);
    if (!n.instance_subnet.empty()) a.reserve_subnet(n.instance_subnet);
  }
  return a;
}

void AddressAllocator::reserve_address(const std::string& address) {
  if (auto ip = parse_address(address); ip && m_subnet.contains(*ip)) m_used_hosts.insert(ip->bits);
}

void AddressAllocator::reserve_subnet(const std::string& cidr) {
  auto p = parse_cidr(cidr);
  if (!p || p->address.family != m_subnet.address.family) return;
  // Any block overlapping the given prefix is taken: a /16 given by hand covers many.
  const u128 block_size = static_cast<u128>(1) << (128 - m_block_length);
  if (p->length >= m_block_length) {
    m_used_blocks.insert(p->address.bits & prefix_bits::mask(m_block_length));
    return;
  }
  u128 count = static_cast<u128>(1) << std::min(m_block_length - p->length, 24);
  for (u128 k = 0; k < count; ++k) m_used_blocks.insert(p->address.bits + k * block_size);
}

std::expected<std::string, std::string> AddressAllocator::next_address() {
  const u128 step = unit(m_subnet.address.family);
  while (m_next_host < m_host_capacity) {
    u128 bits = m_subnet.address.bits + static_cast<u128>(m_next_host + 1) * step;
    ++m_next_host;
    if (m_used_hosts.insert(bits).second) return IpAddress{m_subnet.address.family, bits}.to_string();
  }
  return std::unexpected(fmt::format("subnet {} has no free node address left (its lower half holds {} hosts)",
                                     m_subnet.to_string(), m_host_capacity));
}

std::expected<std::string, std::string> AddressAllocator::next_instance_subnet() {
  const u128 upper = m_subnet.address.bits + (static_cast<u128>(1) << (128 - m_subnet.length - 1));
  const u128 block_size = static_cast<u128>(1) << (128 - m_block_length);
  while (m_next_block < m_block_capacity) {
    u128 bits = upper + static_cast<u128>(m_next_block) * block_size;
    ++m_next_block;
    if (m_used_blocks.insert(bits).second)
      return IpPrefix{IpAddress{m_subnet.address.family, bits}, m_block_length}.to_string();
  }
  return std::unexpected(fmt::format("subnet {} has no free /{} instance block left (its upper half holds {})",
                                     m_subnet.to_string(), m_block_length, m_block_capacity));
}

namespace {

// The number after "<prefix>-", or -1 when the name is not of that form.
long name_index(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() + 1 || !name.starts_with(prefix) || name[prefix.size()] != '-') return -1;
  std::string digits = name.substr(prefix.size() + 1);
  if (digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stol(digits);
}

}  // namespace

std::expected<std::vector<Node>, std::string> generate_nodes(const GenerateOptions& o, const std::vector<Node>& existing) {
  if (o.count < 1) return std::unexpected(fmt::format("--nodes must be at least 1, got {}", o.count));
  if (o.racks < 0 || o.zones < 0) return std::unexpected("--racks and --zones must not be negative");
  if (o.racks > o.count) return std::unexpected(fmt::format("--racks {} is more than the {} nodes", o.racks, o.count));
  if (o.zones > std::max(o.racks, o.count))
    return std::unexpected(fmt::format("--zones {} is more than the {} {}", o.zones, o.racks ? o.racks : o.count,
                                       o.racks ? "racks" : "nodes"));
  if (o.shape.port_min < 1 || o.shape.port_max > 65535 || o.shape.port_min > o.shape.port_max)
    return std::unexpected(fmt::format("port range {}-{} is not within 1-65535 with min <= max", o.shape.port_min,
                                       o.shape.port_max));
  auto alloc = AddressAllocator::create(o.subnet, existing);
  if (!alloc) return std::unexpected(alloc.error());
  long first = 1;
  for (const auto& n : existing) first = std::max(first, name_index(n.name, o.name_prefix) + 1);
  std::vector<Node> out;
  out.reserve(static_cast<size_t>(o.count));
  for (int i = 0; i < o.count; ++i) {
    Node n;
    n.name = fmt::format("{}-{}", o.name_prefix, first + i);
    n.capacity = o.shape.capacity;
    n.labels = o.shape.labels;
    n.volume_groups = o.shape.volume_groups;
    n.cached_images = o.shape.cached_images;
    n.port_min = o.shape.port_min;
    n.port_max = o.shape.port_max;
    auto address = alloc->next_address();
    if (!address) return std::unexpected(address.error());
    auto block = alloc->next_instance_subnet();
    if (!block) return std::unexpected(block.error());
    n.address = *address;
    n.instance_subnet = *block;
    // Contiguous groups, as machines sit in racks: nodes 1-17 in r1, 18-34 in r2, ...
    if (o.racks > 0) {
      long rack = static_cast<long>(i) * o.racks / o.count;
      n.rack = fmt::format("r{}", rack + 1);
      n.switch_ = fmt::format("s{}", rack + 1);
      if (o.zones > 0) n.zone = fmt::format("z{}", rack * o.zones / o.racks + 1);
    } else if (o.zones > 0) {
      n.zone = fmt::format("z{}", static_cast<long>(i) * o.zones / o.count + 1);
    }
    assign_topology(n, nullptr);
    out.push_back(std::move(n));
  }
  return out;
}

void assign_topology(Node& node, const TopologyTable* table) {
  std::optional<TopologyEntry> entry;
  if (table && !node.address.empty())
    if (auto ip = parse_address(node.address)) entry = table->lookup(*ip);
  auto settle = [&](std::string& field, const char* label, const std::string* from_table) {
    if (auto it = node.labels.find(label); it != node.labels.end() && !it->second.empty()) field = it->second;
    else if (from_table && !from_table->empty()) field = *from_table;
    if (!field.empty()) node.labels[label] = field;
  };
  settle(node.zone, "zone", entry ? &entry->zone : nullptr);
  settle(node.rack, "rack", entry ? &entry->rack : nullptr);
  settle(node.switch_, "switch", entry ? &entry->switch_ : nullptr);
}

bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && digit(a[i2])) ++i2;
      while (j2 < b.size() && digit(b[j2])) ++j2;
      // Compare numbers by value: strip leading zeros, then length, then digits.
      size_t si = i, sj = j;
      while (si + 1 < i2 && a[si] == '0') ++si;
      while (sj + 1 < j2 && b[sj] == '0') ++sj;
      if (i2 - si != j2 - sj) return i2 - si < j2 - sj;
      int c = a.compare(si, i2 - si, b, sj, j2 - sj);
      if (c != 0) return c < 0;
      i = i2;
      j = j2;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  if ((a.size() - i) != (b.size() - j)) return a.size() - i < b.size() - j;
  return a < b;
}

void ensure_default_tenant(std::vector<Tenant>& tenants) {
  for (const auto& t : tenants)
    if (t.name == "default") return;
  Tenant t;
  t.name = "default";
  tenants.insert(tenants.begin(), std::move(t));
}

}  // namespace gaia
