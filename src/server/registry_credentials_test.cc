#include "server/registry_credentials.h"

#include <gtest/gtest.h>

namespace muster::server {
namespace {

TEST(ImageRegistryTest, TheFirstComponentWhenItIsAHost) {
  EXPECT_EQ(ImageRegistry("nvcr.io/nvidia/pytorch:24.05-py3"), "nvcr.io");
  EXPECT_EQ(ImageRegistry("127.0.0.1:5000/team/img:1"), "127.0.0.1:5000");
  EXPECT_EQ(ImageRegistry("localhost/img"), "localhost");
  EXPECT_EQ(ImageRegistry("ubuntu:22.04"), "docker.io");
  EXPECT_EQ(ImageRegistry("pytorch/pytorch:2.3.0"), "docker.io") << "a Docker Hub organization";
}

TEST(RegistryCredentialsTest, AJobUsesItsUsersCredentialElseItsQueues) {
  RegistryCredentials r;
  r.Put({"queue", "research", "nvcr.io", "$oauthtoken", "queue-key", "admin", 1});
  r.Put({"user", "ann", "nvcr.io", "ann", "ann-key", "ann", 2});
  r.Put({"user", "bob", "ghcr.io", "bob", "bob-key", "bob", 3});
  EXPECT_EQ(r.ForJob("ann", "research", "nvcr.io/nvidia/pytorch:24.05")->password, "ann-key");
  EXPECT_EQ(r.ForJob("bob", "research", "nvcr.io/nvidia/pytorch:24.05")->password, "queue-key");
  EXPECT_FALSE(r.ForJob("bob", "other", "nvcr.io/nvidia/pytorch:24.05")) << "not another user's";
  EXPECT_FALSE(r.ForJob("ann", "research", "ghcr.io/bob/img:1")) << "bob's is bob's alone";
  EXPECT_FALSE(r.ForJob("ann", "research", "ubuntu:22.04"));
  EXPECT_TRUE(r.Remove("user", "ann", "nvcr.io"));
  EXPECT_FALSE(r.Remove("user", "ann", "nvcr.io"));
  EXPECT_EQ(r.ForJob("ann", "research", "nvcr.io/nvidia/pytorch:24.05")->password, "queue-key");
}

TEST(RegistryCredentialsTest, TheStoredDocumentRoundTripsAndDamageIsSaid) {
  RegistryCredentials r;
  r.Put({"user", "ann", "nvcr.io", "ann", "s3cret", "ann", 2});
  r.Put({"queue", "q", "ghcr.io", "bot", "t0ken", "root", 3});
  RegistryCredentials back;
  ASSERT_TRUE(back.Load(r.Dump()).ok());
  EXPECT_EQ(back.Dump(), r.Dump());
  ASSERT_EQ(back.All().size(), 2u);
  EXPECT_EQ(back.All()[1].created_by, "ann");
  EXPECT_TRUE(back.Load("").ok());
  EXPECT_TRUE(back.All().empty());
  EXPECT_EQ(back.Load("{").code(), StatusCode::kDataLoss);
  EXPECT_EQ(back.Load(R"([{"scope":"group","owner":"x","registry":"r"}])").code(), StatusCode::kDataLoss);
  EXPECT_EQ(back.Load(R"([{"scope":"user","owner":"x","registry":"r","createdMs":"2"}])").code(),
            StatusCode::kDataLoss);
  EXPECT_TRUE(back.All().empty());
}

}  // namespace
}  // namespace muster::server
