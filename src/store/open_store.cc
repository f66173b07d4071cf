#include "store/open_store.h"

#include "store/pg/pg_lease.h"
#include "store/pg/pg_store.h"
#include "store/sqlite/sqlite_store.h"

namespace muster::store {
namespace {

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

bool IsPostgresUrl(const std::string& url) {
  return StartsWith(url, "postgres://") || StartsWith(url, "postgresql://") || StartsWith(url, "postgres:");
}

StatusOr<OpenedStore> OpenStore(const std::string& url) {
  OpenedStore opened;
  if (IsPostgresUrl(url)) {
    // "postgres:" before a key=value string is ours; a URL goes to libpq whole.
    const std::string conninfo =
        StartsWith(url, "postgres://") || StartsWith(url, "postgresql://") ? url : url.substr(9);
    ASSIGN_OR_RETURN(std::unique_ptr<PgStore> pg, PgStore::Open(conninfo));
    ASSIGN_OR_RETURN(std::unique_ptr<PgLease> lease, PgLease::Open(conninfo));
    opened.description = pg->description();
    opened.store = std::move(pg);
    opened.lease = std::move(lease);
    return opened;
  }
  std::string path = url;
  if (StartsWith(path, "sqlite://")) {
    path = path.substr(9);
  } else if (StartsWith(path, "sqlite:")) {
    path = path.substr(7);
  }
  if (path.empty()) return InvalidArgument("names no file (\"" + url + "\")", "store");
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> sqlite, SqliteStore::Open(path));
  opened.description = path;
  opened.store = std::move(sqlite);
  return opened;
}

}  // namespace muster::store
