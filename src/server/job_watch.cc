#include "server/job_watch.h"

#include <algorithm>
#include <charconv>

#include "server/job_json.h"
#include "server/job_row_filter.h"

namespace muster::server {

namespace {

// The change's type for a watch with filter `f`: "" when it sends nothing.
const char* TypeFor(const store::JobFilter& f, const JobWatch::Change& c) {
  const bool now = RowPasses(f, c.row);
  bool before = false;
  if (c.state_before && c.state_before->empty()) {
    before = false;  // submitted in this batch
  } else if (c.state_before) {
    store::JobRow was = c.row;
    was.state = *c.state_before;
    before = RowPasses(f, was);
  } else {
    before = now;  // its state, all a change moves in and out of a filter, stayed
  }
  if (now) return before ? "MODIFIED" : "ADDED";
  return before ? "DELETED" : "";
}

}  // namespace

JobWatch::JobWatch(const Clock& clock, Options options)
    : clock_(clock), options_(options), run_(std::to_string(clock.Now().millis())) {}

JobWatch::~JobWatch() { Stop(); }

void JobWatch::Start() {
  MutexLock lock(mu_);
  if (pump_.joinable() || stop_) return;
  pump_ = std::thread([this] { Pump(); });
}

void JobWatch::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  if (pump_.joinable()) pump_.join();
  MutexLock lock(mu_);
  for (const auto& w : watchers_) w->stream.End();
  watchers_.clear();
}

bool JobWatch::Keeping() const {
  MutexLock lock(mu_);
  return !watchers_.empty() || clock_.Now() < keep_until_;
}

void JobWatch::Publish(std::vector<Change> changes) {
  {
    MutexLock lock(mu_);
    ++version_;
    if (changes.empty()) {
      expired_through_ = version_;  // not kept: no watch may resume from before it
      return;
    }
    for (Change& c : changes) {
      kept_bytes_ += Cost(c);
      kept_.push_back({version_, std::make_shared<const Change>(std::move(c)), std::make_shared<std::string>()});
    }
    while (!kept_.empty() && (kept_.size() > options_.retained || kept_bytes_ > options_.retained_bytes)) {
      expired_through_ = std::max(expired_through_, kept_.front().version);
      kept_bytes_ -= Cost(*kept_.front().change);
      kept_.pop_front();
    }
    if (watchers_.empty()) return;
    news_ = true;
  }
  cv_.NotifyAll();
}

std::string JobWatch::ListVersion() {
  MutexLock lock(mu_);
  keep_until_ = std::max(keep_until_, clock_.Now() + options_.keep_after_list);
  return VersionText(version_);
}

std::string JobWatch::VersionText(uint64_t v) const { return run_ + "-" + std::to_string(v); }

Status JobWatch::Watch(store::JobFilter filter, const std::string& from,
                       const std::function<http::Server::Stream()>& start) {
  {
    MutexLock lock(mu_);
    if (stop_) return Unavailable("the server is stopping");
    uint64_t cursor = version_;
    if (!from.empty()) {
      const size_t dash = from.rfind('-');
      uint64_t v = 0;
      const char* end = from.data() + from.size();
      if (dash == std::string::npos || std::from_chars(from.data() + dash + 1, end, v).ptr != end ||
          dash + 1 == from.size()) {
        return InvalidArgument("\"" + from.substr(0, 64) + "\" is no resource version (a list's resourceVersion)",
                               "query.resourceVersion");
      }
      if (from.compare(0, dash, run_) != 0 || v > version_ || v < expired_through_) {
        return Status(StatusCode::kOutOfRange,
                      "resource version " + from.substr(0, 64) +
                          " is expired (older than the changes this server keeps, or of an earlier run): list again",
                      "query.resourceVersion");
      }
      cursor = v;
    }
    watchers_.push_back(
        std::make_shared<Watcher>(Watcher{std::move(filter), start(), cursor, std::chrono::steady_clock::now()}));
    news_ = true;
  }
  cv_.NotifyAll();
  return Status::Ok();
}

size_t JobWatch::watches() const {
  MutexLock lock(mu_);
  return watchers_.size();
}

std::string JobWatch::Lines(const Watcher& w, const std::vector<Stored>& items, const std::string& run) {
  std::string out;
  for (const Stored& s : items) {
    const char* type = TypeFor(w.filter, *s.change);
    if (*type == '\0') continue;
    out += "{\"type\":\"";
    out += type;
    out += "\",\"resourceVersion\":\"" + run + "-" + std::to_string(s.version) + "\",\"object\":";
    out += *s.json;
    out += "}\n";
  }
  return out;
}

void JobWatch::Pump() {
  using Steady = std::chrono::steady_clock;
  MutexLock lock(mu_);
  while (!stop_) {
    // Bookmarks are due a period after each watch's last line: look again
    // then at the latest.
    const Steady::time_point until =
        Steady::now() + std::min<std::chrono::milliseconds>(options_.bookmark_every, std::chrono::seconds(1));
    while (!stop_ && !news_ && cv_.WaitFor(lock, until - Steady::now())) {
    }
    if (stop_) break;
    news_ = false;
    // What each watch is owed, taken under the lock; written without it.
    struct Owed {
      std::shared_ptr<Watcher> w;
      std::vector<Stored> items;
      bool expired = false;
    };
    std::vector<Owed> owed;
    const uint64_t newest = version_;
    for (const auto& w : watchers_) {
      Owed o{w, {}, w->cursor < expired_through_};
      if (!o.expired && w->cursor < newest) {
        // kept_ is by version: the first item after the cursor, by search.
        auto first = std::upper_bound(kept_.begin(), kept_.end(), w->cursor,
                                      [](uint64_t v, const Stored& s) { return v < s.version; });
        o.items.assign(first, kept_.end());
      }
      owed.push_back(std::move(o));
    }
    lock.Unlock();
    const Steady::time_point now = Steady::now();
    std::vector<std::shared_ptr<Watcher>> ended;
    for (Owed& o : owed) {
      Watcher& w = *o.w;
      if (o.expired) {
        w.stream.Write(
            "{\"type\":\"ERROR\",\"object\":{\"code\":410,\"reason\":\"Expired\",\"message\":\"this watch "
            "fell behind the changes the server keeps: list again\"}}\n");
        w.stream.End();
        ended.push_back(o.w);
        continue;
      }
      for (Stored& s : o.items) {
        if (s.json->empty()) *s.json = JobJsonText(s.change->row);  // once: kept_ shares it
      }
      std::string lines = Lines(w, o.items, run_);
      w.cursor = std::max(w.cursor, newest);
      if (lines.empty() && now - w.last_line >= options_.bookmark_every) {
        lines = "{\"type\":\"BOOKMARK\",\"resourceVersion\":\"" + VersionText(newest) + "\"}\n";
      }
      if (lines.empty()) continue;
      w.last_line = now;
      if (!w.stream.Write(std::move(lines))) ended.push_back(o.w);
    }
    lock.Lock();
    for (const auto& e : ended) std::erase(watchers_, e);
    if (watchers_.empty() && !kept_.empty() && clock_.Now() >= keep_until_) {
      // Nobody watches, nor will soon: what is kept only costs memory.
      expired_through_ = version_;
      kept_.clear();
      kept_bytes_ = 0;
    }
  }
}

}  // namespace muster::server
