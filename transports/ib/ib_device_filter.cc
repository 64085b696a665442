#include "transports/ib/ib_device_filter.h"

#include <algorithm>
#include <charconv>

namespace hcl::ib {

DeviceFilter DeviceFilter::parse(std::string_view text) {
  DeviceFilter f;
  if (!text.empty() && text.front() == '^') {
    f.exclude_ = true;
    text.remove_prefix(1);
  }
  if (!text.empty() && text.front() == '=') {
    f.exact_ = true;
    text.remove_prefix(1);
  }
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) continue;
    Entry e;
    const size_t colon = item.find(':');
    e.device = std::string(item.substr(0, colon));
    if (colon != std::string_view::npos) {
      int port = 0;
      const std::string_view digits = item.substr(colon + 1);
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
      // A port that is not a number matches no port, as in NCCL.
      e.port = ec == std::errc() && end == digits.data() + digits.size() ? port : -1;
    }
    f.entries_.push_back(std::move(e));
  }
  return f;
}

bool DeviceFilter::names(const Entry& e, std::string_view device) const {
  return exact_ ? device == e.device : device.starts_with(e.device);
}

bool DeviceFilter::admits(std::string_view device, int port) const {
  if (entries_.empty()) return true;
  const bool listed = std::any_of(entries_.begin(), entries_.end(),
                                  [&](const Entry& e) { return names(e, device) && (!e.port || *e.port == port); });
  return listed != exclude_;
}

bool DeviceFilter::admitsSomePortOf(std::string_view device) const {
  if (entries_.empty()) return true;
  if (exclude_) {
    // Left out whole only by an entry without a port.
    return std::none_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return names(e, device) && !e.port; });
  }
  return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return names(e, device); });
}

}  // namespace hcl::ib
