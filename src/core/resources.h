// Resources: an integer vector of GPUs, CPU milli-cores and memory bytes.
//
// All allocation arithmetic in Muster is integral (no floating point), so
// "fits" is exact and two runs agree bit for bit.
#pragma once

#include <cstdint>
#include <string>

namespace muster::core {

struct Resources {
  int64_t gpus = 0;
  int64_t cpu_milli = 0;  // 1000 = one core
  int64_t memory_bytes = 0;

  // True when every dimension of *this is <= the same dimension of `capacity`.
  bool FitsIn(const Resources& capacity) const {
    return gpus <= capacity.gpus && cpu_milli <= capacity.cpu_milli && memory_bytes <= capacity.memory_bytes;
  }
  bool IsNonNegative() const { return gpus >= 0 && cpu_milli >= 0 && memory_bytes >= 0; }
  bool IsZero() const { return gpus == 0 && cpu_milli == 0 && memory_bytes == 0; }

  Resources& operator+=(const Resources& o) {
    gpus += o.gpus;
    cpu_milli += o.cpu_milli;
    memory_bytes += o.memory_bytes;
    return *this;
  }
  Resources& operator-=(const Resources& o) {
    gpus -= o.gpus;
    cpu_milli -= o.cpu_milli;
    memory_bytes -= o.memory_bytes;
    return *this;
  }
  friend Resources operator+(Resources a, const Resources& b) { return a += b; }
  friend Resources operator-(Resources a, const Resources& b) { return a -= b; }
  friend Resources operator*(Resources a, int64_t k) {
    a.gpus *= k;
    a.cpu_milli *= k;
    a.memory_bytes *= k;
    return a;
  }
  bool operator==(const Resources&) const = default;

  // How many copies of `per_unit` fit in *this (limited by every dimension
  // that per_unit uses). A zero per_unit fits "infinitely": returns `cap`.
  int64_t CopiesOf(const Resources& per_unit, int64_t cap) const;

  // Per-dimension minimum.
  static Resources Min(const Resources& a, const Resources& b);

  // "8 GPU, 32 CPU, 256Gi".
  std::string ToString() const;
};

}  // namespace muster::core
