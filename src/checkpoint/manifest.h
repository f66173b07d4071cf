// A checkpoint on storage: a directory of files plus MANIFEST.json, which
// lists every file with its size and SHA-256 and names the job, attempt and
// step that wrote it.
//
// Commit protocol (what the Python module and `muster checkpoint commit`
// do): the job writes its files into a fresh directory, then
// WriteManifest() scans it and writes MANIFEST.json to a temporary name,
// fsyncs it, renames it into place and fsyncs the directory. Only then is
// the checkpoint registered with the server's catalog, with the SHA-256 of
// the manifest's bytes. A directory without a manifest, or one whose
// manifest the catalog does not know, is not a checkpoint.
//
// Verification (before a job resumes from it) reads the manifest, checks
// that its SHA-256 is the one the catalog recorded, then that every file it
// lists exists with that size and SHA-256. So a truncated file, a flipped
// byte, a missing file or a rewritten manifest is each caught and named.
//
// File paths in a manifest are relative, use '/', and never contain "." or
// ".." components: a manifest cannot point outside its directory. Only
// regular files are listed (symbolic links are refused when scanning), and
// verification, which runs as root on a directory the job wrote, opens each
// file without following a link in any part of its path and only if it is a
// regular file (not a FIFO or a device).
//
// Thread-safety: free functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace muster::checkpoint {

inline constexpr const char* kManifestName = "MANIFEST.json";

struct ManifestFile {
  std::string path;  // relative to the checkpoint directory
  int64_t size = 0;
  std::string sha256;  // lower-case hex
};

struct Manifest {
  int64_t job = 0;
  int32_t attempt = 0;
  int64_t step = 0;
  int64_t created_ms = 0;
  std::vector<ManifestFile> files;  // no path twice (writers sort them by path)
  int64_t TotalBytes() const;
};

std::string ManifestToJson(const Manifest& m);
// Errors are InvalidArgument naming the field ("files[2].path: ...").
StatusOr<Manifest> ParseManifest(std::string_view text);

// Whether `s` is a SHA-256 in the form this module writes: 64 lower-case
// hex digits.
bool IsSha256Hex(std::string_view s);

// The SHA-256 of bytes, and of a file's contents (streamed), in hex.
std::string Sha256Hex(std::string_view data);
StatusOr<std::string> Sha256OfFile(const std::string& path, int64_t* size = nullptr);
// The SHA-256 of what is left to read on `fd`, which it closes; `shown`
// names the file in errors.
StatusOr<std::string> Sha256OfFd(int fd, const std::string& shown, int64_t* size = nullptr);

// Lists and hashes every regular file under `dir` (recursively, except the
// manifest itself and its temporary).
StatusOr<std::vector<ManifestFile>> ScanDirectory(const std::string& dir);

struct Written {
  std::string manifest_sha256;  // what the catalog records
  int64_t files = 0;
  int64_t bytes = 0;
};
// Scans `dir` and commits its manifest durably (see the protocol above).
// Fails if the directory already has a manifest (a checkpoint is written
// once) or holds no file.
StatusOr<Written> WriteManifest(const std::string& dir, int64_t job, int32_t attempt, int64_t step, int64_t created_ms);

// Reads the manifest of the checkpoint directory `dirfd` (`dir` in errors)
// and checks it is the one the catalog recorded for `job`: its SHA-256 is
// `manifest_sha256` and it names that job. A checkpoint is only ever used or
// deleted for the job that wrote it: a user cannot register another user's
// checkpoint directory under their own job (it would be deleted by their
// job's retention). NotFound when there is no manifest, DataLoss otherwise.
StatusOr<Manifest> ReadCommittedManifest(int dirfd, const std::string& dir, const std::string& manifest_sha256,
                                         int64_t job);

// Checks the checkpoint in `dir` against the catalog's `manifest_sha256` for
// `job` (see above). The error says what is wrong: DataLoss for a mismatch
// or a missing file, NotFound when there is no manifest at all.
Status Verify(const std::string& dir, const std::string& manifest_sha256, int64_t job);

}  // namespace muster::checkpoint
