#include "core/nic.h"

#include <gtest/gtest.h>

#include <utility>

#include "core/rate.h"

namespace hcl {
namespace {

TEST(FabricSpec, OneLabelForEveryInterface) {
  EXPECT_EQ(fabricFromSpec("clusterA", "eth0"), "clusterA");
  EXPECT_EQ(fabricFromSpec("clusterA", "ib0"), "clusterA");
}

TEST(FabricSpec, PerInterfaceLabels) {
  const char* spec = "fab0=cluster1, wan0=wan";
  EXPECT_EQ(fabricFromSpec(spec, "fab0"), "cluster1");
  EXPECT_EQ(fabricFromSpec(spec, "wan0"), "wan");
  EXPECT_EQ(fabricFromSpec(spec, "eth0"), "");
  EXPECT_EQ(fabricFromSpec(spec, "fab"), "");
  EXPECT_EQ(fabricFromSpec("", "eth0"), "");
}

TEST(FabricSpec, AnUnnamedItemInAPerInterfaceSpecAppliesToNoInterface) {
  EXPECT_EQ(fabricFromSpec("eth0=a,b", "lo"), "");
  EXPECT_EQ(fabricFromSpec("eth0=a,b", "eth0"), "a");
  EXPECT_EQ(speedFromSpec("eth0=1g,125m", "lo"), 0u);
  EXPECT_EQ(speedFromSpec("eth0=1g,125m", "eth0"), 1000u);
  EXPECT_NE(nicSpecProblem("HCL_FABRIC", "eth0=a,b", false).find("item 'b' has no interface name"), std::string::npos);
  EXPECT_EQ(specInterfaceNames("fab0=c1, wan0=wan"), (std::vector<std::string>{"fab0", "wan0"}));
  EXPECT_TRUE(specInterfaceNames("cluster1").empty());
}

TEST(RateParsing, UnitsAndBareNumbers) {
  // A capital B is bytes, a small b or "bit" bits; a bare number or a lone
  // prefix counts bits for NIC speeds.
  const std::pair<const char*, uint32_t> cases[] = {
      {"125mbit", 125},  {"1gbit", 1000},     {"200g", 200000},   {"25000", 25000},  {"2.5Gbit/s", 2500},
      {"100Gbps", 100000}, {"1GB/s", 8000},   {"100MB/s", 800},   {"1gb", 1000},     {"100Mbps", 100},
      {"10GBps", 80000}, {"fast", 0},         {"-5", 0},          {"10 parsecs", 0}};
  for (const auto& [text, mbps] : cases) EXPECT_EQ(parseRateMbps(text), mbps) << text;
  EXPECT_DOUBLE_EQ(*parseRateBytesPerSecond("1000Bps", RateUnit::Bits), 1000);
  EXPECT_DOUBLE_EQ(*parseRateBytesPerSecond("8kbit", RateUnit::Bytes), 1000);
  EXPECT_DOUBLE_EQ(*parseRateBytesPerSecond("3", RateUnit::Bytes), 3e6);
  EXPECT_DOUBLE_EQ(*parseRateBytesPerSecond("3", RateUnit::Bits), 3e6 / 8);
  EXPECT_DOUBLE_EQ(*parseRateBytesPerSecond(" 2 G ", RateUnit::Bytes), 2e9);
}

TEST(RateParsing, NonFiniteAndOutOfRangeRatesAreRejected) {
  for (const char* text : {"nan", "inf", "-inf", "nanGB/s", "infGbit", "0", "0Gbit", "1e400", "ps", "5ps", "1Xbit"}) {
    EXPECT_FALSE(parseRateBytesPerSecond(text, RateUnit::Bits).has_value()) << text;
    EXPECT_EQ(parseRateMbps(text), 0u) << text;
  }
  EXPECT_EQ(parseRateMbps("4294t"), 4294000000u);
  EXPECT_EQ(parseRateMbps("4295t"), 0u) << "beyond 2^32 Mbit/s: refused, not wrapped";
  EXPECT_EQ(parseRateMbps("5000t"), 0u);
}

TEST(NicSpecs, GoodSpecsHaveNoProblem) {
  EXPECT_EQ(nicSpecProblem("HCL_FABRIC", "", false), "");
  EXPECT_EQ(nicSpecProblem("HCL_FABRIC", "clusterA", false), "");
  EXPECT_EQ(nicSpecProblem("HCL_FABRIC", "fab0=cluster1, wan0=wan", false), "");
  EXPECT_EQ(nicSpecProblem("HCL_NIC_SPEED", "40g", true), "");
  EXPECT_EQ(nicSpecProblem("HCL_NIC_SPEED", "fab0=1gbit,wan0=125mbit", true), "");
}

TEST(NicSpecs, BadSpecsNameTheVariableAndTheItem) {
  const std::string rate = nicSpecProblem("HCL_NIC_SPEED", "fab0=1gbit,wan0=fast", true);
  EXPECT_NE(rate.find("HCL_NIC_SPEED"), std::string::npos) << rate;
  EXPECT_NE(rate.find("'fast' is not a rate"), std::string::npos) << rate;
  EXPECT_NE(nicSpecProblem("HCL_NIC_SPEED", "10 parsecs", true).find("not a rate"), std::string::npos);
  const std::string mixed = nicSpecProblem("HCL_FABRIC", "fab0=cluster1,wan", false);
  EXPECT_NE(mixed.find("item 'wan' has no interface name"), std::string::npos) << mixed;
  EXPECT_NE(nicSpecProblem("HCL_FABRIC", "fab0=", false).find("has no value"), std::string::npos);
  EXPECT_NE(nicSpecProblem("HCL_FABRIC", "=cluster1", false).find("no interface name"), std::string::npos);
  EXPECT_NE(nicSpecProblem("HCL_FABRIC", "a,b", false).find("several values"), std::string::npos);
}

TEST(RateParsing, PerInterfaceSpeeds) {
  EXPECT_EQ(speedFromSpec("fab0=1gbit,wan0=125mbit", "wan0"), 125u);
  EXPECT_EQ(speedFromSpec("fab0=1gbit,wan0=125mbit", "lo"), 0u);
  EXPECT_EQ(speedFromSpec("40g", "anything"), 40000u);
}

TEST(SubnetLabels, MaskedToPrefix) {
  EXPECT_EQ(subnetLabel("10.1.2.3", 24), "ip:10.1.2.0/24");
  EXPECT_EQ(subnetLabel("10.1.2.3", 16), "ip:10.1.0.0/16");
  EXPECT_EQ(subnetLabel("fd00::1:2", 64), "ip:fd00::/64");
  EXPECT_EQ(subnetLabel("not an ip", 24), "");
}

TEST(SubnetLabels, InfinibandSubnetPrefixFromHardwareAddress) {
  EXPECT_EQ(ibSubnetLabel("00:00:10:87:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:7b:3c:d2"),
            "ib:fe80:0000:0000:0000");
  EXPECT_EQ(ibSubnetLabel("00:00:10:87:fe:80:00:00:00:00:00:07:0c:42:a1:03:00:7b:3c:d2"),
            "ib:fe80:0000:0000:0007");
  EXPECT_EQ(ibSubnetLabel("52:54:00:12:34:56"), "");
}

}  // namespace
}  // namespace hcl
