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
  // False when no port of the device can be admitted, so it need not be
  // opened at all.
  bool admitsSomePortOf(std::string_view device) const;
  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    std::string device;
    std::optional<int> port;
  };
  bool names(const Entry& e, std::string_view device) const;

  std::vector<Entry> entries_;
  bool exclude_ = false;
  bool exact_ = false;
};

}  // namespace hcl::ib
