// Test certificates for the stand-in's TLS, made by the openssl command: a CA, a server
// certificate for 127.0.0.1 and localhost, and a client certificate, all signed by the
// CA. EC keys (P-256) keep this fast.

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "standin/kube_apiserver.hpp"

namespace gaia::standin {

namespace {

std::string quote(const std::filesystem::path& path) {
  std::string out = "'";
  for (char c : path.string()) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

void run(const std::string& command) {
  std::string quiet = command + " >/dev/null 2>&1";
  int status = std::system(quiet.c_str());
  if (status != 0) throw std::runtime_error(fmt::format("make_test_certificates: failed ({}): {}", status, command));
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("make_test_certificates: cannot write " + path.string());
}

// A key and a certificate named `name`, signed by the CA, with the extensions in `ext`.
void signed_pair(const std::filesystem::path& dir, const std::string& name, const std::string& subject,
                 const std::string& ext) {
  auto key = dir / (name + ".key"), csr = dir / (name + ".csr"), crt = dir / (name + ".crt"),
       extfile = dir / (name + ".ext");
  write_file(extfile, ext);
  run(fmt::format("openssl req -batch -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout {} -out {} "
                  "-subj {}",
                  quote(key), quote(csr), quote(subject)));
  run(fmt::format("openssl x509 -req -in {} -CA {} -CAkey {} -CAcreateserial -out {} -days 3650 -sha256 -extfile {}",
                  quote(csr), quote(dir / "ca.crt"), quote(dir / "ca.key"), quote(crt), quote(extfile)));
  std::filesystem::remove(csr);
  std::filesystem::remove(extfile);
}

}  // namespace

TestCertificates make_test_certificates(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  run(fmt::format("openssl req -batch -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout {} "
                  "-out {} -days 3650 -sha256 -subj '/CN=gaia-standin-ca' "
                  "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign",
                  quote(dir / "ca.key"), quote(dir / "ca.crt")));
  signed_pair(dir, "server", "/CN=127.0.0.1",
              "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
              "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n");
  // Kubernetes reads the user from CN and the groups from O.
  signed_pair(dir, "client", "/CN=gaia/O=system:masters",
              "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
              "extendedKeyUsage=clientAuth\n");
  std::filesystem::remove(dir / "ca.srl");
  return {dir / "ca.crt", dir / "ca.key", dir / "server.crt", dir / "server.key", dir / "client.crt", dir / "client.key"};
}

}  // namespace gaia::standin
