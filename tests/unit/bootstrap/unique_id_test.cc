#include <gtest/gtest.h>

#include <cstring>

#include "core/bootstrap.h"
#include "test_env.h"

namespace hcl {
namespace {

UniqueIdContents sampleContents(const char* ip, uint16_t port, bool byRank0) {
  UniqueIdContents c;
  for (int i = 0; i < 16; ++i) c.secret[i] = static_cast<uint8_t>(i * 17 + 3);
  c.rootIp = ip;
  c.rootPort = port;
  c.rootStartedByRank0 = byRank0;
  return c;
}

void expectSame(const UniqueIdContents& a, const UniqueIdContents& b) {
  EXPECT_EQ(std::memcmp(a.secret, b.secret, sizeof(a.secret)), 0);
  EXPECT_EQ(a.rootIp, b.rootIp);
  EXPECT_EQ(a.rootPort, b.rootPort);
  EXPECT_EQ(a.rootStartedByRank0, b.rootStartedByRank0);
}

TEST(UniqueId, RoundTripsIpv4) {
  const auto in = sampleContents("10.1.2.3", 40001, false);
  hclUniqueId id;
  encodeUniqueId(in, &id);
  UniqueIdContents out;
  ASSERT_TRUE(decodeUniqueId(id, out).ok());
  expectSame(in, out);
}

TEST(UniqueId, RoundTripsIpv6AndFlag) {
  const auto in = sampleContents("fd00::2", 65535, true);
  hclUniqueId id;
  encodeUniqueId(in, &id);
  UniqueIdContents out;
  ASSERT_TRUE(decodeUniqueId(id, out).ok());
  expectSame(in, out);
}

TEST(UniqueId, RejectsBadMagic) {
  hclUniqueId id;
  encodeUniqueId(sampleContents("10.1.2.3", 5, false), &id);
  id.internal[0] ^= 0x55;
  UniqueIdContents out;
  const Status st = decodeUniqueId(id, out);
  EXPECT_EQ(st.code(), hclInvalidArgument);
  EXPECT_NE(st.message().find("bad magic"), std::string::npos) << st.message();

  hclUniqueId zeros{};
  EXPECT_EQ(decodeUniqueId(zeros, out).code(), hclInvalidArgument);
}

TEST(UniqueId, CommIdGivesTheSameIdEverywhere) {
  test::ScopedEnv commId("HCL_COMM_ID", "127.0.0.1:23456");
  test::ScopedEnv secret("HCL_COMM_SECRET", std::nullopt);
  hclUniqueId a, b;
  ASSERT_TRUE(createUniqueId(&a).ok());
  ASSERT_TRUE(createUniqueId(&b).ok());
  EXPECT_EQ(std::memcmp(&a, &b, sizeof(a)), 0);
  UniqueIdContents c;
  ASSERT_TRUE(decodeUniqueId(a, c).ok());
  EXPECT_EQ(c.rootIp, "127.0.0.1");
  EXPECT_EQ(c.rootPort, 23456);
  EXPECT_TRUE(c.rootStartedByRank0);

  test::ScopedEnv otherSecret("HCL_COMM_SECRET", "job-42");
  hclUniqueId withSecret;
  ASSERT_TRUE(createUniqueId(&withSecret).ok());
  UniqueIdContents d;
  ASSERT_TRUE(decodeUniqueId(withSecret, d).ok());
  EXPECT_NE(std::memcmp(c.secret, d.secret, sizeof(c.secret)), 0);
  EXPECT_EQ(d.rootPort, 23456);
}

TEST(UniqueId, BadCommIdNamesTheVariable) {
  {
    test::ScopedEnv commId("HCL_COMM_ID", "not-an-address");
    hclUniqueId id;
    const Status st = createUniqueId(&id);
    EXPECT_EQ(st.code(), hclInvalidArgument);
    EXPECT_NE(st.message().find("HCL_COMM_ID=not-an-address"), std::string::npos) << st.message();
  }
  {
    test::ScopedEnv commId("HCL_COMM_ID", std::nullopt);
    test::ScopedEnv ncclCommId("NCCL_COMM_ID", "1.2.3.4:99999");
    hclUniqueId id;
    const Status st = createUniqueId(&id);
    EXPECT_EQ(st.code(), hclInvalidArgument);
    EXPECT_NE(st.message().find("NCCL_COMM_ID=1.2.3.4:99999"), std::string::npos) << st.message();
  }
}

TEST(UniqueId, WithoutCommIdStartsARootWithARandomSecret) {
  test::ScopedEnv commId("HCL_COMM_ID", std::nullopt);
  test::ScopedEnv ncclCommId("NCCL_COMM_ID", std::nullopt);
  hclUniqueId a, b;
  ASSERT_TRUE(createUniqueId(&a).ok());
  ASSERT_TRUE(createUniqueId(&b).ok());
  UniqueIdContents ca, cb;
  ASSERT_TRUE(decodeUniqueId(a, ca).ok());
  ASSERT_TRUE(decodeUniqueId(b, cb).ok());
  EXPECT_FALSE(ca.rootStartedByRank0);
  EXPECT_NE(ca.rootPort, 0);
  EXPECT_NE(ca.rootPort, cb.rootPort);
  EXPECT_NE(std::memcmp(ca.secret, cb.secret, sizeof(ca.secret)), 0);
}

}  // namespace
}  // namespace hcl
