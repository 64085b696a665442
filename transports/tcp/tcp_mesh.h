// The connect phase: each rank connects to its higher-ranked peers and
// accepts its lower-ranked peers, all in one event loop so no order of
// ranks can deadlock. Bounded by ctx.timeoutMs and ctx.abortFlag. A rank
// opens `streams` sockets to each higher-ranked peer and accepts as many as
// each lower-ranked peer announces in its hellos (tcp_stripe.h).
#pragma once

#include <asio/io_context.hpp>
#include <memory>
#include <vector>

#include "core/status.h"
#include "transports/tcp/tcp_listener.h"
#include "transports/transport.h"

namespace hcl::tcp {

Status connectTcpMesh(const TransportContext& ctx, const std::vector<int>& peers,
                      const std::shared_ptr<asio::io_context>& io,
                      std::vector<std::unique_ptr<TcpListener>>& listeners,
                      std::vector<std::unique_ptr<Connection>>& out, int streams = 1);

}  // namespace hcl::tcp
