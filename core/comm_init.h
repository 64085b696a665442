// Builds a communicator: publish PeerInfo, select a link per peer, set up
// transports in phases separated by out-of-band barriers.
#pragma once

#include <memory>

#include "core/bootstrap.h"
#include "core/communicator.h"

namespace hcl {

// The parameters, then what `config` (checked, or null) sets: only fields
// within its size, as an older NCCL's struct is shorter.
CommSettings settingsFromParams(const hclConfig_t* config);

// config->commName when the struct has the field and sets it, else null.
const char* configCommName(const hclConfig_t* config);

// The tag of a communicator made from a unique id.
uint64_t rootCommTag(const uint8_t secret[16]);

// `cancel` (may be null) stops the transports' connection setup, as an
// abort would; the bootstrap `oob` has its own.
Status initCommunicator(Oob& oob, int nranks, int rank, const uint8_t secret[16], uint64_t commTag,
                        const CommSettings& settings, const std::atomic<bool>* cancel,
                        std::shared_ptr<Communicator>& out);

}  // namespace hcl
