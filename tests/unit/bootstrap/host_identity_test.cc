#include "core/host_identity.h"

#include <gtest/gtest.h>

#include "test_env.h"

namespace hcl {
namespace {

TEST(HostIdentity, HostIdOverridesTheMachine) {
  test::ScopedEnv hostId("HCL_HOSTID", "emulated-host-3");
  EXPECT_EQ(hostIdentity(), "emulated-host-3");
}

TEST(HostIdentity, DefaultsToHostNameAndBootId) {
  test::ScopedEnv hostId("HCL_HOSTID", std::nullopt);
  const std::string id = hostIdentity();
  const std::string name = hostName();
  ASSERT_FALSE(name.empty());
  EXPECT_TRUE(id == name || id.starts_with(name + ":")) << id;
  EXPECT_EQ(id, hostIdentity());
}

TEST(HostIdentity, ProcessTokenIsStable) {
  const uint64_t token = processToken();
  EXPECT_NE(token, 0u);
  EXPECT_EQ(token, processToken());
}

}  // namespace
}  // namespace hcl
