// Direct-access algorithms, for communicators whose every link lets a rank
// reach its peers' buffers (ReadPeer/WritePeer steps): each rank reduces its
// own shard reading straight from every peer's input, in slices that stay in
// cache, and writes the result straight into every peer's output. Each byte
// crosses between ranks once, with no per-slice handshakes: a rank swaps
// buffer addresses with its peers at the start and a "done" message at the end.
#pragma once

#include "collectives/plan/collective.h"
#include "collectives/plan/schedule.h"

namespace hcl {

Schedule directAllReduce(const CollArgs& args);
Schedule directReduceScatter(const CollArgs& args);
Schedule directAllGather(const CollArgs& args);
Schedule directBroadcast(const CollArgs& args);
Schedule directReduce(const CollArgs& args);
Schedule directAlltoAll(const CollArgs& args);

}  // namespace hcl
