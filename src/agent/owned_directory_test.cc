#include "agent/owned_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

namespace muster::agent {
namespace {

namespace fs = std::filesystem;

class OwnedDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir() + "/owned_dir_" + std::to_string(::getpid())).lexically_normal().string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::chmod(dir_.c_str(), 0755);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static int Mode(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
  }
  std::string dir_;
};

TEST_F(OwnedDirectoryTest, MakesAMissingDirectoryWithItsModeAndLeavesItsOwnAlone) {
  const std::string state = dir_ + "/a/b/state";
  ASSERT_TRUE(MakeOwnedDirectory(state, 0700, ::geteuid(), "the state directory").ok());
  EXPECT_EQ(Mode(state), 0700);
  EXPECT_EQ(Mode(dir_ + "/a/b"), 0755);
  ::chmod(state.c_str(), 0777);
  ASSERT_TRUE(MakeOwnedDirectory(state, 0700, ::geteuid(), "the state directory").ok()) << "its own, loosened";
  EXPECT_EQ(Mode(state), 0700);
}

TEST_F(OwnedDirectoryTest, RefusesALinkNamingIt) {
  fs::create_directories(dir_ + "/elsewhere");
  fs::create_directory_symlink(dir_ + "/elsewhere", dir_ + "/state");
  const Status s = MakeOwnedDirectory(dir_ + "/state", 0700, ::geteuid(), "the state directory");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir_ + "/state"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("not a directory"), std::string::npos) << s.ToString();
}

// The security issue's attack 3: with the state directory under a
// world-writable parent, a user made the Slurm commands' directory first,
// and the agent adopted it (its wrappers then ran first on every job's
// PATH). Below a sticky parent (/var/tmp) the agent may make its own; one
// another user made is refused, and so is anything below a parent that
// others may write without the sticky bit.
TEST_F(OwnedDirectoryTest, RefusesADirectorySomeoneElseMadeOrCouldReplace) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (another user's directory)";
  const std::string shared = dir_ + "/vartmp";
  fs::create_directories(shared);
  ::chmod(shared.c_str(), 01777);
  ASSERT_TRUE(MakeOwnedDirectory(shared + "/x", 0700, 0, "the state directory").ok());
  const std::string premade = shared + "/x.slurm-bin";
  fs::create_directories(premade);
  ASSERT_EQ(::chown(premade.c_str(), 65534, 65534), 0);
  Status s = MakeOwnedDirectory(premade, 0755, 0, "the Slurm commands' directory");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(premade), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("owned by uid 65534"), std::string::npos) << s.ToString();
  struct stat st {};
  ASSERT_EQ(::stat(premade.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u) << "left as it was";

  const std::string open = dir_ + "/open";
  fs::create_directories(open);
  ::chmod(open.c_str(), 0777);
  s = MakeOwnedDirectory(open + "/state", 0700, 0, "the state directory");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(open + " (mode 0777)"), std::string::npos) << s.ToString();
  EXPECT_FALSE(fs::exists(open + "/state")) << "nothing is made below it";

  const std::string theirs = dir_ + "/theirs";
  fs::create_directories(theirs);
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  s = MakeOwnedDirectory(theirs + "/state", 0700, 0, "the state directory");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("owned by uid 65534"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace muster::agent
