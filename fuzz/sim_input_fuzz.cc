// libFuzzer target for the simulator's inputs: the trace reader
// (src/sim/trace_reader.h) and the cluster file (src/sim/cluster_file.h),
// then a simulation of what parsed.
//
// Traces and cluster files come from outside (published traces, files a
// user writes). Checks, aborting (a reported crash) when one breaks:
//   1. parsing and simulating never crash, throw, hang or overflow a signed
//      integer (libFuzzer, ASan and UBSan catch those);
//   2. a parse error is InvalidArgument without raw control characters;
//   3. a trace that parses simulates on a small cluster without an error,
//      and every job that ran ends after it started.
// The input is read whole as a trace and as a cluster file; a trace is cut
// to 64 jobs so each run stays short. See README.md.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fuzz_checks.h"
#include "sim/cluster_file.h"
#include "sim/simulator.h"
#include "sim/trace_reader.h"

namespace sim = muster::sim;
using muster::fuzz::Fail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);

  auto cluster = sim::ParseClusterYaml(input, "cluster.yaml");
  if (!cluster.ok()) muster::fuzz::CheckInputError(cluster.status());

  std::istringstream in(input);
  auto trace = sim::ReadTrace(in, "trace.csv");
  if (!trace.ok()) {
    muster::fuzz::CheckInputError(trace.status());
    return 0;
  }
  if (trace->size() > 64) trace->resize(64);
  sim::NodeFlags flags;
  flags.nodes = "4x8";
  auto small = sim::ClusterFromFlags(flags);
  if (!small.ok()) Fail("the small cluster", small.status().ToString());
  const auto result = sim::Simulate(*trace, *small, sim::SimOptions{});
  if (!result.ok()) Fail("a trace that parses does not simulate", result.status().ToString());
  for (const sim::JobResult& j : result->jobs) {
    if (j.start_s >= 0 && j.end_s >= 0 && j.end_s < j.start_s) Fail("a job ended before it started", j.trace_id);
  }
  return 0;
}
