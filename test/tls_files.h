// Certificates for TLS tests, made with the `openssl` command (Debian's
// openssl package) in a directory of the test's own: a CA of its own, a
// server certificate it signed for localhost, 127.0.0.1 and ::1, one it
// signed for another name only, one that expired, and a second CA that
// signed nothing the server uses.
#pragma once

#include <sys/stat.h>

#include <string>

#include "run_binary.h"

namespace muster::testing {

struct TlsFiles {
  std::string dir;
  std::string ca;                         // ca.crt: the CA that signed server.crt
  std::string cert, key;                  // server.crt, server.key (mode 0600)
  std::string other_cert, other_key;      // for "elsewhere.test" only
  std::string expired_cert, expired_key;  // for localhost, expired
  std::string stranger_ca;                // a CA that signed none of them
  std::string error;                      // why making them failed; "" when they are made
};

inline TlsFiles MakeTlsFiles(const std::string& dir) {
  TlsFiles f;
  f.dir = dir;
  f.ca = dir + "/ca.crt";
  f.cert = dir + "/server.crt";
  f.key = dir + "/server.key";
  f.other_cert = dir + "/other.crt";
  f.other_key = dir + "/other.key";
  f.expired_cert = dir + "/expired.crt";
  f.expired_key = dir + "/expired.key";
  f.stranger_ca = dir + "/stranger.crt";
  const std::string d = "'" + dir + "'";
  // sign NAME CN SAN DAYS: a key and a certificate the CA signs (-1 days: expired yesterday).
  const std::string script =
      "set -e; cd " + d +
      "; umask 077;"
      " ca() { openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $1.key -out $1.crt"
      "   -subj /CN=$2 -days 2 2>/dev/null; };"
      " sign() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $1.key -out $1.csr"
      "   -subj /CN=$2 2>/dev/null;"
      "   printf 'subjectAltName=%s\\nextendedKeyUsage=serverAuth\\n' \"$3\" > $1.ext;"
      "   openssl x509 -req -in $1.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out $1.crt -days $4"
      "   -extfile $1.ext 2>/dev/null; };"
      " ca ca muster-test-ca; ca stranger stranger-ca;"
      " sign server localhost 'DNS:localhost,IP:127.0.0.1,IP:::1' 2;"
      " sign other elsewhere.test DNS:elsewhere.test 2;"
      " sign expired localhost 'DNS:localhost,IP:127.0.0.1' -1;"
      " chmod 644 ca.crt server.crt other.crt expired.crt stranger.crt";
  const CommandResult r = RunCommand("mkdir -p " + d + " && " + script);
  struct stat st {};
  if (r.code != 0 || ::stat(f.cert.c_str(), &st) != 0 || ::stat(f.expired_cert.c_str(), &st) != 0) {
    f.error = "openssl failed (" + std::to_string(r.code) + "): " + r.out;
  }
  return f;
}

}  // namespace muster::testing
