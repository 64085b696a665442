// Data rates written by people: "125Mbit/s", "1Gbps", "12.5GB/s", "200g".
// One reading for every knob: a capital B is bytes, a lower-case b or "bit"
// is bits (as in networking); the prefix k/m/g/t is decimal and case-blind.
// What a number without a b/B means is the knob's own convention.
#pragma once

#include <optional>
#include <string_view>

namespace hcl {

enum class RateUnit { Bits, Bytes };

// Bytes per second, or nullopt when the text is not a finite positive rate.
// `unitless` is what "200g" or a bare number counts (a bare number is mega-).
std::optional<double> parseRateBytesPerSecond(std::string_view text, RateUnit unitless);

}  // namespace hcl
