#include <string_view>

#include "spec/app_spec.hpp"

namespace gaia::spec {

bool is_dns_label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s)
    if (!alnum(c) && c != '-') return false;
  return true;
}

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s.front())) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

}  // namespace gaia::spec

#include <fmt/format.h>

namespace gaia::spec {

std::string dns_label_problem(std::string_view s) {
  if (s.empty()) return "it is empty";
  if (s.size() > 63) return fmt::format("it is {} characters long, the limit is 63", s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') return fmt::format("it contains the upper-case letter '{}': only lower case is allowed", c);
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
        return fmt::format("it contains the byte 0x{:02x} at position {}: only a-z, 0-9 and '-' are allowed",
                           static_cast<unsigned char>(c), i + 1);
      return fmt::format("it contains '{}' at position {}: only a-z, 0-9 and '-' are allowed", c, i + 1);
    }
  }
  if (s.front() == '-') return "it starts with '-': it must start with a letter or digit";
  if (s.back() == '-') return "it ends with '-': it must end with a letter or digit";
  return {};
}

std::string suggest_dns_label(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c >= 'A' && c <= 'Z') out += static_cast<char>(c - 'A' + 'a');
    else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) out += c;
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.size() > 63) out.resize(63);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string identifier_problem(std::string_view s) {
  if (s.empty()) return "it is empty";
  if (s.front() >= '0' && s.front() <= '9') return "it starts with a digit";
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return fmt::format("it contains '{}' at position {}: only letters, digits and '_' are allowed", c, i + 1);
  }
  return {};
}

std::string suggest_identifier(std::string_view s) {
  std::string out;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += ok ? c : '_';
  }
  if (out.empty() || (out.front() >= '0' && out.front() <= '9')) out.insert(out.begin(), '_');
  return out;
}

std::string default_alias(std::string_view name) {
  std::string out{name};
  for (char& c : out)
    if (c == '-') c = '_';
  return out;
}

}  // namespace gaia::spec
