// Which verbs ports a rank may use: HCL_IB_HCA (NCCL_IB_HCA) in NCCL's
// syntax. A comma list of "device[:port]"; names match as prefixes unless
// the list starts with '=' (exact names); a list starting with '^' names
// the ports to leave out ("^=mlx5_3" excludes exactly mlx5_3).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hcl::ib {

class DeviceFilter {
 public:
  // Empty text: every port.
  static DeviceFilter parse(std::string_view text);
  bool admits(std::string_view device, int port) const;
  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    std::string device;
    std::optional<int> port;
  };
  std::vector<Entry> entries_;
  bool exclude_ = false;
  bool exact_ = false;
};

}  // namespace hcl::ib
