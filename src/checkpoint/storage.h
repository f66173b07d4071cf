// CheckpointStorage: where checkpoints live, behind the two operations the
// server and the agents need. The default is a shared directory (every node
// and the server mount the same path: NFS, Lustre, a local disk for
// `muster dev`); an object store implements the same interface with its own
// location scheme ("s3://bucket/prefix/...").
//
// Locations are what the job registered with the catalog: for the directory
// store, an absolute path below the job's `checkpoint.dir`.
//
// Thread-safety: implementations are safe from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace muster::checkpoint {

class CheckpointStorage {
 public:
  virtual ~CheckpointStorage() = default;
  // Checks a checkpoint before `job` resumes from it (manifest.h, Verify).
  virtual Status Verify(const std::string& location, const std::string& manifest_sha256, int64_t job) = 0;
  // Deletes a checkpoint of `job` that retention dropped. Removes only what
  // was committed there: the location must hold the manifest with
  // `manifest_sha256`, written by `job`, so a wrong location never deletes
  // anything else.
  virtual Status Remove(const std::string& location, const std::string& manifest_sha256, int64_t job) = 0;
};

// The shared-directory store.
class DirectoryStorage final : public CheckpointStorage {
 public:
  Status Verify(const std::string& location, const std::string& manifest_sha256, int64_t job) override;
  Status Remove(const std::string& location, const std::string& manifest_sha256, int64_t job) override;
};

// The store for a location: a path gives the directory store; any other
// scheme is FailedPrecondition (no object store is built in yet).
StatusOr<std::unique_ptr<CheckpointStorage>> StorageFor(const std::string& location);

// Whether `location` names a checkpoint strictly below `root` (lexically,
// after normalizing "." and ".." parts); both absolute paths.
bool IsBelow(const std::string& location, const std::string& root);

}  // namespace muster::checkpoint
