// Checks of a task's resume candidates, as the shim does them before its
// payload starts: with the task's identity when it runs as another user.
#include "agent/resume_check.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "checkpoint/manifest.h"

namespace muster::agent {
namespace {

namespace fs = std::filesystem;

class ResumeCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/muster-resume-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    ::chmod(root_.c_str(), 0755);
  }
  void TearDown() override { fs::remove_all(root_); }

  // A committed checkpoint of job 7 in root_/name, its directory `mode`.
  proto::ResumeCandidate Commit(const std::string& name, int64_t seq, mode_t mode) {
    const std::string dir = root_ + "/" + name;
    fs::create_directories(dir);
    std::ofstream(dir + "/weights.bin") << "weights of " << name;
    ::chmod((dir + "/weights.bin").c_str(), 0644);
    auto w = checkpoint::WriteManifest(dir, 7, 1, seq * 100, 0);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    ::chmod((dir + "/" + checkpoint::kManifestName).c_str(), 0644);
    ::chmod(dir.c_str(), mode);
    return {seq, seq * 100, dir, w.ok() ? w->manifest_sha256 : ""};
  }
  std::string root_;
};

TEST_F(ResumeCheckTest, StopsAtTheFirstSoundCandidate) {
  TaskSpec spec;
  spec.job = 7;
  spec.resume = {Commit("step-3", 3, 0755), Commit("step-2", 2, 0755), Commit("step-1", 1, 0755)};
  std::ofstream(spec.resume[0].location + "/weights.bin") << "damaged";
  const std::vector<Status> v = CheckResumeCandidates(spec);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].code(), StatusCode::kDataLoss) << v[0].ToString();
  EXPECT_TRUE(v[1].ok()) << v[1].ToString();
  spec.job = 8;  // not the job that wrote them: none is sound
  const std::vector<Status> other = CheckResumeCandidates(spec);
  ASSERT_EQ(other.size(), 3u);
  for (const Status& s : other) EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
}

// The shim runs as root. A task that runs as another user has its
// checkpoints checked with that user's rights: a directory only root may
// read is not sound for it (the job could not have read it either), while
// one it may read is.
TEST_F(ResumeCheckTest, ATaskRunAsAUserIsCheckedWithThatUsersRights) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to take another identity";
  TaskSpec spec;
  spec.job = 7;
  spec.run_as = true;
  spec.uid = 65534;  // nobody
  spec.gid = 65534;
  spec.resume = {Commit("root-only", 2, 0700), Commit("readable", 1, 0755)};
  const std::vector<Status> v = CheckResumeCandidates(spec);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_FALSE(v[0].ok());
  EXPECT_NE(v[0].message().find("Permission denied"), std::string::npos) << v[0].ToString();
  EXPECT_TRUE(v[1].ok()) << v[1].ToString();

  spec.run_as = false;  // the shim's own rights: root reads both
  const std::vector<Status> as_root = CheckResumeCandidates(spec);
  ASSERT_EQ(as_root.size(), 1u);
  EXPECT_TRUE(as_root[0].ok()) << as_root[0].ToString();
}

}  // namespace
}  // namespace muster::agent
