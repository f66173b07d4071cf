#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "../../test/munged.h"
#include "auth/client_credential.h"
#include "auth/grants.h"
#include "auth/munge.h"
#include "auth/request_binding.h"
#include "auth/token.h"

namespace muster::auth {
namespace {

TEST(Token, FormatsAndParsesBack) {
  const Token t = NewToken();
  EXPECT_EQ(t.id.size(), 16u);
  EXPECT_EQ(t.secret.size(), 43u);
  const std::string text = FormatToken(t);
  auto back = ParseToken("  " + text + "\n");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->id, t.id);
  EXPECT_EQ(back->secret, t.secret);
}

TEST(Token, EachIsNew) {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) EXPECT_TRUE(seen.insert(FormatToken(NewToken())).second);
}

TEST(Token, RefusesMalformedWithoutEchoingIt) {
  const std::string good = FormatToken(NewToken());
  for (const std::string& bad :
       {std::string(""), std::string("Bearer"), "xst_" + good.substr(4), good + "A", good.substr(0, good.size() - 1),
        "mst_ABCDEF0123456789_" + good.substr(21), good.substr(0, 20) + "-" + good.substr(21),
        good.substr(0, 30) + "!" + good.substr(31)}) {
    auto t = ParseToken(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), StatusCode::kUnauthenticated);
    if (bad.size() > 24) {
      EXPECT_EQ(t.status().message().find(bad.substr(21)), std::string::npos);
    }
  }
}

TEST(Digest, KnownValues) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // RFC 4231 test case 2.
  EXPECT_EQ(HmacSha256Hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_EQ(RandomHex(16).size(), 32u);
}

TEST(Grants, JobTokenVerifiesOnlyUnderItsKeyAndClaim) {
  const std::string token = SignJobToken("key-1", 42, 3);
  EXPECT_TRUE(IsJobToken(token));
  auto c = VerifyJobToken("key-1", token);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->job, 42);
  EXPECT_EQ(c->attempt, 3);
  EXPECT_FALSE(VerifyJobToken("key-2", token).ok());
  // Another job or attempt with the same MAC: the MAC covers the claim.
  std::string other = token;
  other.replace(4, 2, "43");
  EXPECT_FALSE(VerifyJobToken("key-1", other).ok());
  for (const char* bad : {"msj_", "msj_42_3", "msj_042_3_00", "msj_-1_3_00", "msj_42_0_00", "msj_42_3_"}) {
    EXPECT_FALSE(VerifyJobToken("key-1", bad).ok()) << bad;
  }
}

TEST(Grants, LogGrantIsForOneTaskUntilItExpires) {
  const std::string g = SignLogGrant("node-key", "j1.a1.r0", 10'000);
  EXPECT_TRUE(VerifyLogGrant("node-key", "j1.a1.r0", g, 9'000).ok());
  EXPECT_FALSE(VerifyLogGrant("node-key", "j1.a1.r0", g, 10'001).ok());
  EXPECT_FALSE(VerifyLogGrant("node-key", "j2.a1.r0", g, 9'000).ok());
  EXPECT_FALSE(VerifyLogGrant("other-key", "j1.a1.r0", g, 9'000).ok());
  // A later expiry with the old MAC.
  EXPECT_FALSE(VerifyLogGrant("node-key", "j1.a1.r0", "99999" + g.substr(g.find('.')), 9'000).ok());
  EXPECT_FALSE(VerifyLogGrant("node-key", "j1.a1.r0", "garbage", 9'000).ok());
}

TEST(RequestBinding, CoversMethodTargetAndBody) {
  const std::string d = RequestDigest("POST", "/v1/jobs", "{}");
  EXPECT_NE(d, RequestDigest("GET", "/v1/jobs", "{}"));
  EXPECT_NE(d, RequestDigest("POST", "/v1/jobs?x=1", "{}"));
  EXPECT_NE(d, RequestDigest("POST", "/v1/jobs", "{ }"));
  EXPECT_EQ(d, RequestDigest("POST", "/v1/jobs", "{}"));
}

class TokenFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/token_file_" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    path_ = dir_ + "/token";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& text, mode_t mode = 0600) {
    std::ofstream(path_, std::ios::trunc) << text;
    ::chmod(path_.c_str(), mode);
  }
  std::string dir_, path_;
};

TEST_F(TokenFile, PicksTheLineOfTheServerInUseElseTheBareOne) {
  Write("# mine\nmst_bare\nhttp://a:1 mst_a\nhttp://b:2/ mst_b  # the other\n");
  EXPECT_EQ(*ReadTokenFile(path_, "http://b:2"), "mst_b");
  EXPECT_EQ(*ReadTokenFile(path_, "http://x:1, http://a:1"), "mst_a");
  EXPECT_EQ(*ReadTokenFile(path_, "http://c:3"), "mst_bare");
}

TEST_F(TokenFile, RefusesAFileOthersCanRead) {
  Write("mst_x\n", 0644);
  auto t = ReadTokenFile(path_, "http://a:1");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("chmod 600"), std::string::npos) << t.status().message();
}

TEST_F(TokenFile, FindCredentialOrderIsMungeThenFileThenEnvironment) {
  Write("mst_from_file\n");
  CredentialSources s{"none", path_, "mst_from_env"};
  auto c = FindCredential(s, "http://a:1");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*(*c)->Authorization("GET", "/", ""), "Bearer mst_from_file");
  s.token_file = dir_ + "/absent";
  c = FindCredential(s, "http://a:1");
  EXPECT_EQ(*(*c)->Authorization("GET", "/", ""), "Bearer mst_from_env");
  s.env_token.clear();
  c = FindCredential(s, "http://a:1");
  EXPECT_EQ(*(*c)->Authorization("GET", "/", ""), "");
  EXPECT_NE((*c)->Describe().find("MUSTER_TOKEN is not set"), std::string::npos) << (*c)->Describe();

  testing::MungeDaemon munged;
  ASSERT_TRUE(munged.Start());
  s = {munged.socket(), path_, "mst_from_env"};
  c = FindCredential(s, "http://a:1");
  auto header = (*c)->Authorization("GET", "/v1/jobs", "");
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  EXPECT_EQ(header->rfind("MUNGE MUNGE:", 0), 0u) << *header;
}

// Inside a job, its job token wins over a token file in the user's home
// (which may be for another server) and over MUNGE.
TEST_F(TokenFile, AJobTokenInTheEnvironmentComesFirst) {
  Write("mst_from_file\n");
  const std::string job_token = SignJobToken("cluster-key", 7, 1);
  ASSERT_TRUE(IsJobToken(job_token));
  testing::MungeDaemon munged;
  ASSERT_TRUE(munged.Start());
  CredentialSources s{munged.socket(), path_, job_token};
  auto c = FindCredential(s, "http://a:1");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*(*c)->Authorization("GET", "/", ""), "Bearer " + job_token);
  EXPECT_NE((*c)->Describe().find("the job's token"), std::string::npos) << (*c)->Describe();
}

TEST(Munge, DecodesOnceWithTheCallersUidAndPayload) {
  testing::MungeDaemon munged;
  ASSERT_TRUE(munged.Start());
  auto cred = MungeEncode(munged.socket(), "hello");
  ASSERT_TRUE(cred.ok()) << cred.status().ToString();
  auto d = MungeDecode(munged.socket(), *cred);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->uid, ::geteuid());
  EXPECT_EQ(d->payload, "hello");
  // The same credential again: munged's replay cache refuses it.
  auto again = MungeDecode(munged.socket(), *cred);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(again.status().message().find("replayed"), std::string::npos) << again.status().message();
}

TEST(Munge, RefusesAnotherClustersKeyAndTampering) {
  testing::MungeDaemon ours, theirs;
  ASSERT_TRUE(ours.Start());
  ASSERT_TRUE(theirs.Start());
  auto cred = MungeEncode(theirs.socket(), "x");
  ASSERT_TRUE(cred.ok());
  auto d = MungeDecode(ours.socket(), *cred);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kUnauthenticated);
  auto mine = MungeEncode(ours.socket(), "x");
  ASSERT_TRUE(mine.ok());
  std::string bent = *mine;
  bent[bent.size() / 2] = bent[bent.size() / 2] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(MungeDecode(ours.socket(), bent).ok());
  EXPECT_FALSE(MungeDecode(ours.socket(), "not a credential").ok());
  EXPECT_EQ(MungeDecode(ours.dir() + "/absent.sock", *mine).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace muster::auth
