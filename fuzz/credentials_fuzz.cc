// libFuzzer target for what a caller presents as its identity: bearer
// tokens (src/auth/token.h), job tokens and log grants (src/auth/grants.h),
// token files (src/auth/client_credential.h) and the server's reading of an
// Authorization header (src/server/authenticator.h, with a token table of
// one user's and one node's token, MUNGE off).
//
// Promises checked, aborting when one breaks:
//   1. nothing crashes, throws or hangs;
//   2. a refusal is kUnauthenticated (the header, tokens, grants) or
//      kInvalidArgument / kNotFound (a token file), and its message has no
//      raw control character and never repeats the input's secret part;
//   3. what is accepted is exactly what was signed: a parsed token formats
//      back to its text, a verified job token or log grant is the one
//      SignJobToken or SignLogGrant makes for its claim;
//   4. the server's header reading accepts only the two tokens it holds,
//      and names the right user or node for each.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "auth/client_credential.h"
#include "auth/grants.h"
#include "auth/token.h"
#include "common/clock.h"
#include "fuzz_checks.h"
#include "server/authenticator.h"

namespace {

using muster::Status;
using muster::StatusCode;
using muster::fuzz::Fail;

void CheckRefusal(const Status& s, std::string_view input, std::initializer_list<StatusCode> allowed) {
  bool ok = false;
  for (StatusCode c : allowed) ok |= s.code() == c;
  if (!ok) Fail("unexpected error code", s.ToString());
  for (unsigned char c : s.ToString()) {
    if (c < 0x20 || c == 0x7F) Fail("raw control character in error", s.ToString());
  }
  // A token's secret (past "mst_<16 hex>_") must not come back in a
  // message: checked for inputs shaped like a token, whose would-be secret
  // is base64url (so it cannot be the message's own words).
  if (input.size() > 40 && input.substr(0, 4) == "mst_") {
    const std::string_view secret = input.substr(21, 20);
    const bool base64url =
        secret.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
        std::string_view::npos;
    if (base64url && s.message().find(secret) != std::string::npos) {
      Fail("the input's secret part is in the message", s.ToString());
    }
  }
}

struct Fixture {
  Fixture() : authn(clock, "none") {
    alice = muster::auth::NewToken();
    node = muster::auth::NewToken();
    authn.Load({{alice.id, muster::auth::Sha256Hex(alice.secret), "alice", "", "", "", 0, 0, 0},
                {node.id, muster::auth::Sha256Hex(node.secret), "", "n1", "", "", 0, 0, 0}});
    authn.SetClusterKey("cluster-key");
  }
  muster::SimClock clock;
  muster::server::Authenticator authn;
  muster::auth::Token alice, node;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* f = new Fixture();
  const std::string input(reinterpret_cast<const char*>(data), size);

  auto token = muster::auth::ParseToken(input);
  if (token.ok()) {
    const std::string again = muster::auth::FormatToken(*token);
    if (input.find(again) == std::string::npos) Fail("a parsed token does not format back to its text", input);
  } else {
    CheckRefusal(token.status(), input, {StatusCode::kUnauthenticated});
  }

  auto claim = muster::auth::VerifyJobToken("cluster-key", input);
  if (claim.ok()) {
    if (muster::auth::SignJobToken("cluster-key", claim->job, claim->attempt) != input) {
      Fail("a job token verified that is not the one signed for its claim", input);
    }
  } else {
    CheckRefusal(claim.status(), input, {StatusCode::kUnauthenticated});
  }

  const size_t bar = input.find('|');
  const std::string task = bar == std::string::npos ? "j1.a1.r0" : input.substr(0, bar);
  const std::string grant = bar == std::string::npos ? input : input.substr(bar + 1);
  if (Status g = muster::auth::VerifyLogGrant("node-key", task, grant, 1000); g.ok()) {
    const std::string expires = grant.substr(0, grant.find('.'));
    if (muster::auth::SignLogGrant("node-key", task, std::stoll(expires)) != grant) {
      Fail("a log grant verified that is not the one signed", input);
    }
  } else {
    CheckRefusal(g, "", {StatusCode::kUnauthenticated});
  }

  auto from_file = muster::auth::TokenFromText(input, "http://a:1,http://b:2", "tokens");
  if (!from_file.ok()) CheckRefusal(from_file.status(), "", {StatusCode::kInvalidArgument, StatusCode::kNotFound});

  muster::http::Request req;
  req.method = "GET";
  req.path = req.target = "/v1/jobs";
  req.headers.emplace_back("Authorization", input);
  auto who = f->authn.Authenticate(req);
  if (who.ok()) {
    const bool is_alice = input.find(muster::auth::FormatToken(f->alice)) != std::string::npos;
    const bool is_node = input.find(muster::auth::FormatToken(f->node)) != std::string::npos;
    const bool is_job = input.find("msj_") != std::string::npos;
    if (is_alice ? who->user != "alice" : is_node ? who->node != "n1" : !is_job) {
      Fail("a header was taken for an identity it does not carry", input);
    }
  } else {
    // "Bearer " and what follows it.
    const std::string_view value = input.size() > 7 ? std::string_view(input).substr(7) : std::string_view();
    CheckRefusal(who.status(), value, {StatusCode::kUnauthenticated});
  }
  return 0;
}
