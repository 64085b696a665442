// An NCCL network plugin (libnccl-net*.so), opened at run time and seen
// through one face whatever version of the interface it exports.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace hcl::netplugin {

struct DeviceProperties {
  std::string name;
  int ptrSupport = 0;      // NCCL_PTR_* bits
  int speedMbps = 0;
  int maxComms = 0;
  size_t maxMessageBytes = 0;  // the largest isend/irecv it takes
};

// Calls are the plugin's own, with its codes turned into Status texts that
// name the plugin and the call. Connections are one-way: connect() gives a
// send comm, accept() the matching receive comm; both may give null until
// the connection is up, and are called again.
class NetPlugin {
 public:
  virtual ~NetPlugin() = default;
  virtual const std::string& name() const = 0;
  virtual int version() const = 0;
  virtual const std::string& library() const = 0;

  virtual Status devices(int* count) = 0;
  virtual Status properties(int device, DeviceProperties& out) = 0;
  virtual Status listen(int device, void* handle, void** listenComm) = 0;
  virtual Status connect(int device, void* handle, void** sendComm) = 0;
  virtual Status accept(void* listenComm, void** recvComm) = 0;
  virtual Status registerHost(void* comm, void* data, size_t bytes, void** mhandle) = 0;
  virtual Status deregister(void* comm, void* mhandle) = 0;
  // *request stays null when the plugin cannot take the message yet.
  virtual Status isend(void* sendComm, void* data, size_t bytes, int tag, void* mhandle, void** request) = 0;
  virtual Status irecv(void* recvComm, void* data, size_t bytes, int tag, void* mhandle, void** request) = 0;
  virtual Status test(void* request, bool* done, size_t* bytes) = 0;
  virtual Status closeSend(void* sendComm) = 0;
  virtual Status closeRecv(void* recvComm) = 0;
  virtual Status closeListen(void* listenComm) = 0;
  // Whether closing a comm cancels what is posted on it, so that nothing is
  // written into its buffers afterwards (a verbs queue pair destroyed).
  // Links over such a network keep receives posted at rest, and drop their
  // registrations after closing (deregister then gets a null comm).
  // External plugins promise nothing of the kind.
  virtual bool closeCancelsRequests() const { return false; }
};

// The library names tried for a HCL_NET_PLUGIN value, in order: empty (the
// default) gives libnccl-net.so; a value with a '/' is a path; a name gives
// libnccl-net-<name>.so, then the name itself as a library.
std::vector<std::string> libraryCandidates(const std::string& spec);

// Opens the first candidate library that loads and exports a table HCL
// knows (ncclNetPlugin_v11, _v10, _v9, _v8, newest first), and initialises the
// plugin. Each library is opened once per process and kept, as plugins
// hold threads and state. Null, with *why, when none can be used.
NetPlugin* loadNetPlugin(const std::string& spec, std::string* why);

}  // namespace hcl::netplugin
