#include "agent/utilization_meter.h"

#include <gtest/gtest.h>

namespace muster::agent {
namespace {

std::vector<gpu::GpuSample> Samples(std::vector<double> utilization) {
  std::vector<gpu::GpuSample> out;
  for (size_t i = 0; i < utilization.size(); ++i) out.push_back({static_cast<int32_t>(i), utilization[i], 0});
  return out;
}

TEST(UtilizationMeter, MeanOverRoundsOfTheTasksOwnGpus) {
  UtilizationMeter m;
  m.Add("a", {0, 1}, Samples({0.5, 1.0, 0.0, 0.0}));    // 0.75
  m.Add("b", {2}, Samples({0.5, 1.0, 0.2, 0.0}));       // 0.2
  m.Add("a", {0, 1}, Samples({0.25, 0.25, 1.0, 1.0}));  // 0.25
  EXPECT_DOUBLE_EQ(m.Mean("a"), 0.5);
  EXPECT_DOUBLE_EQ(m.Mean("b"), 0.2);
}

TEST(UtilizationMeter, UnknownUtilizationIsNotCountedAsIdle) {
  UtilizationMeter m;
  m.Add("a", {0, 1}, Samples({-1, 0.6}));
  m.Add("a", {0, 1}, Samples({-1, -1}));  // no known sample: the round is skipped
  m.Add("cpu-only", {}, Samples({0.9}));
  EXPECT_DOUBLE_EQ(m.Mean("a"), 0.6);
  EXPECT_EQ(m.Mean("cpu-only"), -1);
  EXPECT_EQ(m.Mean("never"), -1);
}

TEST(UtilizationMeter, RetainDropsTheOthers) {
  UtilizationMeter m;
  m.Add("a", {0}, Samples({0.5}));
  m.Add("b", {0}, Samples({0.5}));
  m.Retain({"b"});
  EXPECT_EQ(m.Mean("a"), -1);
  EXPECT_DOUBLE_EQ(m.Mean("b"), 0.5);
}

}  // namespace
}  // namespace muster::agent
