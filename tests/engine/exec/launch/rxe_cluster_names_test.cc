#include <gtest/gtest.h>

#include "engine/exec/launch/rxe_cluster.h"

namespace tide::exec {
namespace {

TEST(RxeCluster, NamesAndAddresses) {
  EXPECT_EQ("tr1a2br3", RxeCluster::deviceName("tr1a2b", 3));
  EXPECT_EQ("192.0.2.10", RxeCluster::nodeAddress(0));
  EXPECT_EQ("192.0.2.209", RxeCluster::nodeAddress(RxeCluster::kMaxNodes - 1));
}

TEST(RxeCluster, AckTimeoutCoversAFullQueue) {
  // 6 QPs x 128 KiB at 2 Mbit/s drain in 3.1 s: twice that needs 2^21 x
  // 4.096 us = 8.6 s (2^20 = 4.3 s is short).
  EXPECT_EQ(21, RxeCluster::ackTimeoutExponent(250e3, 6));
  // At 1 Mbit/s twice as long: one more.
  EXPECT_EQ(22, RxeCluster::ackTimeoutExponent(125e3, 6));
  // A fast link keeps the transport's default (0.54 s).
  EXPECT_EQ(17, RxeCluster::ackTimeoutExponent(12.5e9, 64));
  // Never past the largest IB exponent.
  EXPECT_EQ(31, RxeCluster::ackTimeoutExponent(1, 1000));
}

TEST(RxeCluster, BadSizesAreRefused) {
  EXPECT_EQ(Code::kInvalidArgument, RxeCluster::create(0, 1e6).status().code());
  EXPECT_EQ(Code::kInvalidArgument, RxeCluster::create(2, 0).status().code());
}

}  // namespace
}  // namespace tide::exec
