#pragma once
// The little-endian-as-the-machine binary encoding of the files that keep what a process
// read for the next one (lib/kept_file.hpp): fixed-size integers and length-prefixed
// strings, read back with every length checked against what is left.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "lib/workload.hpp"

namespace gaia {

class BinaryWriter {
 public:
  void u8(uint8_t v) { m_out.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { raw(&v, sizeof v); }
  void i32(int32_t v) { raw(&v, sizeof v); }
  void i64(int64_t v) { raw(&v, sizeof v); }
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    m_out.append(s);
  }
  std::string& out() { return m_out; }

 private:
  void raw(const void* p, size_t n) { m_out.append(static_cast<const char*>(p), n); }
  std::string m_out;
};

// Reads what BinaryWriter wrote; any read past the end, or a value out of range, sets the
// reader bad for good, and the caller discards everything.
class BinaryReader {
 public:
  explicit BinaryReader(std::string_view in) : m_in(in) {}
  bool good() const { return m_good; }
  bool done() const { return m_pos == m_in.size(); }
  uint8_t u8() { return get<uint8_t>(); }
  uint32_t u32() { return get<uint32_t>(); }
  int32_t i32() { return get<int32_t>(); }
  int64_t i64() { return get<int64_t>(); }
  uint64_t u64() { return get<uint64_t>(); }
  std::string_view view() {
    uint32_t n = u32();
    if (!m_good || n > m_in.size() - m_pos) {
      m_good = false;
      return {};
    }
    auto s = m_in.substr(m_pos, n);
    m_pos += n;
    return s;
  }
  std::string str() { return std::string(view()); }
  void str_into(std::string& out) { out.assign(view()); }
  // A count of things each at least `min_bytes` long: one the rest cannot hold is a
  // damaged file, refused before anything is reserved for it.
  uint32_t count(size_t min_bytes) {
    uint32_t n = u32();
    if (m_good && static_cast<uint64_t>(n) * min_bytes > m_in.size() - m_pos) m_good = false;
    return m_good ? n : 0;
  }
  void fail() { m_good = false; }

 private:
  template <class T>
  T get() {
    T v{};
    raw(&v, sizeof v);
    return v;
  }
  void raw(void* p, size_t n) {
    if (!m_good || n > m_in.size() - m_pos) {
      m_good = false;
      return;
    }
    std::memcpy(p, m_in.data() + m_pos, n);
    m_pos += n;
  }
  std::string_view m_in;
  size_t m_pos = 0;
  bool m_good = true;
};

inline void write_resources(BinaryWriter& w, const Resources& r) {
  w.i64(r.cpu_millis);
  w.i64(r.memory_bytes);
  w.i64(r.gpu);
  w.i64(r.disk_bytes);
}

inline Resources read_resources(BinaryReader& r) {
  Resources out;
  out.cpu_millis = r.i64();
  out.memory_bytes = r.i64();
  out.gpu = r.i64();
  out.disk_bytes = r.i64();
  return out;
}

}  // namespace gaia
