// A peer process's shareable allocations (hclMemAlloc memfds), mapped into
// this process on first use: the peer's file descriptor is duplicated with
// pidfd_getfd and mapped shared, so loads and stores reach the peer's pages
// directly. The same ptrace permission as process_vm_readv is needed.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "transports/transport.h"

namespace hcl::shm {

class PeerMappings {
 public:
  PeerMappings(int rank, int peer, int64_t peerPid) : rank_(rank), peer_(peer), peerPid_(peerPid) {}
  ~PeerMappings();
  PeerMappings(const PeerMappings&) = delete;
  PeerMappings& operator=(const PeerMappings&) = delete;

  // Where [address, address + bytes) of `buffer` is mapped here, or null when
  // it is not shareable or cannot be mapped. Valid until a later call maps
  // a new allocation in its place; the most recently used is never dropped.
  void* map(const PeerBuffer& buffer, uint64_t address, size_t bytes);
  size_t size() const { return regions_.size(); }

 private:
  struct Region {
    uint64_t serial;
    uint64_t peerBase;
    uint64_t bytes;
    std::byte* local;
  };
  const Region* open(const PeerBuffer& buffer);
  void disable(const char* call, int err);

  const int rank_, peer_;
  const int64_t peerPid_;
  int pidfd_ = -1;
  bool disabled_ = false;
  std::vector<Region> regions_;  // least recently used first
};

}  // namespace hcl::shm
