#include "core/rate.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

namespace hcl {
namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool dropSuffix(std::string_view& s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i]) return false;
  }
  s.remove_suffix(suffix.size());
  return true;
}

}  // namespace

std::optional<double> parseRateBytesPerSecond(std::string_view text, RateUnit unitless) {
  text = trimmed(text);
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || !std::isfinite(value) || value <= 0) return std::nullopt;
  std::string_view unit(end, static_cast<size_t>(text.data() + text.size() - end));
  unit = trimmed(unit);
  const auto perSecond = [value](double scale, RateUnit kind) -> std::optional<double> {
    const double bytes = value * scale / (kind == RateUnit::Bits ? 8 : 1);
    if (!std::isfinite(bytes)) return std::nullopt;
    return bytes;
  };
  if (unit.empty()) return perSecond(1e6, unitless);  // a bare number is mega-

  // "/s", or "ps" as in Gbps and GBps.
  if (!dropSuffix(unit, "/s") && unit.size() >= 2 && (unit.back() == 's' || unit.back() == 'S') &&
      (unit[unit.size() - 2] == 'p' || unit[unit.size() - 2] == 'P')) {
    unit.remove_suffix(2);
  }
  if (unit.empty()) return std::nullopt;
  RateUnit kind = unitless;
  if (dropSuffix(unit, "bit")) {
    kind = RateUnit::Bits;
  } else if (dropSuffix(unit, "byte")) {
    kind = RateUnit::Bytes;
  } else if (!unit.empty() && unit.back() == 'B') {
    kind = RateUnit::Bytes;
    unit.remove_suffix(1);
  } else if (!unit.empty() && unit.back() == 'b') {
    kind = RateUnit::Bits;
    unit.remove_suffix(1);
  }
  double scale = 1;
  if (unit.size() == 1) {
    switch (std::tolower(static_cast<unsigned char>(unit[0]))) {
      case 'k': scale = 1e3; break;
      case 'm': scale = 1e6; break;
      case 'g': scale = 1e9; break;
      case 't': scale = 1e12; break;
      default: return std::nullopt;
    }
  } else if (!unit.empty()) {
    return std::nullopt;
  }
  return perSecond(scale, kind);
}

}  // namespace hcl
