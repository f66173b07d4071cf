#include "cli/slurm_request.h"

#include <gtest/gtest.h>

#include "api/array_indices.h"

namespace muster::cli {
namespace {

StatusOr<SlurmShape> Shape(const std::vector<std::string>& words, int64_t largest_node_cpus = 128) {
  auto options = ReadSbatchOptions(words);
  if (!options.ok()) return options.status();
  SlurmRequest r;
  for (const SbatchOption& o : *options) {
    ASSIGN_OR_RETURN(const bool taken, TakeResourceOption(r, o, "--" + o.name));
    EXPECT_TRUE(taken) << o.name;
  }
  return ResolveSlurmShape(r, largest_node_cpus, "job.sh");
}

struct Row {
  std::vector<std::string> words;
  int64_t nodes, tasks, tasks_per_node, cpus_per_node, gpus_per_node;
  std::optional<int64_t> memory_mib;
  bool exclusive = false;
};

// Each row is a rule of slurm_request.h, as Slurm applies it.
TEST(SlurmShape, NodesTasksCpusGpusAndMemoryPerNode) {
  const std::vector<Row> rows = {
      {{"--nodes=2", "--ntasks-per-node=8", "--cpus-per-task=10", "--gres=gpu:8"}, 2, 16, 8, 80, 8, {}},
      {{"-N", "4", "--ntasks=4", "--cpus-per-task=96", "--gpus-per-task=8"}, 4, 4, 1, 96, 8, {}},
      {{"--ntasks=8", "--ntasks-per-node=4"}, 2, 8, 4, 4, 0, {}},
      {{"--ntasks=6"}, 1, 6, 6, 6, 0, {}},
      {{"-n", "384", "--gpus-per-node=8", "--exclusive"}, 3, 384, 128, 128, 8, {}, true},
      {{"--nodes=2", "--ntasks=3"}, 2, 3, 2, 2, 0, {}},  // block distribution: 2 + 1
      {{"--gpus=16", "--nodes=2"}, 2, 2, 1, 1, 8, {}},
      {{"--ntasks=4", "--ntasks-per-node=2", "--gpus-per-task=l40s:1", "--mem-per-gpu=16G"}, 2, 4, 2, 2, 2, 32768},
      {{"--nodes=2", "--ntasks-per-node=2", "-c", "8", "--mem-per-cpu=4G"}, 2, 4, 2, 16, 0, 65536},
      {{"--mem=228GB"}, 1, 1, 1, 1, 0, 228 * 1024},
      {{"--mem=4096"}, 1, 1, 1, 1, 0, 4096},
      {{"--nodes=16", "--exclusive", "--mem=0", "--overcommit", "--ntasks-per-node=8"}, 16, 128, 8, 1, 0, {}, true},
      {{"--ntasks=2", "--ntasks-per-gpu=2", "--gres=gpu:l40s:1"}, 1, 2, 2, 2, 1, {}},
      {{"--ntasks-per-gpu=2", "--gpus=2"}, 1, 4, 4, 4, 2, {}},
      {{"--nodes=1-4"}, 1, 1, 1, 1, 0, {}},
      {{"--mem=0"}, 1, 1, 1, 1, 0, {}, true},
  };
  for (const Row& row : rows) {
    std::string text;
    for (const std::string& w : row.words) text += w + " ";
    SCOPED_TRACE(text);
    auto s = Shape(row.words);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->nodes, row.nodes);
    EXPECT_EQ(s->tasks, row.tasks);
    EXPECT_EQ(s->tasks_per_node, row.tasks_per_node);
    EXPECT_EQ(s->cpus_per_node, row.cpus_per_node);
    EXPECT_EQ(s->gpus_per_node, row.gpus_per_node);
    EXPECT_EQ(s->memory_mib_per_node, row.memory_mib);
    EXPECT_EQ(s->exclusive, row.exclusive);
  }
  EXPECT_EQ(Shape({"--gpus-per-node=l40s:2"})->gpu_type, "l40s");
  EXPECT_EQ(Shape({"-C", "a100&gpu80"})->features, (std::vector<std::string>{"a100", "gpu80"}));
  EXPECT_EQ(Shape({"-C", "a100,gpu80"})->features, (std::vector<std::string>{"a100", "gpu80"}));
  EXPECT_EQ(Shape({"-C", "a100|h100"})->features, (std::vector<std::string>{"a100|h100"}));
  EXPECT_EQ(Shape({"-C", "(a100|h100)&ib"})->features, (std::vector<std::string>{"a100|h100", "ib"}));
  EXPECT_EQ(Shape({"-C", "ib&(a100|h100|l40s)"})->features, (std::vector<std::string>{"ib", "a100|h100|l40s"}));
  EXPECT_EQ(Shape({"--nodes=1-4"})->warnings.size(), 1u);
}

TEST(SlurmShape, WhatCannotBeReadIsRefusedWithTheReason) {
  const auto error = [](const std::vector<std::string>& words, int64_t largest = 128) {
    auto s = Shape(words, largest);
    return s.ok() ? std::string("accepted") : s.status().message();
  };
  EXPECT_EQ(error({"--mem=4G", "--mem-per-cpu=1G"}),
            "--mem-per-cpu: --mem, --mem-per-cpu and --mem-per-gpu exclude each other (--mem was given too)");
  EXPECT_EQ(error({"--mem=4Q"}),
            "--mem: expected a size such as 4096 (MiB), 64G or 228GB (K, M, G, T: powers of 1024), got \"4Q\"");
  EXPECT_EQ(error({"--ntasks=4"}, 0),
            "job.sh: #SBATCH --ntasks=4 without --nodes or --ntasks-per-node needs the size of the cluster's nodes, "
            "which is not known here");
  EXPECT_EQ(error({"--nodes=4", "--ntasks=2"}),
            "job.sh: #SBATCH --ntasks=2 is fewer than the 4 nodes asked for: every node runs at least one task");
  EXPECT_EQ(error({"--gres=gpu:a100:2", "--gpus-per-node=h100:2"}),
            "--gpus-per-node: GPU type h100 differs from a100 asked before");
  EXPECT_EQ(error({"--gres=gpu:2", "--gpus-per-node=4"}),
            "job.sh: #SBATCH --gres=gpu:2 and --gpus-per-node=4 ask for different GPU counts per node");
  EXPECT_EQ(error({"--constraint=[a100|v100]"}),
            "--constraint=[a100|v100]: all nodes with the same one of several features ([a|b]) and node counts (a*2) "
            "are not supported; a|b lets each node have either");
  EXPECT_EQ(error({"--constraint=a|b&c"}), "--constraint=a|b&c: mixing & and | needs parentheses: (a|b)&c or a&(b|c)");
  EXPECT_EQ(error({"--constraint=(a&b)|c"}),
            "--constraint=(a&b)|c: only features that must all hold, each a feature or a choice, are supported: "
            "a&b, a|b, (a|b)&c");
  EXPECT_EQ(error({"--constraint=(a|b"}), "--constraint=(a|b: a '(' without its ')'");
  EXPECT_EQ(error({"--constraint=a||b"}),
            "--constraint=a||b: expected feature names (letters, digits, ._-) joined by & or |");
  EXPECT_EQ(error({"--mem-per-gpu=8G"}),
            "--mem-per-gpu needs GPUs (--gpus-per-node, --gres=gpu:N, --gpus-per-task or --gpus)");
  EXPECT_EQ(error({"--array=5-1"}),
            "--array: \"5-1\" is not an index N, a range N-M (N <= M) or N-M:STEP of indices 0 to 4000000");
}

TEST(ArrayIndices, SlurmsSyntax) {
  auto a = api::ParseArrayIndices("500-17000:1000%26", 10000);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->indices.size(), 17u);
  EXPECT_EQ(a->indices.front(), 500);
  EXPECT_EQ(a->indices.back(), 16500);
  EXPECT_EQ(a->max_running, 26);
  EXPECT_EQ(api::ArrayIndicesText(*a), "500-16500:1000%26");
  a = api::ParseArrayIndices("1,3,5,2,3", 10000);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->indices, (std::vector<int32_t>{1, 2, 3, 5}));
  EXPECT_EQ(api::ArrayIndicesText(*a), "1-3,5");
  EXPECT_EQ(api::ArrayIndicesText(*api::ParseArrayIndices("0-15:4", 100)), "0-12:4");
  EXPECT_FALSE(api::ParseArrayIndices("0-20000", 10000).ok());
  EXPECT_FALSE(api::ParseArrayIndices("1-10%0", 10000).ok());
  EXPECT_FALSE(api::ParseArrayIndices("", 10000).ok());
  EXPECT_FALSE(api::ParseArrayIndices("a", 10000).ok());
}

}  // namespace
}  // namespace muster::cli
