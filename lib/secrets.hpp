#pragma once
// The one rule for secrets (docs/spec.md "secrets", docs/cli.md#secrets): which config
// values are secret, and how a secret is shown when it must not be: as k_secret_mask.
//
// A config key is secret when an app lists it under `secrets:` in its app.yaml, or when
// it lies under `secrets.` (a convention that needs no app to declare it). Values are
// masked two ways, because a secret travels two ways:
// - by key (SecretKeys): where a value is shown next to the key it was read or written
//   under (config list, history, get, the ConfigChanged events, the reads a render
//   recorded). A key under a secret one is secret too; a parent key shows its object
//   with the secret members masked.
// - by value (SecretValues): where the value was copied into something else (a rendered
//   document's env or command line, an output, an event message). The values to hide
//   are what the renders read for the secret keys and the config parameters they feed.
// Every command masks through these functions, and only `--show-secrets` (on the
// commands where a person asks for a value) skips them; the timeline never holds a
// secret in clear, since everyone who can read events can read it.

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gaia {

// What a masked value is shown as, in text and in JSON alike.
inline constexpr const char* k_secret_mask = "<secret>";

// The set of secret config keys.
class SecretKeys {
 public:
  SecretKeys() = default;
  explicit SecretKeys(const std::vector<std::string>& keys);

  void add(const std::string& key);
  void add(const SecretKeys& other);
  // The keys apps listed (the `secrets.` convention is implied, not listed).
  const std::set<std::string>& listed() const { return m_keys; }

  // The whole value of `key` is secret: it is listed, lies under a listed key, or lies
  // under `secrets.` (or is `secrets` itself).
  bool secret(std::string_view key) const;
  // Part of the value of `key` is secret: secret(key), or a listed key lies under it
  // (`web` holds `web.session_secret`).
  bool touches(std::string_view key) const;
  // `value`, read or written under `key`, as it may be shown: the mask when the key is
  // secret; for a parent of secret keys, a copy with each secret member masked; else
  // `value` unchanged. Null stays null (an absent value reveals nothing).
  nlohmann::json mask(std::string_view key, const nlohmann::json& value) const;
  // The same as text: strings as they are, other values as compact JSON.
  std::string text(std::string_view key, const nlohmann::json& value) const;
  // For a recorded read (kind "config" or "label"): labels are never secret.
  nlohmann::json mask_read(std::string_view kind, std::string_view key, const nlohmann::json& value) const;
  std::string read_text(std::string_view kind, std::string_view key, const nlohmann::json& value) const;

 private:
  std::set<std::string> m_keys;
};

// Secret values as text, to hide wherever they were copied. A value is hidden where it
// appears whole, and inside longer text only when it has at least 4 characters: a
// secret "1" must not mask every replica count (over-masking is the safe side, but not
// to the point of hiding everything).
class SecretValues {
 public:
  SecretValues() = default;
  explicit SecretValues(std::vector<std::string> values);

  // Adds a value as shown (strings as they are, other values as JSON); objects and
  // arrays also add each of their leaves, so a secret object is hidden member by member
  // wherever those members were copied. Null and "" are ignored.
  void add(const nlohmann::json& value);
  const std::vector<std::string>& values() const { return m_values; }
  bool empty() const { return m_values.empty(); }

  // Whether `value` (as shown) equals a secret, or contains one of 4+ characters.
  bool reveals(const nlohmann::json& value) const;
  // `text` with every secret of 4+ characters replaced by the mask (longest first, so a
  // secret containing another is hidden whole); text equal to a shorter secret becomes
  // the mask.
  std::string mask_text(const std::string& text) const;
  // `value` with every leaf that reveals a secret masked (strings through mask_text,
  // other leaves replaced whole); keys of objects are kept.
  nlohmann::json mask_json(const nlohmann::json& value) const;

 private:
  std::vector<std::string> m_values;  // Sorted by length, longest first; unique.
};

// The values to hide for an app whose secret keys are `keys`, from its rendered gaia/v1
// documents: the value each recorded config read of a key that `keys` covers returned
// (for a parent key, its secret members), and the config parameters the keys feed by
// the naming rule "<app>.<param path>" -> config.<param path> (web.session_secret ->
// config.session_secret).
SecretValues secret_values_of(const std::string& app, const SecretKeys& keys,
                              const std::vector<const nlohmann::json*>& documents);

// The same as a sorted list of texts, for `keys` as an app.yaml lists them.
std::vector<std::string> secret_values(const std::string& app, const std::vector<std::string>& keys,
                                       const std::vector<const nlohmann::json*>& documents);

// Whether `value` (as shown) reveals one of `secrets` (SecretValues::reveals).
bool reveals_secret(const nlohmann::json& value, const std::vector<std::string>& secrets);

}  // namespace gaia
