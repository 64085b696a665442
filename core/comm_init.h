// Builds a communicator: publish PeerInfo, select a link per peer, set up
// transports in phases separated by out-of-band barriers.
#pragma once

#include <memory>

#include "core/bootstrap.h"
#include "core/communicator.h"

namespace hcl {

CommSettings settingsFromParams(const hclConfig_t* config);

// The tag of a communicator made from a unique id.
uint64_t rootCommTag(const uint8_t secret[16]);

// `cancel` (may be null) stops the transports' connection setup, as an
// abort would; the bootstrap `oob` has its own.
Status initCommunicator(Oob& oob, int nranks, int rank, const uint8_t secret[16], uint64_t commTag,
                        const CommSettings& settings, const std::atomic<bool>* cancel,
                        std::shared_ptr<Communicator>& out);

}  // namespace hcl
