// Random: a seeded, deterministic source of randomness.
//
// Logic never calls rand() or std::random_device; it receives a Random&
// constructed from a seed, so every run (and every simulator failure) can be
// replayed from its seed. The generator is SplitMix64 followed by xoshiro256**,
// which gives the same sequence on every platform and standard library.
//
// Thread-safety: not thread-safe; one owner.
#pragma once

#include <cstdint>

namespace muster {

class Random {
 public:
  explicit Random(uint64_t seed);

  uint64_t seed() const { return seed_; }
  uint64_t Next();
  // Uniform integer in [lo, hi]. Precondition: lo <= hi.
  int64_t Uniform(int64_t lo, int64_t hi);
  // Uniform double in [0, 1).
  double UniformDouble();
  // True with probability p.
  bool Bernoulli(double p) { return UniformDouble() < p; }

 private:
  uint64_t seed_;
  uint64_t s_[4];
};

}  // namespace muster
