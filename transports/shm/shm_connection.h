// One rank's end of a shared segment: sends go into FIFO `side`, receives
// come out of FIFO 1-side. Small messages are copied through the slots; large
// ones (when the peer can read our memory) are read by the receiver with
// process_vm_readv straight from the send buffer.
#pragma once

#include <cstdint>
#include <memory>

#include "transports/shm/shm_segment.h"
#include "transports/shm/slot_store_choice.h"
#include "transports/transport.h"

namespace hcl::shm {

struct ConnectionConfig {
  int rank = 0;
  int peer = 0;
  int side = 0;  // 0: we are the low rank of the pair
  std::shared_ptr<Segment> segment;
  int64_t cmaThreshold = 0;  // 0: never single copy
  bool watchPeerPid = true;  // false when the peer's pid is not visible here
  bool mapPeerMemory = true;  // map the peer's shareable allocations (needs single copy too)
  SlotStoreChoice::Mode slotStores = SlotStoreChoice::Mode::Measure;
};

std::unique_ptr<Connection> makeShmConnection(ConnectionConfig config);

}  // namespace hcl::shm
