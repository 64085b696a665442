#include "core/nic.h"

#include <gtest/gtest.h>

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

TEST(RateParsing, UnitsAndBareNumbers) {
  EXPECT_EQ(parseRateMbps("125mbit"), 125u);
  EXPECT_EQ(parseRateMbps("1gbit"), 1000u);
  EXPECT_EQ(parseRateMbps("200g"), 200000u);
  EXPECT_EQ(parseRateMbps("25000"), 25000u);
  EXPECT_EQ(parseRateMbps("2.5Gbit/s"), 2500u);
  EXPECT_EQ(parseRateMbps("100Gbps"), 100000u);
  EXPECT_EQ(parseRateMbps("fast"), 0u);
  EXPECT_EQ(parseRateMbps("-5"), 0u);
  EXPECT_EQ(parseRateMbps("10 parsecs"), 0u);
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
