#include "store/store_url.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <set>
#include <sstream>

namespace gaia {

namespace fs = std::filesystem;

namespace {

StoreError invalid(std::string message, std::string hint = {}) {
  return StoreError{StoreErrc::InvalidArgument, std::move(message), std::move(hint), 0};
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The scheme of "scheme://...", lower-cased, or "" when `text` is not shaped like a URL.
// A scheme is a letter followed by letters, digits, '+', '-' or '.' (RFC 3986), so a
// relative path such as "./a://b" is not a URL.
std::string scheme_of(std::string_view text) {
  size_t sep = text.find("://");
  if (sep == std::string_view::npos || sep == 0) return {};
  std::string_view scheme = text.substr(0, sep);
  if (!std::isalpha(static_cast<unsigned char>(scheme[0]))) return {};
  for (char c : scheme)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return {};
  return lower(scheme);
}

const char* k_url_form = "etcd://HOST:PORT[,HOST:PORT...] (etcds:// for TLS), e.g. etcd://127.0.0.1:2379";

// `text` with whatever sits between "scheme://" and the last '@' (a user and password)
// replaced by "***", so a message can show the URL.
std::string redacted(std::string_view text, std::string_view scheme) {
  std::string_view rest = text.substr(scheme.size() + 3);
  size_t at = rest.rfind('@');
  if (at == std::string_view::npos) return std::string(text);
  return fmt::format("{}://***@{}", scheme, rest.substr(at + 1));
}

bool host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

// One "host[:port]" of the list, normalised to "host:port".
StoreResult<std::string> parse_endpoint(std::string_view item, std::string_view url) {
  if (item.empty())
    return std::unexpected(invalid(fmt::format("store URL '{}' has an empty endpoint", url), k_url_form));
  std::string host;
  std::string_view rest;
  if (item.front() == '[') {
    // An IPv6 address in brackets, as in any URL: "[::1]:2379".
    size_t close = item.find(']');
    std::string_view inside = close == std::string_view::npos ? std::string_view() : item.substr(1, close - 1);
    bool ok = close != std::string_view::npos && !inside.empty() &&
              std::ranges::all_of(inside, [](char c) {
                return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
              });
    if (!ok)
      return std::unexpected(invalid(fmt::format("store URL '{}': '{}' is not a bracketed IPv6 address", url, item),
                                     "write IPv6 addresses as [::1]:2379"));
    host = std::string(item.substr(0, close + 1));
    rest = item.substr(close + 1);
    if (!rest.empty() && rest.front() != ':')
      return std::unexpected(invalid(fmt::format("store URL '{}': unexpected '{}' after {}", url, rest, host), k_url_form));
  } else {
    size_t colon = item.find(':');
    host = std::string(item.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : item.substr(colon);
    if (host.empty() || !std::ranges::all_of(host, host_char))
      return std::unexpected(invalid(fmt::format("store URL '{}': '{}' is not a host name or address", url, item),
                                     std::string(k_url_form) + "; write IPv6 addresses in brackets"));
  }
  int port = k_etcd_default_port;
  if (!rest.empty()) {
    std::string_view digits = rest.substr(1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || port < 1 || port > 65535)
      return std::unexpected(invalid(fmt::format("store URL '{}': '{}' is not a port (1-65535)", url, digits),
                                     k_url_form));
  }
  return fmt::format("{}:{}", host, port);
}

bool file_readable(const fs::path& p) {
  std::ifstream in(p);
  return in.good();
}

}  // namespace

std::string EtcdUrl::canonical() const {
  return fmt::format("{}://{}", tls ? "etcds" : "etcd", fmt::join(endpoints, ","));
}

std::string EtcdUrl::identity() const {
  std::vector<std::string> sorted = endpoints;
  std::ranges::sort(sorted);
  return fmt::format("{}", fmt::join(sorted, ","));
}

bool is_etcd_url(std::string_view text) {
  std::string scheme = scheme_of(text);
  return scheme == "etcd" || scheme == "etcds";
}

StoreResult<EtcdUrl> parse_etcd_url(std::string_view text) {
  std::string scheme = scheme_of(text);
  if (scheme != "etcd" && scheme != "etcds")
    return std::unexpected(invalid(fmt::format("'{}' is not an etcd URL", text), k_url_form));
  std::string_view rest = text.substr(scheme.size() + 3);
  // Credentials never belong in the URL: it is stored in the contexts file and printed by
  // `gaia context list`. The message shows only what follows the last '@'.
  if (rest.find('@') != std::string_view::npos) {
    return std::unexpected(invalid(fmt::format("store URL '{}' carries credentials", redacted(text, scheme)),
                                   "give the user with --etcd-user and the password in a file with "
                                   "--etcd-password-file (`gaia context add`)"));
  }
  if (size_t q = rest.find_first_of("?#"); q != std::string_view::npos)
    return std::unexpected(invalid(fmt::format("store URL '{}' has a query or fragment", text),
                                   std::string(k_url_form) + "; TLS, user and timeout are flags of `gaia context add`"));
  if (size_t slash = rest.find('/'); slash != std::string_view::npos) {
    if (rest.find_first_not_of('/', slash) != std::string_view::npos)
      return std::unexpected(invalid(fmt::format("store URL '{}' has a path", text),
                                     std::string(k_url_form) + "; gaia uses the etcd cluster's whole key space"));
    rest = rest.substr(0, slash);
  }
  if (rest.empty()) return std::unexpected(invalid(fmt::format("store URL '{}' names no endpoint", text), k_url_form));
  EtcdUrl url;
  url.tls = scheme == "etcds";
  std::set<std::string> seen;
  size_t start = 0;
  while (true) {
    size_t comma = rest.find(',', start);
    std::string_view item = rest.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    auto endpoint = parse_endpoint(item, text);
    if (!endpoint) return std::unexpected(endpoint.error());
    if (!seen.insert(*endpoint).second)
      return std::unexpected(invalid(fmt::format("store URL '{}' lists {} twice", text, *endpoint), k_url_form));
    url.endpoints.push_back(std::move(*endpoint));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return url;
}

StoreResult<StoreLocation> parse_store_location(std::string_view text) {
  if (text.empty())
    return std::unexpected(invalid("the store is empty", "give a file path or an etcd URL (etcd://HOST:PORT)"));
  std::string scheme = scheme_of(text);
  StoreLocation location;
  if (scheme.empty()) {
    location.file = fs::path(text);
    return location;
  }
  if (scheme == "etcd" || scheme == "etcds") {
    auto url = parse_etcd_url(text);
    if (!url) return std::unexpected(url.error());
    location.kind = StoreLocation::Kind::Etcd;
    location.etcd = std::move(*url);
    return location;
  }
  // Never show what precedes an '@', which may be a password.
  std::string shown = redacted(text, scheme);
  std::string hint = "a store is a file path or an etcd URL: etcd://HOST:PORT[,HOST:PORT...] (etcds:// for TLS)";
  if (scheme == "http" || scheme == "https")
    hint = fmt::format("for etcd's client URL write {}://{}", scheme == "https" ? "etcds" : "etcd",
                       std::string_view(shown).substr(scheme.size() + 3));
  return std::unexpected(invalid(fmt::format("store '{}': gaia has no '{}://' stores", shown, scheme), hint));
}

bool EtcdSettings::empty() const { return *this == EtcdSettings{}; }

StoreResult<void> check_etcd_settings(const EtcdSettings& s) {
  if (!s.key_file.empty() && s.cert_file.empty())
    return std::unexpected(invalid("an etcd client key is set without its certificate",
                                   "give both --etcd-cert and --etcd-key, or neither"));
  if (!s.cert_file.empty() && s.key_file.empty())
    return std::unexpected(invalid("an etcd client certificate is set without its key",
                                   "give both --etcd-cert and --etcd-key, or neither"));
  if (!s.password_file.empty() && s.username.empty())
    return std::unexpected(invalid("an etcd password file is set without a user", "give --etcd-user too"));
  if (!s.username.empty() && s.password_file.empty())
    return std::unexpected(invalid(fmt::format("etcd user '{}' has no password file", s.username),
                                   "give --etcd-password-file FILE, a file holding only the password "
                                   "(gaia stores the file's path, never the password)"));
  if (s.request_timeout.count() < 0)
    return std::unexpected(invalid("the etcd request timeout must be positive"));
  return {};
}

StoreResult<EtcdOptions> etcd_options(const EtcdUrl& url, const EtcdSettings& settings) {
  if (auto checked = check_etcd_settings(settings); !checked) return std::unexpected(checked.error());
  EtcdOptions options;
  // A bare "host:port" becomes https:// in the gateway when a CA or client certificate
  // is set, so etcd:// with --etcd-ca is TLS too; etcds:// is TLS with the system's CAs
  // when no CA file is given.
  for (const auto& e : url.endpoints) options.endpoints.push_back(url.tls ? "https://" + e : e);
  for (const auto& [flag, file] : {std::pair{"--etcd-ca", settings.ca_file}, {"--etcd-cert", settings.cert_file},
                                   {"--etcd-key", settings.key_file}}) {
    if (!file.empty() && !file_readable(file))
      return std::unexpected(StoreError{StoreErrc::Io, fmt::format("cannot read the etcd TLS file {} ({})", file.string(), flag),
                                        "check that the file exists and is readable", 0});
  }
  options.ca_file = settings.ca_file;
  options.cert_file = settings.cert_file;
  options.key_file = settings.key_file;
  options.username = settings.username;
  if (settings.request_timeout.count() > 0) {
    options.request_timeout = settings.request_timeout;
    options.connect_timeout = std::min(options.connect_timeout, settings.request_timeout);
  }
  if (!settings.password_file.empty()) {
    std::ifstream in(settings.password_file, std::ios::binary);
    std::stringstream text;
    if (in) text << in.rdbuf();
    if (!in)
      return std::unexpected(StoreError{StoreErrc::Io,
                                        fmt::format("cannot read the etcd password file {}", settings.password_file.string()),
                                        "check that the file exists and is readable by you", 0});
    std::string password = text.str();
    // Files written by `echo` or an editor end with a newline that is not part of it.
    if (password.ends_with('\n')) password.pop_back();
    if (password.ends_with('\r')) password.pop_back();
    if (password.empty())
      return std::unexpected(StoreError{StoreErrc::InvalidArgument,
                                        fmt::format("the etcd password file {} is empty", settings.password_file.string()),
                                        "write the password of the etcd user into it", 0});
    options.password = std::move(password);
  }
  return options;
}

}  // namespace gaia
