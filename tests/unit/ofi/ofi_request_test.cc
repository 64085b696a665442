// When HCL asks libfabric for endpoints, and which providers it takes.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "transports/ofi/ofi_request.h"

namespace hcl::ofi {
namespace {

TEST(OfiRequest, ModesAndProvider) {
  OfiRequest r;
  ASSERT_TRUE(parseOfiRequest("", "", r).ok());
  EXPECT_EQ(r.mode, OfiMode::Auto);
  ASSERT_TRUE(parseOfiRequest("auto", "tcp;ofi_rxm", r).ok());
  EXPECT_EQ(r.mode, OfiMode::On) << "naming a provider asks for libfabric";
  EXPECT_EQ(r.provider, "tcp;ofi_rxm");
  for (const char* on : {"1", "on", "yes", "true"}) {
    ASSERT_TRUE(parseOfiRequest(on, "", r).ok()) << on;
    EXPECT_EQ(r.mode, OfiMode::On) << on;
  }
  for (const char* off : {"0", "off", "no", "false"}) {
    ASSERT_TRUE(parseOfiRequest(off, "efa", r).ok()) << off;
    EXPECT_EQ(r.mode, OfiMode::Off) << off;
  }
}

TEST(OfiRequest, ABadModeNamesTheParameterAndTheValue) {
  OfiRequest r;
  r.provider = "kept";
  const Status s = parseOfiRequest("sometimes", "", r);
  EXPECT_EQ(s.code(), hclInvalidArgument);
  EXPECT_NE(s.message().find("HCL_OFI"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'sometimes'"), std::string::npos) << s.message();
  EXPECT_EQ(r.provider, "kept") << "a refused value leaves the request alone";
}

TEST(OfiRequest, AutoTakesHardwareProvidersOnly) {
  const OfiRequest automatic{OfiMode::Auto, ""};
  for (const char* hw : {"efa", "verbs;ofi_rxm", "psm3", "cxi", "opx"}) EXPECT_TRUE(providerWanted(hw, automatic)) << hw;
  for (const char* sw : {"tcp", "tcp;ofi_rxm", "udp;ofi_rxd", "shm", "sockets", "net;ofi_rxm"}) {
    EXPECT_FALSE(providerWanted(sw, automatic)) << sw;
  }
}

TEST(OfiRequest, OnTakesAnyProviderButSocketsUnlessNamed) {
  const OfiRequest on{OfiMode::On, ""};
  EXPECT_TRUE(providerWanted("tcp;ofi_rxm", on));
  EXPECT_TRUE(providerWanted("shm", on));
  EXPECT_FALSE(providerWanted("sockets", on));
  const OfiRequest named{OfiMode::On, "sockets"};
  EXPECT_TRUE(providerWanted("sockets", named));
  EXPECT_FALSE(providerWanted("tcp;ofi_rxm", named));
  EXPECT_FALSE(providerWanted("tcp", OfiRequest{OfiMode::On, "tcp;ofi_rxm"})) << "names match exactly";
  EXPECT_EQ(coreProvider("tcp;ofi_rxm"), "tcp");
  EXPECT_EQ(coreProvider("efa"), "efa");
}

TEST(OfiRequest, RdmaHardwareIsAnInfinibandOrCxiClassDevice) {
  const auto root = std::filesystem::temp_directory_path() / ("hcl-sysfs-" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "class" / "infiniband");
  std::filesystem::create_directories(root / "class" / "net" / "eth0");
  EXPECT_FALSE(hostShowsRdmaHardware(root.string())) << "an empty class directory";
  std::filesystem::create_directories(root / "class" / "infiniband" / "mlx5_0");
  EXPECT_TRUE(hostShowsRdmaHardware(root.string()));
  std::filesystem::remove_all(root / "class" / "infiniband");
  std::filesystem::create_directories(root / "class" / "cxi" / "cxi0");
  EXPECT_TRUE(hostShowsRdmaHardware(root.string()));
  std::filesystem::remove_all(root);
  EXPECT_FALSE(hostShowsRdmaHardware(root.string())) << "no sysfs at all";
}

}  // namespace
}  // namespace hcl::ofi
