// The binary interface of NCCL network plugins (libnccl-net*.so), versions 8
// to 11: the tables of entry points a plugin exports as ncclNetPlugin_vN.
// Layouts follow NCCL's ext-net documentation; only what HCL calls is typed
// precisely, the rest is kept as opaque pointers of the right size.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hcl::netabi {

using Result = int;  // ncclResult_t: 0 success, 2 system, 3 internal, 4 invalid argument, 6 remote
inline constexpr Result kSuccess = 0;

inline constexpr size_t kHandleBytes = 128;  // NCCL_NET_HANDLE_MAXSIZE
inline constexpr int kPtrHost = 0x1;         // NCCL_PTR_HOST
inline constexpr int kPtrCuda = 0x2;
inline constexpr int kPtrDmaBuf = 0x4;

// void (*)(ncclDebugLogLevel, unsigned long flags, const char* file, int line, const char* fmt, ...)
using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);
// ncclResult_t (*)(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData), v10
using ProfilerCallback = Result (*)(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData);

struct DeviceHandle;  // ncclNetDeviceHandle_vN: HCL never asks for device offload

struct VirtualDeviceProps {
  int ndevs;
  int devs[4];
};

struct Properties_v8 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int speed;  // Mbit/s
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  int netDeviceType;
  int netDeviceVersion;
};

// v9 and v10 share this layout.
struct Properties_v9 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  int netDeviceType;
  int netDeviceVersion;
  VirtualDeviceProps vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
};

struct CommConfig_v10 {
  int trafficClass;  // -1: undefined
};

struct Net_v8 {
  const char* name;
  Result (*init)(DebugLogger logger);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, Properties_v8* props);
  Result (*listen)(int dev, void* handle, void** listenComm);
  Result (*connect)(int dev, void* handle, void** sendComm, DeviceHandle** sendDevComm);
  Result (*accept)(void* listenComm, void** recvComm, DeviceHandle** recvDevComm);
  Result (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  void* regMrDmaBuf;
  Result (*deregMr)(void* comm, void* mhandle);
  Result (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
  Result (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request);
  void* iflush;
  Result (*test)(void* request, int* done, int* sizes);
  Result (*closeSend)(void* sendComm);
  Result (*closeRecv)(void* recvComm);
  Result (*closeListen)(void* listenComm);
  void* getDeviceMr;
  void* irecvConsumed;
};

struct Net_v9 {
  const char* name;
  Result (*init)(DebugLogger logger);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, Properties_v9* props);
  Result (*listen)(int dev, void* handle, void** listenComm);
  Result (*connect)(int dev, void* handle, void** sendComm, DeviceHandle** sendDevComm);
  Result (*accept)(void* listenComm, void** recvComm, DeviceHandle** recvDevComm);
  Result (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  void* regMrDmaBuf;
  Result (*deregMr)(void* comm, void* mhandle);
  Result (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request);
  Result (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** request);
  void* iflush;
  Result (*test)(void* request, int* done, int* sizes);
  Result (*closeSend)(void* sendComm);
  Result (*closeRecv)(void* recvComm);
  Result (*closeListen)(void* listenComm);
  void* getDeviceMr;
  void* irecvConsumed;
  void* makeVDevice;
};

struct Net_v10 {
  const char* name;
  Result (*init)(DebugLogger logger, ProfilerCallback profiler);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, Properties_v9* props);
  Result (*listen)(int dev, void* handle, void** listenComm);
  Result (*connect)(int dev, CommConfig_v10* config, void* handle, void** sendComm, DeviceHandle** sendDevComm);
  Result (*accept)(void* listenComm, void** recvComm, DeviceHandle** recvDevComm);
  Result (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  void* regMrDmaBuf;
  Result (*deregMr)(void* comm, void* mhandle);
  Result (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
  Result (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                  void** request);
  void* iflush;
  Result (*test)(void* request, int* done, int* sizes);
  Result (*closeSend)(void* sendComm);
  Result (*closeRecv)(void* recvComm);
  Result (*closeListen)(void* listenComm);
  void* getDeviceMr;
  void* irecvConsumed;
  void* makeVDevice;
};

// v11 (NCCL 2.28): v9's properties and the largest multi-request, laid
// out after them.
struct Properties_v11 : Properties_v9 {
  int maxMultiRequestSize;
};
static_assert(sizeof(Properties_v11) == sizeof(Properties_v9) + 8);

// v11 gives each initialisation a context (NCCL makes one per
// communicator), which listen and connect take; the comm config moved
// from connect to init.
struct Net_v11 {
  const char* name;
  Result (*init)(void** ctx, uint64_t commId, CommConfig_v10* config, DebugLogger logger, ProfilerCallback profiler);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, Properties_v11* props);
  Result (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  Result (*connect)(void* ctx, int dev, void* handle, void** sendComm, DeviceHandle** sendDevComm);
  Result (*accept)(void* listenComm, void** recvComm, DeviceHandle** recvDevComm);
  Result (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  void* regMrDmaBuf;
  Result (*deregMr)(void* comm, void* mhandle);
  Result (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
  Result (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                  void** request);
  void* iflush;
  Result (*test)(void* request, int* done, int* sizes);
  Result (*closeSend)(void* sendComm);
  Result (*closeRecv)(void* recvComm);
  Result (*closeListen)(void* listenComm);
  void* getDeviceMr;
  void* irecvConsumed;
  void* makeVDevice;
  Result (*finalize)(void* ctx);
  void* setNetAttr;
};

}  // namespace hcl::netabi
