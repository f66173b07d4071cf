// The authenticator's token records: loaded, put, and merged from the store
// without undoing what the API changed meanwhile.
#include "server/authenticator.h"

#include <gtest/gtest.h>

#include "auth/token.h"

namespace muster::server {
namespace {

struct Issued {
  std::string text;
  store::TokenRow row;
};

Issued Issue(const std::string& user) {
  const auth::Token t = auth::NewToken();
  return {auth::FormatToken(t), {t.id, auth::Sha256Hex(t.secret), user, "", "", "test", 1, 0, 0}};
}

StatusOr<Identity> As(const Authenticator& a, const std::string& token) {
  http::Request req;
  req.method = "GET";
  req.path = req.target = "/v1/jobs";
  req.headers = {{"Authorization", "Bearer " + token}};
  return a.Authenticate(req);
}

TEST(Authenticator, MergeAddsNewTokensAndRevocationsButNeverUndoesOne) {
  SimClock clock(Time::FromMillis(1000));
  Authenticator authn(clock, "none");
  Issued alice = Issue("alice"), bob = Issue("bob"), carol = Issue("carol");
  authn.Load({alice.row, bob.row});
  ASSERT_TRUE(As(authn, alice.text).ok());
  EXPECT_EQ(As(authn, carol.text).status().code(), StatusCode::kUnauthenticated);

  // The API revokes bob while a refresh is reading the store, which still
  // said bob was valid: the refresh must not bring bob back.
  store::TokenRow bob_revoked = bob.row;
  bob_revoked.revoked_ms = 500;
  authn.Put(bob_revoked);
  authn.Merge({alice.row, bob.row, carol.row});
  EXPECT_EQ(As(authn, bob.text).status().code(), StatusCode::kUnauthenticated);
  // carol, written by another process, now works.
  auto c = As(authn, carol.text);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->user, "carol");
  // alice, revoked by another process, stops working.
  store::TokenRow alice_revoked = alice.row;
  alice_revoked.revoked_ms = 900;
  authn.Merge({alice_revoked, carol.row});
  EXPECT_EQ(As(authn, alice.text).status().code(), StatusCode::kUnauthenticated);
  // Tokens the refresh no longer sees (a store read of a moment) are kept.
  authn.Merge({});
  EXPECT_TRUE(As(authn, carol.text).ok());
}

}  // namespace
}  // namespace muster::server
