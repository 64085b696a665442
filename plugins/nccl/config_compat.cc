#include "plugins/nccl/config_compat.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace hcl::nccl {
namespace {

constexpr unsigned kConfigMagic = 0xcafebeef;

// The release that introduced each group of fields, for configs whose size
// covers a field their version did not know about.
constexpr unsigned v(unsigned major, unsigned minor) { return NCCL_VERSION(major, minor, 0); }

void forgetFieldsNewerThan(unsigned version, hclConfig_t& c) {
  if (version < v(2, 14)) c.blocking = HCL_CONFIG_UNDEF_INT;
  if (version < v(2, 17)) {
    c.cgaClusterSize = HCL_CONFIG_UNDEF_INT;
    c.minCTAs = HCL_CONFIG_UNDEF_INT;
    c.maxCTAs = HCL_CONFIG_UNDEF_INT;
    c.netName = HCL_CONFIG_UNDEF_PTR;
  }
  if (version < v(2, 25)) c.trafficClass = HCL_CONFIG_UNDEF_INT;
  if (version < v(2, 27)) {
    c.collnetEnable = HCL_CONFIG_UNDEF_INT;
    c.CTAPolicy = HCL_CONFIG_UNDEF_INT;
    c.shrinkShare = HCL_CONFIG_UNDEF_INT;
    c.nvlsCTAs = HCL_CONFIG_UNDEF_INT;
  }
  if (version < v(2, 28)) {
    c.nChannelsPerNetPeer = HCL_CONFIG_UNDEF_INT;
    c.nvlinkCentricSched = HCL_CONFIG_UNDEF_INT;
  }
}

}  // namespace

Status translateConfig(const ncclConfig_t* in, ConfigTranslation& out) {
  out.config = HCL_CONFIG_INITIALIZER;
  out.ignoredBytes = 0;
  if (!in) return invalidArgument("config is NULL");
  // Read size, magic and version first: the struct may be shorter than ours.
  size_t size = 0;
  unsigned magic = 0;
  unsigned version = 0;
  std::memcpy(&size, reinterpret_cast<const char*>(in) + offsetof(ncclConfig_t, size), sizeof size);
  std::memcpy(&magic, reinterpret_cast<const char*>(in) + offsetof(ncclConfig_t, magic), sizeof magic);
  if (magic != kConfigMagic) {
    return invalidArgument(fmt::format(
        "config->magic {:#x} is not {:#x}: initialize the config with NCCL_CONFIG_INITIALIZER", magic, kConfigMagic));
  }
  std::memcpy(&version, reinterpret_cast<const char*>(in) + offsetof(ncclConfig_t, version), sizeof version);
  constexpr size_t kMinSize = offsetof(ncclConfig_t, blocking) + sizeof(int);
  if (size < kMinSize) {
    return invalidArgument(fmt::format("config->size {} is smaller than the oldest ncclConfig_t ({} bytes)", size, kMinSize));
  }
  const size_t known = std::min(size, sizeof(ncclConfig_t));
  std::memcpy(&out.config, in, known);
  out.ignoredBytes = size - known;
  forgetFieldsNewerThan(version, out.config);
  // The hcl side always sees a complete config of the version it implements.
  out.config.size = sizeof(hclConfig_t);
  out.config.magic = HCL_CONFIG_MAGIC;
  out.config.version = HCL_NCCL_VERSION_CODE;
  return {};
}

}  // namespace hcl::nccl
