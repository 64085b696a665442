// libfabric's few exported entry points, opened at run time (dlopen), so one
// build runs with or without libfabric installed. Everything else in
// libfabric's API is inline and calls through the objects these return.
#pragma once

#include <rdma/fabric.h>

#include <string>

namespace hcl::ofi {

// The API version HCL asks for: tagged RDM endpoints as libfabric 1.10 has them.
inline constexpr uint32_t kFabricApiVersion = FI_VERSION(1, 10);

struct FabricApi {
  int (*getinfo)(uint32_t version, const char* node, const char* service, uint64_t flags, const fi_info* hints,
                 fi_info** info) = nullptr;
  void (*freeinfo)(fi_info* info) = nullptr;
  fi_info* (*dupinfo)(const fi_info* info) = nullptr;
  int (*fabric)(fi_fabric_attr* attr, fid_fabric** fabric, void* context) = nullptr;
  const char* (*strerror)(int errnum) = nullptr;

  std::string errorText(int code) const;  // libfabric returns negative codes
};

// Opened once per process and kept. Null when libfabric cannot be opened;
// *why then says what is missing.
const FabricApi* fabricApi(std::string* why);

}  // namespace hcl::ofi
