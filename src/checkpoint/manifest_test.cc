#include "checkpoint/manifest.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "checkpoint/storage.h"

namespace muster::checkpoint {
namespace {

namespace fs = std::filesystem;

class CheckpointDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/muster-ckpt-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    dir_ = root_ + "/step-100";
    fs::create_directories(dir_ + "/shards");
    Write("model.pt", std::string(3 << 20, 'w'));  // more than one read buffer
    Write("shards/opt-0.pt", "optimizer state");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& rel, const std::string& data) { std::ofstream(dir_ + "/" + rel) << data; }
  std::string root_, dir_;
};

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_F(CheckpointDir, CommitThenVerify) {
  auto w = WriteManifest(dir_, 7, 2, 100, 1234);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->files, 2);
  EXPECT_EQ(w->bytes, (3 << 20) + 15);
  EXPECT_TRUE(Verify(dir_, w->manifest_sha256, 7).ok());
  std::ifstream in(dir_ + "/" + kManifestName);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  auto m = ParseManifest(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->job, 7);
  EXPECT_EQ(m->attempt, 2);
  EXPECT_EQ(m->step, 100);
  ASSERT_EQ(m->files.size(), 2u);
  EXPECT_EQ(m->files[0].path, "model.pt");
  EXPECT_EQ(m->files[1].path, "shards/opt-0.pt");
  EXPECT_FALSE(fs::exists(dir_ + "/.MANIFEST.json.tmp"));
  // Committed once.
  EXPECT_EQ(WriteManifest(dir_, 7, 2, 100, 1234).status().code(), StatusCode::kAlreadyExists);
}

TEST_F(CheckpointDir, EveryKindOfDamageIsCaughtAndNamed) {
  auto w = WriteManifest(dir_, 7, 2, 100, 1234);
  ASSERT_TRUE(w.ok());
  {  // one flipped byte, same size
    std::fstream f(dir_ + "/shards/opt-0.pt", std::ios::in | std::ios::out);
    f.seekp(3);
    f.put('X');
  }
  Status s = Verify(dir_, w->manifest_sha256, 7);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("shards/opt-0.pt does not match"), std::string::npos) << s.message();
  Write("shards/opt-0.pt", "optimizer state");
  ASSERT_TRUE(Verify(dir_, w->manifest_sha256, 7).ok());

  fs::resize_file(dir_ + "/model.pt", 10);  // truncated
  s = Verify(dir_, w->manifest_sha256, 7);
  EXPECT_NE(s.message().find("model.pt has 10 bytes"), std::string::npos) << s.message();
  fs::remove(dir_ + "/model.pt");  // missing
  s = Verify(dir_, w->manifest_sha256, 7);
  EXPECT_NE(s.message().find("model.pt is missing"), std::string::npos) << s.message();

  EXPECT_EQ(Verify(dir_, Sha256Hex("another manifest"), 7).code(), StatusCode::kDataLoss);  // a rewritten manifest
  EXPECT_EQ(Verify(root_ + "/nothing", w->manifest_sha256, 7).code(), StatusCode::kNotFound);
}

TEST_F(CheckpointDir, EmptyDirectoriesAndLinksAreRefused) {
  fs::create_directories(root_ + "/empty");
  EXPECT_EQ(WriteManifest(root_ + "/empty", 1, 1, 1, 0).status().code(), StatusCode::kInvalidArgument);
  fs::create_symlink("/etc/passwd", dir_ + "/link");
  auto w = WriteManifest(dir_, 1, 1, 1, 0);
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(w.status().message().find("symbolic link"), std::string::npos);
}

// A job controls its checkpoint directory; verification (as root, in the
// task shim) must not follow a link the job swaps in after the commit, nor
// block on a FIFO, nor read a device forever. The job's owner learns nothing
// of the files behind them (not even their size).
TEST_F(CheckpointDir, VerificationOpensOnlyRegularFilesBeneathTheDirectory) {
  auto w = WriteManifest(dir_, 7, 2, 100, 1234);
  ASSERT_TRUE(w.ok());
  const std::string secret = root_ + "/secret";
  fs::create_directories(secret);
  std::ofstream(secret + "/opt-0.pt") << "root's own data, 29 bytes lng";

  // A directory on the path replaced by a link to another directory.
  fs::rename(dir_ + "/shards", dir_ + "/shards.real");
  fs::create_directory_symlink(secret, dir_ + "/shards");
  Status s = Verify(dir_, w->manifest_sha256, 7);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("shards/opt-0.pt is a symbolic link or lies under one"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("29"), std::string::npos) << s.message();
  fs::remove(dir_ + "/shards");
  fs::rename(dir_ + "/shards.real", dir_ + "/shards");
  ASSERT_TRUE(Verify(dir_, w->manifest_sha256, 7).ok());

  // The file itself replaced by a FIFO (opening it for reading would block
  // until a writer came), then by a character device (endless bytes).
  fs::remove(dir_ + "/model.pt");
  ASSERT_EQ(::mkfifo((dir_ + "/model.pt").c_str(), 0600), 0);
  s = Verify(dir_, w->manifest_sha256, 7);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("model.pt is not a regular file"), std::string::npos) << s.message();
  fs::remove(dir_ + "/model.pt");
  fs::create_symlink("/dev/zero", dir_ + "/model.pt");
  s = Verify(dir_, w->manifest_sha256, 7);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("model.pt is a symbolic link"), std::string::npos) << s.message();

  // The manifest itself as a FIFO: no manifest to trust, and no hang.
  const std::string other = root_ + "/step-200";
  fs::create_directories(other);
  ASSERT_EQ(::mkfifo((other + "/" + kManifestName).c_str(), 0600), 0);
  EXPECT_EQ(Verify(other, w->manifest_sha256, 7).code(), StatusCode::kDataLoss);
}

TEST(ParseManifest, APathListedTwiceAndAnAttemptOutOfRangeAreRefused) {
  const std::string sha(64, 'a');
  const std::string file = R"({"path":"a/b","size":1,"sha256":")" + sha + R"("})";
  auto m = ParseManifest(R"({"job":1,"attempt":1,"step":1,"createdMs":0,"files":[)" + file + "," + file + "]}");
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().field(), "manifest.files[1].path");
  EXPECT_NE(m.status().message().find("the same path as files[0]"), std::string::npos) << m.status().message();
  for (const char* attempt : {"-1", "2147483648", "4294967297"}) {
    m = ParseManifest(std::string(R"({"job":1,"attempt":)") + attempt + R"(,"step":1,"createdMs":0,"files":[)" + file +
                      "]}");
    EXPECT_EQ(m.status().field(), "manifest.attempt") << attempt;
  }
  EXPECT_TRUE(ParseManifest(R"({"job":1,"attempt":2147483647,"step":1,"createdMs":0,"files":[)" + file + "]}").ok());
}

TEST(ParseManifest, PathsCannotLeaveTheDirectory) {
  const std::string sha(64, 'a');
  for (const char* bad : {"../etc/passwd", "/etc/passwd", "a/../../b", "./a", "a//b", ""}) {
    const std::string text = std::string(R"({"job":1,"attempt":1,"step":1,"createdMs":0,"files":[{"path":")") + bad +
                             R"(","size":1,"sha256":")" + sha + R"("}]})";
    auto m = ParseManifest(text);
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(m.status().field(), "manifest.files[0].path") << bad;
  }
  EXPECT_EQ(ParseManifest("[").status().field(), "manifest");
  EXPECT_EQ(ParseManifest(R"({"job":"x"})").status().field(), "manifest.job");
}

TEST_F(CheckpointDir, RemoveDeletesOnlyWhatWasCommittedThere) {
  DirectoryStorage storage;
  auto w = WriteManifest(dir_, 7, 2, 100, 1234);
  ASSERT_TRUE(w.ok());
  fs::create_directories(root_ + "/precious");
  std::ofstream(root_ + "/precious/data") << "keep me";
  EXPECT_EQ(storage.Remove(root_ + "/precious", w->manifest_sha256, 7).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(fs::exists(root_ + "/precious/data"));
  EXPECT_EQ(storage.Remove(dir_, Sha256Hex("x"), 7).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(fs::exists(dir_ + "/model.pt"));
  EXPECT_TRUE(storage.Remove(dir_ + "/", w->manifest_sha256, 7).ok());
  EXPECT_FALSE(fs::exists(dir_));
  EXPECT_TRUE(storage.Remove(dir_, w->manifest_sha256, 7).ok());  // idempotent
}

TEST_F(CheckpointDir, RemoveNeverFollowsALinkTheJobLeftInside) {
  DirectoryStorage storage;
  auto w = WriteManifest(dir_, 7, 2, 100, 1234);
  ASSERT_TRUE(w.ok());
  // After the commit the job adds links to what it may not delete, and a
  // directory nested deeper.
  fs::create_directories(root_ + "/precious/deep");
  std::ofstream(root_ + "/precious/deep/data") << "keep me";
  fs::create_directory_symlink(root_ + "/precious", dir_ + "/shards/to-dir");
  fs::create_symlink(root_ + "/precious/deep/data", dir_ + "/to-file");
  fs::create_directories(dir_ + "/a/b/c");
  std::ofstream(dir_ + "/a/b/c/x") << "x";
  ASSERT_TRUE(storage.Remove(dir_, w->manifest_sha256, 7).ok());
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir_)));
  EXPECT_TRUE(fs::exists(root_ + "/precious/deep/data"));

  // A location that is itself a link is refused, whatever it points to.
  auto again = WriteManifest(root_ + "/precious", 7, 3, 200, 1234);
  ASSERT_TRUE(again.ok());
  fs::create_directory_symlink(root_ + "/precious", root_ + "/alias");
  EXPECT_EQ(storage.Remove(root_ + "/alias", again->manifest_sha256, 7).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(fs::exists(root_ + "/precious/deep/data"));
}

// Another user's checkpoint (readable, so its manifest's SHA-256 is known)
// registered under one's own job: retention of that job must not delete it,
// and the job must not resume from it.
TEST_F(CheckpointDir, ACheckpointIsOnlyUsedOrDeletedForTheJobThatWroteIt) {
  DirectoryStorage storage;
  auto w = WriteManifest(dir_, 7, 2, 100, 1234);
  ASSERT_TRUE(w.ok());
  Status s = storage.Verify(dir_, w->manifest_sha256, 8);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("was written by job 7, not job 8"), std::string::npos) << s.message();
  s = storage.Remove(dir_, w->manifest_sha256, 8);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("not removed"), std::string::npos) << s.message();
  EXPECT_TRUE(fs::exists(dir_ + "/model.pt"));
  EXPECT_TRUE(storage.Verify(dir_, w->manifest_sha256, 7).ok());
}

TEST(IsBelow, Lexical) {
  EXPECT_TRUE(IsBelow("/ckpt/job/step-1", "/ckpt/job"));
  EXPECT_TRUE(IsBelow("/ckpt/job/a/../step-1", "/ckpt/job/"));
  EXPECT_FALSE(IsBelow("/ckpt/job", "/ckpt/job"));
  EXPECT_FALSE(IsBelow("/ckpt/job/..", "/ckpt/job"));
  EXPECT_FALSE(IsBelow("/ckpt/job/../other", "/ckpt/job"));
  EXPECT_FALSE(IsBelow("/ckpt/jobx/step", "/ckpt/job"));
  EXPECT_FALSE(IsBelow("relative/step", "/ckpt"));
  EXPECT_TRUE(StorageFor("/ckpt/x").ok());
  EXPECT_EQ(StorageFor("s3://bucket/x").status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace muster::checkpoint
