// Benchmark: what one durable write costs on this machine's disk, the floor
// under a single client's submit latency (each acknowledged submit waits for
// its own fdatasync).
//
//   muster_bench_fsync [DIR]      (default: the current directory)
//
// Writes 2,000 times 1 or 4 pages of 4 KiB at increasing offsets of a file
// in DIR, each followed by fdatasync (or written with O_DSYNC), first
// appending to a new file, then overwriting a preallocated one (as SQLite's
// WAL does once it has grown); prints p50 and p90 of each in microseconds.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kWrites = 2000;
constexpr size_t kPage = 4096;

struct Case {
  const char* name;
  int pages;
  bool preallocate;
  bool dsync;  // O_DSYNC instead of fdatasync
};

bool Run(const std::string& path, const Case& c) {
  const int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR | (c.dsync ? O_DSYNC : 0), 0600);
  if (fd < 0) {
    std::perror(path.c_str());
    return false;
  }
  std::vector<char> buf(kPage * c.pages, 'm');
  const off_t span = static_cast<off_t>(kWrites) * kPage;
  if (c.preallocate) {
    std::vector<char> zero(kPage * 64, 0);
    for (off_t off = 0; off < span; off += zero.size()) (void)!pwrite(fd, zero.data(), zero.size(), off);
    fsync(fd);
  }
  std::vector<double> us;
  us.reserve(kWrites);
  off_t off = 0;
  for (int i = 0; i < kWrites; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (pwrite(fd, buf.data(), buf.size(), off) != static_cast<ssize_t>(buf.size())) {
      std::perror("pwrite");
      close(fd);
      return false;
    }
    if (!c.dsync) fdatasync(fd);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    off += static_cast<off_t>(buf.size());
    if (off + static_cast<off_t>(buf.size()) > span) off = 0;
  }
  close(fd);
  unlink(path.c_str());
  std::sort(us.begin(), us.end());
  std::printf("%-36s p50 %5.0f us  p90 %5.0f us\n", c.name, us[us.size() / 2], us[us.size() * 9 / 10]);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = std::string(argc > 1 ? argv[1] : ".") + "/muster_fsync_probe.tmp";
  const Case cases[] = {
      {"append 1 page + fdatasync", 1, false, false},   {"append 4 pages + fdatasync", 4, false, false},
      {"overwrite 1 page + fdatasync", 1, true, false}, {"overwrite 4 pages + fdatasync", 4, true, false},
      {"overwrite 4 pages, O_DSYNC", 4, true, true},
  };
  for (const Case& c : cases) {
    if (!Run(path, c)) return 1;
  }
  return 0;
}
