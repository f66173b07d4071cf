#include "agent/device_filter.h"

#include <fcntl.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace muster::agent {
namespace {

bpf_insn Insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst;
  i.src_reg = src;
  i.off = off;
  i.imm = imm;
  return i;
}

// r0 = verdict; exit.
void Return(std::vector<bpf_insn>& p, int32_t verdict) {
  p.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, verdict));
  p.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
}

// The program, over struct bpf_cgroup_dev_ctx {access_type, major, minor}
// in r1: a character device of a denied (major, minor) gets 0 (EPERM),
// everything else 1.
std::vector<bpf_insn> Program(const std::vector<DeviceId>& denied) {
  std::vector<bpf_insn> p;
  p.push_back(Insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 0, 0));  // r2 = access_type
  p.push_back(Insn(BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff));     // r2 = device type
  p.push_back(Insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_3, BPF_REG_1, 4, 0));  // r3 = major
  p.push_back(Insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_4, BPF_REG_1, 8, 0));  // r4 = minor
  // Each test jumps to "deny" (two instructions before the end) on a
  // match; the offsets are filled in once the length is known.
  std::vector<size_t> to_allow, to_deny;
  to_allow.push_back(p.size());
  p.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 0, BPF_DEVCG_DEV_CHAR));
  for (const DeviceId& d : denied) {
    // if (major == d.major && minor == d.minor) deny
    p.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_3, 0, 1, d.major));  // skip the next test
    to_deny.push_back(p.size());
    p.push_back(Insn(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_4, 0, 0, d.minor));
  }
  to_allow.push_back(p.size());
  p.push_back(Insn(BPF_JMP | BPF_JA, 0, 0, 0, 0));
  const size_t deny = p.size();
  Return(p, 0);
  const size_t allow = p.size();
  Return(p, 1);
  for (size_t at : to_allow) p[at].off = static_cast<int16_t>(allow - at - 1);
  for (size_t at : to_deny) p[at].off = static_cast<int16_t>(deny - at - 1);
  return p;
}

long Bpf(int cmd, bpf_attr& attr) { return ::syscall(__NR_bpf, cmd, &attr, sizeof attr); }

}  // namespace

std::vector<std::string> DevicesDenyLines(const std::vector<DeviceId>& denied) {
  std::vector<std::string> out;
  for (const DeviceId& d : denied)
    out.push_back("c " + std::to_string(d.major) + ":" + std::to_string(d.minor) + " rwm");
  return out;
}

Status AttachDeviceFilter(const std::string& cgroup_dir, const std::vector<DeviceId>& denied) {
  if (denied.size() > 4096) return InvalidArgument("too many devices to deny");
  const std::vector<bpf_insn> program = Program(denied);
  static const char kLicense[] = "GPL";  // device programs need no GPL-only helper; any string loads
  char log[4096] = {};
  bpf_attr load{};
  load.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  load.insns = reinterpret_cast<uint64_t>(program.data());
  load.insn_cnt = static_cast<uint32_t>(program.size());
  load.license = reinterpret_cast<uint64_t>(kLicense);
  load.log_buf = reinterpret_cast<uint64_t>(log);
  load.log_size = sizeof log;
  load.log_level = 1;
  const int prog = static_cast<int>(Bpf(BPF_PROG_LOAD, load));
  if (prog < 0) {
    return Internal(std::string("cannot load the device filter (bpf): ") + std::strerror(errno) + (log[0] ? ": " : "") +
                    log);
  }
  const int dir = ::open(cgroup_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    const int err = errno;
    ::close(prog);
    return Internal("cannot open " + cgroup_dir + ": " + std::strerror(err));
  }
  bpf_attr attach{};
  attach.target_fd = static_cast<uint32_t>(dir);
  attach.attach_bpf_fd = static_cast<uint32_t>(prog);
  attach.attach_type = BPF_CGROUP_DEVICE;
  attach.attach_flags = BPF_F_ALLOW_MULTI;
  const long rc = Bpf(BPF_PROG_ATTACH, attach);
  const int err = errno;
  ::close(dir);
  ::close(prog);  // the group holds the program now
  if (rc != 0) return Internal("cannot attach the device filter to " + cgroup_dir + ": " + std::strerror(err));
  return Status::Ok();
}

}  // namespace muster::agent
