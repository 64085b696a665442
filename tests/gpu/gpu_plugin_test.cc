// Loading the GPU device plugins; needs no GPU. On a machine without a driver
// or device, deviceCount must say which is missing.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "device/device.h"

namespace hcl {
namespace {

struct Plugin {
  const char* name;
  const char* path;  // nullptr: not built
  DeviceKind kind;
};

const Plugin kPlugins[] = {
#ifdef HCL_CUDA_PLUGIN_PATH
    {"cuda", HCL_CUDA_PLUGIN_PATH, DeviceKind::Cuda},
#else
    {"cuda", nullptr, DeviceKind::Cuda},
#endif
#ifdef HCL_HIP_PLUGIN_PATH
    {"hip", HCL_HIP_PLUGIN_PATH, DeviceKind::Hip},
#else
    {"hip", nullptr, DeviceKind::Hip},
#endif
};

TEST(GpuPlugin, BuiltWhereTheToolkitWasFound) {
#ifdef HCL_EXPECT_CUDA_PLUGIN
  EXPECT_NE(kPlugins[0].path, nullptr) << "the CUDA toolkit was found but the CUDA plugin was not built";
#else
  EXPECT_EQ(kPlugins[0].path, nullptr);
#endif
#ifdef HCL_EXPECT_HIP_PLUGIN
  EXPECT_NE(kPlugins[1].path, nullptr) << "hipcc was found but the HIP plugin was not built";
#else
  EXPECT_EQ(kPlugins[1].path, nullptr);
#endif
}

class GpuPluginLoad : public testing::TestWithParam<Plugin> {
 protected:
  void SetUp() override {
    const Plugin& p = GetParam();
    if (!p.path) GTEST_SKIP() << "the " << p.name << " plugin was not built (no toolkit at configure time)";
    handle_ = dlopen(p.path, RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const std::string why = dlerror();
      // Built here, run on a machine without the vendor's runtime library
      // (the HIP plugin on a CUDA-only machine): nothing to load.
      if (why.find(p.path) == std::string::npos && why.find("cannot open shared object") != std::string::npos) {
        GTEST_SKIP() << "the " << p.name << " plugin's runtime library is not installed here: " << why;
      }
      FAIL() << "dlopen " << p.path << ": " << why;
    }
    entry_ = reinterpret_cast<DevicePluginEntry>(dlsym(handle_, kDevicePluginSymbol));
    ASSERT_NE(entry_, nullptr) << kDevicePluginSymbol << " not exported by " << p.path;
  }
  // Plugins stay loaded: runtimes and their static state live until exit.
  void* handle_ = nullptr;
  DevicePluginEntry entry_ = nullptr;
};

TEST_P(GpuPluginLoad, EntryReturnsRuntimeOfItsKind) {
  char error[256] = "";
  const std::unique_ptr<DeviceRuntime> rt(entry_(kDevicePluginAbi, error, sizeof error));  // the caller owns it
  ASSERT_NE(rt, nullptr) << error;
  EXPECT_EQ(rt->kind(), GetParam().kind);
  int n = -1;
  const Status s = rt->deviceCount(&n);
  if (s.ok()) {
    EXPECT_GT(n, 0);
    std::printf("%s: %d device(s)\n", GetParam().name, n);
  } else {
    // No driver or no device here: the message must say which.
    std::printf("%s: %s\n", GetParam().name, s.message().c_str());
    EXPECT_EQ(n, 0);
    EXPECT_TRUE(s.message().find("driver") != std::string::npos || s.message().find("device") != std::string::npos)
        << s.message();
    Device* d = nullptr;
    EXPECT_FALSE(rt->device(0, &d).ok());
    EXPECT_EQ(rt->owner(&n), -1);
  }
}

TEST_P(GpuPluginLoad, WrongAbiIsRefusedWithAMessage) {
  char error[256] = "";
  EXPECT_EQ(entry_(kDevicePluginAbi + 1, error, sizeof error), nullptr);
  EXPECT_NE(std::strstr(error, "ABI"), nullptr) << error;
  EXPECT_EQ(entry_(kDevicePluginAbi + 1, nullptr, 0), nullptr);  // no buffer: still refused
}

TEST_P(GpuPluginLoad, ExportsOnlyTheEntry) {
  // A symbol of the plugin's internals must not be visible.
  EXPECT_EQ(dlsym(handle_, "_ZN3hcl3gpu10GpuRuntime11deviceCountEPi"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Plugins, GpuPluginLoad, testing::ValuesIn(kPlugins),
                         [](const testing::TestParamInfo<Plugin>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace hcl
