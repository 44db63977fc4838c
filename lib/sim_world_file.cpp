#include "lib/sim_world_file.hpp"

#include "lib/binary_io.hpp"

namespace gaia {

namespace {

// "GAIASIM" and a newline, so `head` on the file says what it is.
constexpr std::string_view k_sim_magic = "GAIASIM\n";
// Raised whenever the encoding changes.
constexpr uint32_t k_sim_format = 2;
constexpr uint32_t k_sim_layout = sizeof(SimCopy);
constexpr KeptFileKind k_sim_kind{k_sim_magic, k_sim_format, k_sim_layout};

// Every field of SimCopy is written below. A field added breaks the count of names here
// at compile time: write it in the file, then add its name and raise k_sim_format.
[[maybe_unused]] void every_copy_field_written(const SimCopy& c) {
  [[maybe_unused]] auto& [c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13] = c;
}

void write_copy(BinaryWriter& w, const SimCopy& c) {
  w.str(c.node);
  w.i64(c.generation);
  w.u8(static_cast<uint8_t>(c.phase));
  w.i32(c.exit_code);
  w.str(c.reason);
  w.u8(c.internal ? 1 : 0);
  w.i64(c.started_ms);
  w.str(c.tenant);
  w.str(c.app);
  w.str(c.role);
  w.i32(c.ordinal);
  write_resources(w, c.request);
  w.u8(c.limit ? 1 : 0);
  if (c.limit) write_resources(w, *c.limit);
}

void read_copy(BinaryReader& r, SimCopy& c) {
  r.str_into(c.node);
  c.generation = r.i64();
  uint8_t phase = r.u8();
  if (phase > static_cast<uint8_t>(CopyPhase::Failed)) r.fail();
  c.phase = static_cast<CopyPhase>(phase);
  c.exit_code = r.i32();
  r.str_into(c.reason);
  c.internal = r.u8() != 0;
  c.started_ms = r.i64();
  r.str_into(c.tenant);
  r.str_into(c.app);
  r.str_into(c.role);
  c.ordinal = r.i32();
  c.request = read_resources(r);
  if (r.u8() != 0) c.limit = read_resources(r);
}

}  // namespace

std::string encode_sim_world(std::string_view store_id, KeptFileHead head, const SimWorld& world) {
  BinaryWriter w = kept_payload_writer(store_id, head);
  w.u32(static_cast<uint32_t>(world.size()));
  for (const auto& [key, copies] : world) {
    w.str(key);
    w.u32(static_cast<uint32_t>(copies.size()));
    for (const auto& c : copies) write_copy(w, c);
  }
  return frame_kept_file(k_sim_kind, head, std::move(w.out()));
}

std::optional<KeptFileHead> peek_sim_world(std::string_view bytes) {
  return peek_kept_file(bytes, k_sim_kind);
}

std::expected<SimWorldFile, std::string> decode_sim_world(std::string_view bytes, std::string_view store_id) {
  SimWorldFile out;
  auto reader = kept_payload_reader(bytes, k_sim_kind, store_id, &out.head);
  if (!reader) return std::unexpected(std::move(reader.error()));
  BinaryReader& r = *reader;
  for (uint32_t n = r.count(8); n > 0 && r.good(); --n) {
    std::string key = r.str();
    std::vector<SimCopy> copies(r.count(60));
    for (auto& c : copies) {
      if (!r.good()) break;
      read_copy(r, c);
    }
    out.world.emplace_hint(out.world.end(), std::move(key), std::move(copies));
  }
  if (!r.good() || !r.done()) return std::unexpected(std::string(k_damaged_kept_file));
  return out;
}

}  // namespace gaia
