// LiveSettings: the settings a reload (SIGHUP) changes while requests on
// any thread read them: the defaults a job spec is parsed with (the
// default class, the classes' time limits, the Slurm mappings) and the
// GPU prices by pool. Readers take a snapshot; a reload swaps it whole.
//
// Thread-safety: every method from any thread.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "api/job_spec.h"
#include "common/mutex.h"
#include "server/options.h"

namespace muster::server {

class LiveSettings {
 public:
  struct Values {
    api::SpecDefaults spec_defaults;  // ServerOptions::SpecDefaults()
    PoolPrices prices;                // ServerOptions::prices
  };

  explicit LiveSettings(const ServerOptions& options) : values_(Of(options)) {}
  std::shared_ptr<const Values> Get() const {
    MutexLock lock(mu_);
    return values_;
  }
  void Set(const ServerOptions& options) {
    auto next = Of(options);
    MutexLock lock(mu_);
    values_ = std::move(next);
  }

 private:
  static std::shared_ptr<const Values> Of(const ServerOptions& o) {
    return std::make_shared<const Values>(Values{o.SpecDefaults(), o.prices});
  }

  mutable Mutex mu_;
  std::shared_ptr<const Values> values_ GUARDED_BY(mu_);
};

}  // namespace muster::server
