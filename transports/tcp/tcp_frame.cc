#include "transports/tcp/tcp_frame.h"

#include "core/wire_order.h"

namespace hcl::tcp {

FrameHeaderBytes encodeFrameHeader(const FrameHeader& header) {
  FrameHeaderBytes raw{};
  storeLittleEndian(raw.data(), header.tag);
  storeLittleEndian(raw.data() + 4, header.flags);
  storeLittleEndian(raw.data() + 8, header.bytes);
  return raw;
}

FrameHeader decodeFrameHeader(const FrameHeaderBytes& raw) {
  FrameHeader header;
  header.tag = loadLittleEndian<uint32_t>(raw.data());
  header.flags = loadLittleEndian<uint32_t>(raw.data() + 4);
  header.bytes = loadLittleEndian<uint64_t>(raw.data() + 8);
  return header;
}

}  // namespace hcl::tcp
