#include "core/netif.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>

#include "test_env.h"

namespace hcl {
namespace {

TEST(InterfaceMatches, EmptySpecMatchesEverything) {
  EXPECT_TRUE(interfaceMatches("", "eth0"));
  EXPECT_TRUE(interfaceMatches("", "lo"));
}

TEST(InterfaceMatches, Prefixes) {
  EXPECT_TRUE(interfaceMatches("eth", "eth0"));
  EXPECT_TRUE(interfaceMatches("eth", "eth"));
  EXPECT_FALSE(interfaceMatches("eth", "ib0"));
  EXPECT_FALSE(interfaceMatches("eth0", "eth"));
}

TEST(InterfaceMatches, PrefixLists) {
  EXPECT_TRUE(interfaceMatches("eth,ib", "ib0"));
  EXPECT_TRUE(interfaceMatches("eth,ib", "eth1"));
  EXPECT_FALSE(interfaceMatches("eth,ib", "enp3s0"));
  EXPECT_TRUE(interfaceMatches("eth,,ib", "ib3"));
}

TEST(InterfaceMatches, ExcludedPrefixes) {
  EXPECT_FALSE(interfaceMatches("^docker", "docker0"));
  EXPECT_TRUE(interfaceMatches("^docker", "eth0"));
  EXPECT_FALSE(interfaceMatches("^docker,lo", "lo"));
  EXPECT_FALSE(interfaceMatches("^docker,lo", "docker1"));
  EXPECT_TRUE(interfaceMatches("^docker,lo", "eth0"));
}

TEST(InterfaceMatches, ExactNames) {
  EXPECT_TRUE(interfaceMatches("=eth0", "eth0"));
  EXPECT_FALSE(interfaceMatches("=eth0", "eth01"));
  EXPECT_FALSE(interfaceMatches("=eth0", "eth"));
  EXPECT_TRUE(interfaceMatches("=eth0,ib1", "ib1"));
  EXPECT_FALSE(interfaceMatches("=eth0,ib1", "ib10"));
}

TEST(InterfaceMatches, ExcludedExactNames) {
  EXPECT_FALSE(interfaceMatches("^=lo", "lo"));
  EXPECT_TRUE(interfaceMatches("^=lo", "lo1"));
  EXPECT_TRUE(interfaceMatches("^=lo,eth0", "eth1"));
  EXPECT_FALSE(interfaceMatches("^=lo,eth0", "eth0"));
}

TEST(ParseHostPort, NumericIpv4) {
  std::string ip;
  uint16_t port = 0;
  ASSERT_TRUE(parseHostPort("1.2.3.4:5", ip, port));
  EXPECT_EQ(ip, "1.2.3.4");
  EXPECT_EQ(port, 5);
  ASSERT_TRUE(parseHostPort("127.0.0.1:65535", ip, port));
  EXPECT_EQ(port, 65535);
}

TEST(ParseHostPort, BracketedIpv6) {
  std::string ip;
  uint16_t port = 0;
  ASSERT_TRUE(parseHostPort("[::1]:5", ip, port));
  EXPECT_EQ(ip, "::1");
  EXPECT_EQ(port, 5);
  ASSERT_TRUE(parseHostPort("[fd00::2]:12345", ip, port));
  EXPECT_EQ(ip, "fd00::2");
  EXPECT_EQ(port, 12345);
}

TEST(ParseHostPort, ResolvesHostNames) {
  std::string ip;
  uint16_t port = 0;
  ASSERT_TRUE(parseHostPort("localhost:8080", ip, port));
  EXPECT_TRUE(ip == "127.0.0.1" || ip == "::1") << ip;
  EXPECT_EQ(port, 8080);
}

TEST(ParseHostPort, RejectsMalformedText) {
  std::string ip = "untouched";
  uint16_t port = 7;
  for (const char* bad : {"", "1.2.3.4", "1.2.3.4:", ":5", "1.2.3.4:0", "1.2.3.4:70000", "1.2.3.4:5x",
                          "1.2.3.4:-5", "::1:5", "[::1]5", "[::1]:", "[::1", "no-such-host.invalid:5"}) {
    EXPECT_FALSE(parseHostPort(bad, ip, port)) << bad;
  }
  EXPECT_EQ(ip, "untouched");
  EXPECT_EQ(port, 7);
}

TEST(ParseHostPort, SaysWhatIsWrong) {
  std::string ip;
  uint16_t port = 0;
  const std::pair<const char*, const char*> cases[] = {
      {"1.2.3.4", "not host:port"},
      {"::1:5", "needs brackets"},
      {"1.2.3.4:70000", "port '70000' is not a number from 1 to 65535"},
      {"no-such-host.invalid:5", "host 'no-such-host.invalid' does not resolve"},
  };
  for (const auto& [text, reason] : cases) {
    std::string why;
    EXPECT_FALSE(parseHostPort(text, ip, port, &why)) << text;
    EXPECT_NE(why.find(reason), std::string::npos) << text << ": " << why;
  }
}

TEST(ListInterfaces, IncludesUpLoopbackAndNoLinkLocalV6) {
  const auto all = listInterfaces();
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [](const NetInterface& i) {
    return i.loopback && i.family == AF_INET && i.ip == "127.0.0.1" && i.prefixLen == 8;
  }));
  for (const auto& itf : all) {
    EXPECT_TRUE(itf.family == AF_INET || itf.family == AF_INET6) << itf.name;
    EXPECT_FALSE(itf.ip.starts_with("fe80")) << itf.name << " " << itf.ip;
  }
}

TEST(ChooseInterfaces, DefaultSkipsLoopbackUnlessAlone) {
  test::ScopedEnv ifname("HCL_SOCKET_IFNAME", std::nullopt);
  test::ScopedEnv ncclIfname("NCCL_SOCKET_IFNAME", std::nullopt);
  test::ScopedEnv family("HCL_SOCKET_FAMILY", std::nullopt);
  const auto chosen = chooseInterfaces();
  ASSERT_FALSE(chosen.empty());
  const auto all = listInterfaces();
  const bool hasOther = std::any_of(all.begin(), all.end(), [](const NetInterface& i) {
    return !i.loopback && !i.name.starts_with("docker") && !i.name.starts_with("virbr");
  });
  for (const auto& itf : chosen) {
    EXPECT_EQ(itf.loopback, !hasOther) << itf.name;
    EXPECT_FALSE(itf.name.starts_with("docker")) << itf.name;
  }
}

TEST(ChooseInterfaces, HonoursIfnameAndFamily) {
  test::ScopedEnv ifname("HCL_SOCKET_IFNAME", "=lo");
  {
    test::ScopedEnv family("HCL_SOCKET_FAMILY", "AF_INET");
    const auto chosen = chooseInterfaces();
    ASSERT_FALSE(chosen.empty());
    for (const auto& itf : chosen) {
      EXPECT_EQ(itf.name, "lo");
      EXPECT_EQ(itf.family, AF_INET);
    }
  }
  {
    test::ScopedEnv family("HCL_SOCKET_FAMILY", "AF_INET6");
    for (const auto& itf : chooseInterfaces()) EXPECT_EQ(itf.family, AF_INET6);
  }
}

TEST(ChooseInterfaces, NcclAliasIsHonoured) {
  test::ScopedEnv ifname("HCL_SOCKET_IFNAME", std::nullopt);
  test::ScopedEnv ncclIfname("NCCL_SOCKET_IFNAME", "^=lo,lo");
  for (const auto& itf : chooseInterfaces()) EXPECT_NE(itf.name, "lo");
  test::ScopedEnv ncclIfname2("NCCL_SOCKET_IFNAME", "no-such-interface");
  EXPECT_TRUE(chooseInterfaces().empty());
}

}  // namespace
}  // namespace hcl
