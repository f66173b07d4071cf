// ServerMetrics: what `GET /metrics` on the server exposes, in Prometheus's
// text format (0.0.4), kept with prometheus-cpp's core library (Debian's
// prometheus-cpp-dev): its counters and histograms are atomic, so events
// are counted and timed where they happen, on any thread.
//
// Two kinds of metric:
//   - events, recorded as they happen: scheduling cycles, submits, agent
//     syncs, store commits (durations, histograms in seconds), job starts
//     (queueing delay), job ends by state, preemptions and the GPU time
//     they lost;
//   - the cluster's state, read from the control loop at each scrape
//     (Gauges): jobs by queue and state, GPUs by state and by queue against
//     guarantee and limit, nodes by condition, and whether this server
//     leads.
// Names follow Prometheus's conventions: a `muster_` prefix, base units
// (seconds), `_total` for counters.
//
//   ServerMetrics m;
//   m.ObserveCycle(0.004);
//   std::string text = m.Scrape(gauges);
//
// Thread-safety: every method from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

namespace prometheus {
class Counter;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace muster::server {

class ServerMetrics {
 public:
  ServerMetrics();
  ~ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  void ObserveCycle(double seconds);
  // From a submit's arrival to its durable answer.
  void ObserveSubmit(double seconds);
  void ObserveSync(double seconds);
  void ObserveCommit(double seconds);
  // A job started: how long it waited since it was submitted (or requeued).
  void ObserveStart(const std::string& queue, double waited_seconds);
  // A job ended in `state` (COMPLETED, FAILED, CANCELLED, ...).
  void CountEnd(const std::string& queue, const std::string& state);
  // A job was preempted; the GPU time since its newest checkpoint is lost.
  void CountPreemption(const std::string& queue, double lost_gpu_seconds);
  // A replica of a job in `queue` was found straggling (server/straggler_detector.h).
  void CountStraggler(const std::string& queue);
  // A queue's running jobs held `gpu_seconds` of `gpu_type` GPUs in
  // `pool` (server/pool_prices.h), at `price_per_hour` each GPU-hour.
  void Charge(const std::string& queue, const std::string& gpu_type, const std::string& pool, double gpu_seconds,
              double price_per_hour);

  // The cluster as the control loop sees it at a scrape.
  struct Gauges {
    std::map<std::pair<std::string, std::string>, int64_t> jobs;  // (queue, state) -> jobs not ended
    int64_t gpus = 0;                                             // every GPU of every node
    int64_t gpus_allocated = 0;                                   // held by running jobs
    int64_t gpus_held = 0;       // free, but held for a job waiting for its preemption victims
    int64_t gpus_reserved = 0;   // free, but the backfill plan reserves them for a blocked job (a gang)
    int64_t gpus_cordoned = 0;   // free on nodes that take no new work (cordoned, draining, unreachable, lost)
    int64_t gpus_unhealthy = 0;  // reported unhealthy by their agents
    struct Queue {
      int64_t used = 0;
      int64_t guarantee = -1;  // -1: none configured
      int64_t limit = -1;      // -1: none
    };
    std::map<std::string, Queue> queues;
    std::map<std::string, double> oldest_pending_seconds;  // queue -> age of its oldest pending (not held) job
    double last_cycle_unix_seconds = 0;                    // when the last scheduling cycle ended (0: none yet)
    std::map<std::string, int64_t> nodes;                  // condition -> nodes
    int64_t straggling_replicas = 0;                       // straggling now
    int64_t syncs_waiting = 0;                             // agents' syncs waiting for news now
    bool leader = false;
    int64_t epoch = 0;
  };
  // Every metric, in the text format.
  std::string Scrape(const Gauges& gauges) const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Histogram* cycle_;
  prometheus::Histogram* submit_;
  prometheus::Histogram* sync_;
  prometheus::Histogram* commit_;
  prometheus::Family<prometheus::Histogram>* start_;
  prometheus::Family<prometheus::Counter>* ends_;
  prometheus::Family<prometheus::Counter>* preemptions_;
  prometheus::Family<prometheus::Counter>* lost_gpu_seconds_;
  prometheus::Family<prometheus::Counter>* stragglers_;
  prometheus::Family<prometheus::Counter>* gpu_seconds_;
  prometheus::Family<prometheus::Counter>* cost_;
};

}  // namespace muster::server
