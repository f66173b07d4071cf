// JobWatch: job changes pushed to watchers as they become durable (the
// watch API, GET /v1/jobs?watch=true, and `muster get jobs --watch`).
//
// Versions. Each durable batch that wrote job rows is published here, from
// the store writer's callback, in commit order, and gets the next resource
// version ("<run>-<n>": <run> tells this run of the server from others). A
// list answers with the version it read at (ListVersion): every change up
// to it is in the store the list then reads. A client lists, then watches
// from that version, and misses nothing. The newest `retained` changes are
// kept, while someone watches or has listed within `keep_after_list`; a
// version older than what is kept, or of another run, is expired: the
// client lists again (Kubernetes' contract, 410 Gone).
//
// Lines. A watch writes NDJSON to its HTTP stream, one object a line:
//   {"type":"ADDED","resourceVersion":"..","object":{a job, as lists give it}}
//   MODIFIED, DELETED likewise; {"type":"BOOKMARK","resourceVersion":".."}
//   after `bookmark_every` of silence; {"type":"ERROR","object":{"code":410,
//   "reason":"Expired","message":".."}} and the stream's end, when the watch
//   fell behind what is kept.
// Each change is judged against the watch's filter (store::JobFilter, as a
// list applies it) before and after it: ADDED when the job passes it now
// and did not (a job submitted, or one whose state entered the filter's),
// MODIFIED when it passed before and does now, DELETED when it passed
// before and no longer does (a job that left the listed states). Jobs are
// never removed.
//
// One pump thread writes every watch's lines: a job's JSON is rendered off
// the control loop and the store writer, once for all watches.
//
// Thread-safety: every method from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "http/server.h"
#include "store/store.h"

namespace muster::server {

class JobWatch {
 public:
  struct Options {
    size_t retained = 10'000;                  // changes kept for watches to resume from
    size_t retained_bytes = size_t{64} << 20;  // and at most about this much memory (rows and their JSON)
    std::chrono::milliseconds bookmark_every{10'000};
    Duration keep_after_list = Duration::Minutes(2);
  };
  // One job row a durable batch wrote.
  struct Change {
    store::JobRow row;
    // Its state before the batch: "" for a job submitted in it; nullopt
    // when the batch left its state as it was.
    std::optional<std::string> state_before;
  };

  JobWatch(const Clock& clock, Options options);
  ~JobWatch();  // Stop()
  JobWatch(const JobWatch&) = delete;
  JobWatch& operator=(const JobWatch&) = delete;

  void Start();  // the pump thread
  // Ends every watch (their streams' last chunk) and joins the pump.
  void Stop();

  // Whether changes are kept now: if not, Publish needs none of them.
  bool Keeping() const;
  // A durable batch that wrote job rows, in commit order: the next
  // version. `changes` empty while not Keeping(): the version is not kept.
  void Publish(std::vector<Change> changes);
  // The newest version, for a list's answer; changes are kept for
  // keep_after_list from now, for the watch that follows.
  std::string ListVersion();
  // Watches the changes after version `from` ("": from now) that pass
  // `filter`, on the stream `start` opens once `from` is found good (under
  // this object's lock: it must not call back). kOutOfRange (410 for the
  // API) when `from` is expired; kInvalidArgument when it is no version;
  // `start` is then not called.
  Status Watch(store::JobFilter filter, const std::string& from, const std::function<http::Server::Stream()>& start);

  size_t watches() const;

 private:
  struct Stored {
    uint64_t version = 0;
    std::shared_ptr<const Change> change;
    // The job's JSON: rendered once, by the pump (the only thread that
    // touches the text), shared by the copies it hands out.
    std::shared_ptr<std::string> json;
  };
  struct Watcher {
    store::JobFilter filter;
    http::Server::Stream stream;
    uint64_t cursor = 0;  // the changes up to this version are sent
    std::chrono::steady_clock::time_point last_line;
  };

  std::string VersionText(uint64_t v) const;
  // What a kept change costs: its row's texts, and its JSON once rendered.
  static size_t Cost(const Change& c) { return 2 * (c.row.spec_json.size() + c.row.status_json.size()) + 256; }
  void Pump();
  // The lines of `items` for `w` (items after w.cursor, in order).
  static std::string Lines(const Watcher& w, const std::vector<Stored>& items, const std::string& run);

  const Clock& clock_;
  const Options options_;
  const std::string run_;  // this run of the server: its start, in ms

  mutable Mutex mu_;
  CondVar cv_;
  std::deque<Stored> kept_ GUARDED_BY(mu_);       // by version
  uint64_t version_ GUARDED_BY(mu_) = 0;          // the newest published
  uint64_t expired_through_ GUARDED_BY(mu_) = 0;  // versions up to this are not (all) kept
  size_t kept_bytes_ GUARDED_BY(mu_) = 0;         // of kept_, as Cost() counts
  Time keep_until_ GUARDED_BY(mu_) = Time::Zero();
  std::vector<std::shared_ptr<Watcher>> watchers_ GUARDED_BY(mu_);
  bool news_ GUARDED_BY(mu_) = false;  // changes or watchers the pump has not seen
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread pump_;
};

}  // namespace muster::server
