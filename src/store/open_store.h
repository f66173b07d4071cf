// OpenStore: the store a URL names.
//
//   muster.db, sqlite:muster.db, sqlite:///var/lib/muster/muster.db
//       the embedded SQLite file (the default); one server at a time
//   postgres://..., postgresql://... (any libpq URL, multi-host included),
//   postgres:host=a,b dbname=muster ... (a libpq key=value string)
//       PostgreSQL; several servers, one leader (leader_lease.h)
//
// Errors name the store without its password.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "store/leader_lease.h"
#include "store/store.h"

namespace muster::store {

struct OpenedStore {
  std::unique_ptr<Store> store;
  // The election among the servers sharing the store; null for a store
  // only one server can open (SQLite), whose server simply leads.
  std::unique_ptr<LeaderLease> lease;
  std::string description;  // for messages: the file, or postgres host:port/db
};

// True when `url` names a PostgreSQL store.
bool IsPostgresUrl(const std::string& url);

StatusOr<OpenedStore> OpenStore(const std::string& url);

}  // namespace muster::store
