#include "checkpoint/manifest.h"

#include <fcntl.h>
#include <nettle/sha2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "checkpoint/beneath.h"
#include "common/fd_io.h"

namespace muster::checkpoint {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kManifestTemp = ".MANIFEST.json.tmp";

std::string Hex(const unsigned char* d, unsigned int n) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[d[i] >> 4];
    out += kHex[d[i] & 15];
  }
  return out;
}

std::string ErrnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

// A relative path of normal components only.
bool SafeRelative(const std::string& p) {
  if (p.empty() || p.size() > 4096 || p.front() == '/' || p.find('\0') != std::string::npos) return false;
  size_t start = 0;
  while (start <= p.size()) {
    const size_t end = std::min(p.find('/', start), p.size());
    const std::string part = p.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

Status WriteAllFd(int fd, std::string_view data, const std::string& path) {
  if (!WriteFull(fd, data.data(), data.size())) return Internal(ErrnoText("write " + path));
  return Status::Ok();
}

Status FsyncPath(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return Internal(ErrnoText("open " + path));
  const int r = ::fsync(fd);
  ::close(fd);
  if (r != 0) return Internal(ErrnoText("fsync " + path));
  return Status::Ok();
}

}  // namespace

bool IsSha256Hex(std::string_view s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

int64_t Manifest::TotalBytes() const {
  int64_t n = 0;
  for (const ManifestFile& f : files) n += f.size;
  return n;
}

std::string ManifestToJson(const Manifest& m) {
  json files = json::array();
  for (const ManifestFile& f : m.files) files.push_back({{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}});
  json j = {{"job", m.job}, {"attempt", m.attempt}, {"step", m.step}, {"createdMs", m.created_ms}, {"files", files}};
  return j.dump(1) + "\n";
}

StatusOr<Manifest> ParseManifest(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return InvalidArgument("is not a JSON object", "manifest");
  Manifest m;
  auto integer = [&](const char* k, auto& out) -> Status {
    if (!j.contains(k) || !j[k].is_number_integer())
      return InvalidArgument("must be an integer", std::string("manifest.") + k);
    out = j[k].get<std::decay_t<decltype(out)>>();
    return Status::Ok();
  };
  RETURN_IF_ERROR(integer("job", m.job));
  RETURN_IF_ERROR(integer("attempt", m.attempt));
  RETURN_IF_ERROR(integer("step", m.step));
  RETURN_IF_ERROR(integer("createdMs", m.created_ms));
  if (m.attempt < 0 || j["attempt"].get<int64_t>() != m.attempt) {
    return InvalidArgument("must be an integer from 0 to 2147483647", "manifest.attempt");
  }
  if (!j.contains("files") || !j["files"].is_array()) return InvalidArgument("must be an array", "manifest.files");
  std::map<std::string, size_t> seen;  // path -> index
  for (size_t i = 0; i < j["files"].size(); ++i) {
    const json& f = j["files"][i];
    const std::string at = "manifest.files[" + std::to_string(i) + "]";
    if (!f.is_object()) return InvalidArgument("must be an object", at);
    ManifestFile mf;
    if (!f.contains("path") || !f["path"].is_string() || !SafeRelative(f["path"].get<std::string>())) {
      return InvalidArgument("must be a relative path without \".\" or \"..\" parts", at + ".path");
    }
    mf.path = f["path"].get<std::string>();
    if (auto [it, fresh] = seen.emplace(mf.path, i); !fresh) {
      return InvalidArgument("the same path as files[" + std::to_string(it->second) + "]", at + ".path");
    }
    if (!f.contains("size") || !f["size"].is_number_integer() || f["size"].get<int64_t>() < 0) {
      return InvalidArgument("must be a non-negative integer", at + ".size");
    }
    mf.size = f["size"].get<int64_t>();
    if (!f.contains("sha256") || !f["sha256"].is_string() || !IsSha256Hex(f["sha256"].get<std::string>())) {
      return InvalidArgument("must be 64 lower-case hex digits", at + ".sha256");
    }
    mf.sha256 = f["sha256"].get<std::string>();
    m.files.push_back(std::move(mf));
  }
  return m;
}

std::string Sha256Hex(std::string_view data) {
  sha256_ctx ctx;
  sha256_init(&ctx);
  sha256_update(&ctx, data.size(), reinterpret_cast<const uint8_t*>(data.data()));
  unsigned char digest[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, sizeof digest, digest);
  return Hex(digest, sizeof digest);
}

StatusOr<std::string> Sha256OfFd(int fd, const std::string& shown, int64_t* size) {
  sha256_ctx ctx;
  sha256_init(&ctx);
  std::vector<char> buf(1 << 20);
  int64_t total = 0;
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const Status s = Internal(ErrnoText("read " + shown));
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    sha256_update(&ctx, static_cast<size_t>(n), reinterpret_cast<const uint8_t*>(buf.data()));
    total += n;
  }
  ::close(fd);
  unsigned char digest[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, sizeof digest, digest);
  if (size) *size = total;
  return Hex(digest, sizeof digest);
}

StatusOr<std::string> Sha256OfFile(const std::string& path, int64_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return Status(errno == ENOENT ? StatusCode::kNotFound : StatusCode::kInternal, ErrnoText("open " + path));
  return Sha256OfFd(fd, path, size);
}

StatusOr<std::vector<ManifestFile>> ScanDirectory(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return NotFound(dir + " is not a directory");
  std::vector<ManifestFile> files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::file_status st = it->symlink_status(ec);
    if (ec) break;
    const std::string rel = fs::relative(it->path(), dir, ec).generic_string();
    if (fs::is_symlink(st))
      return InvalidArgument(dir + "/" + rel + " is a symbolic link; a checkpoint holds regular files only");
    if (fs::is_directory(st)) continue;
    if (!fs::is_regular_file(st)) return InvalidArgument(dir + "/" + rel + " is not a regular file");
    if (rel == kManifestName || rel == kManifestTemp) continue;
    ManifestFile f;
    f.path = rel;
    ASSIGN_OR_RETURN(f.sha256, Sha256OfFile(it->path().string(), &f.size));
    files.push_back(std::move(f));
  }
  if (ec) return Internal("scanning " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end(), [](const ManifestFile& a, const ManifestFile& b) { return a.path < b.path; });
  return files;
}

StatusOr<Written> WriteManifest(const std::string& dir, int64_t job, int32_t attempt, int64_t step,
                                int64_t created_ms) {
  const std::string final_path = dir + "/" + kManifestName;
  struct stat st {};
  if (::lstat(final_path.c_str(), &st) == 0) {
    return Status(StatusCode::kAlreadyExists, final_path + " exists: a checkpoint directory is committed once");
  }
  Manifest m{job, attempt, step, created_ms, {}};
  ASSIGN_OR_RETURN(m.files, ScanDirectory(dir));
  if (m.files.empty()) return InvalidArgument(dir + " holds no file to checkpoint");
  const std::string text = ManifestToJson(m);
  const std::string temp = dir + "/" + kManifestTemp;
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return Internal(ErrnoText("create " + temp));
  Status s = WriteAllFd(fd, text, temp);
  if (s.ok() && ::fsync(fd) != 0) s = Internal(ErrnoText("fsync " + temp));
  ::close(fd);
  if (!s.ok()) return s;
  // Files the job wrote may still be in the page cache: make them durable
  // before the manifest that vouches for them.
  for (const ManifestFile& f : m.files) RETURN_IF_ERROR(FsyncPath(dir + "/" + f.path, O_RDONLY));
  if (::rename(temp.c_str(), final_path.c_str()) != 0) return Internal(ErrnoText("rename " + temp));
  RETURN_IF_ERROR(FsyncPath(dir, O_RDONLY | O_DIRECTORY));
  return Written{Sha256Hex(text), static_cast<int64_t>(m.files.size()), m.TotalBytes()};
}

StatusOr<Manifest> ReadCommittedManifest(int dirfd, const std::string& dir, const std::string& manifest_sha256,
                                         int64_t job) {
  const std::string path = dir + "/" + kManifestName;
  auto mfd = OpenRegularBeneath(dirfd, kManifestName, path);
  if (!mfd.ok()) {
    return mfd.status().code() == StatusCode::kNotFound ? NotFound("no manifest: " + path + " is missing")
                                                        : mfd.status();
  }
  std::string text;
  {
    const ScopedFd manifest(*mfd);
    char buf[65536];
    while (true) {
      const ssize_t n = ::read(manifest.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
      if (text.size() > (64 << 20)) break;
    }
  }
  if (Sha256Hex(text) != manifest_sha256) {
    return DataLoss(path + " is not the manifest that was committed (its SHA-256 differs)");
  }
  auto m = ParseManifest(text);
  if (!m.ok()) return DataLoss(path + ": " + m.status().ToString());
  if (m->job != job) {
    return DataLoss(path + " was written by job " + std::to_string(m->job) + ", not job " + std::to_string(job));
  }
  return m;
}

Status Verify(const std::string& dir, const std::string& manifest_sha256, int64_t job) {
  const ScopedFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() < 0) return NotFound(ErrnoText("no manifest: open " + dir));
  ASSIGN_OR_RETURN(Manifest m, ReadCommittedManifest(dir_fd.get(), dir, manifest_sha256, job));
  for (const ManifestFile& f : m.files) {
    const auto wrong_size = [&](int64_t size) {
      return DataLoss(f.path + " has " + std::to_string(size) + " bytes, the manifest says " + std::to_string(f.size));
    };
    auto fd = OpenRegularBeneath(dir_fd.get(), f.path, f.path);
    if (!fd.ok()) return fd.status().code() == StatusCode::kNotFound ? DataLoss(fd.status().message()) : fd.status();
    struct stat st {};
    if (::fstat(*fd, &st) == 0 && st.st_size != f.size) {  // no need to read it
      ::close(*fd);
      return wrong_size(st.st_size);
    }
    int64_t size = 0;
    ASSIGN_OR_RETURN(std::string sha, Sha256OfFd(*fd, f.path, &size));
    if (size != f.size) return wrong_size(size);  // it changed while read
    if (sha != f.sha256) return DataLoss(f.path + " does not match its SHA-256 in the manifest");
  }
  return Status::Ok();
}

}  // namespace muster::checkpoint
