#include "common/signal_name.h"

#include <gtest/gtest.h>

#include <csignal>

namespace muster {
namespace {

TEST(SignalName, ReadsNamesWithOrWithoutSigInAnyCaseAndNumbers) {
  EXPECT_EQ(SignalNumber("USR1"), SIGUSR1);
  EXPECT_EQ(SignalNumber("sigusr2"), SIGUSR2);
  EXPECT_EQ(SignalNumber("SIGTERM"), SIGTERM);
  EXPECT_EQ(SignalNumber("10"), 10);
  EXPECT_EQ(SignalNumber("64"), 64);
  for (const char* bad : {"", "0", "65", "-1", "10x", "SIG", "USR3", "SIGSIGUSR1", "99999999999999999999"}) {
    EXPECT_EQ(SignalNumber(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(SignalName(SIGUSR1), "SIGUSR1");
  EXPECT_EQ(SignalName(40), "SIG40");
  EXPECT_EQ(SignalNumber(SignalName(SIGWINCH)), SIGWINCH);
}

}  // namespace
}  // namespace muster
