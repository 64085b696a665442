// The one table of every HCL knob. Adding a knob is adding one row here (and
// one line to docs/parameters.md, which a test checks).
#include <array>

#include "core/params.h"

namespace hcl {
namespace {

using enum ParamType;

constexpr std::array kParams = {
    ParamSpec{"HCL_DEBUG", String, "",
              "Log level: VERSION, WARN, INFO, TRACE (unset: WARN; NONE silences)", "NCCL_DEBUG"},
    ParamSpec{"HCL_DEBUG_SUBSYS", String, "INIT,BOOTSTRAP,ENV",
              "Comma list of INIT,COLL,P2P,SHM,NET,GRAPH,TUNING,ENV,ALLOC,CALL,BOOTSTRAP,PROXY,"
              "DESTROY,ALL shown at INFO/TRACE; a leading ^ inverts the list",
              "NCCL_DEBUG_SUBSYS"},
    ParamSpec{"HCL_DEBUG_FILE", String, "",
              "Log file instead of stderr; %h expands to the hostname, %p to the pid",
              "NCCL_DEBUG_FILE"},
    ParamSpec{"HCL_CONF_FILE", String, "",
              "Config file with NAME=VALUE lines (unset: ~/.hcl.conf)", "NCCL_CONF_FILE"},
    ParamSpec{"HCL_COMM_ID", String, "", "host:port of the bootstrap root", "NCCL_COMM_ID"},
    ParamSpec{"HCL_COMM_SECRET", String, "",
              "Mixed into the secret of unique ids made from HCL_COMM_ID", nullptr},
    ParamSpec{"HCL_SOCKET_IFNAME", String, "",
              "Network interface filter for sockets", "NCCL_SOCKET_IFNAME"},
    ParamSpec{"HCL_SOCKET_FAMILY", String, "",
              "Address family of sockets: AF_INET or AF_INET6", "NCCL_SOCKET_FAMILY"},
    ParamSpec{"HCL_HOSTID", String, "",
              "Overrides the host identity (emulates several hosts on one machine)", "NCCL_HOSTID"},
    ParamSpec{"HCL_FABRIC", String, "",
              "Fabric label of this rank's NICs: 'label', or 'ifname=label,...' per interface "
              "(unset: IB subnet prefix or IP subnet)",
              nullptr},
    ParamSpec{"HCL_NIC_SPEED", String, "",
              "NIC speed override: 'rate' or 'ifname=rate,...', e.g. 1gbit, 125mbit, 200g "
              "(unset: from sysfs)",
              nullptr},
    ParamSpec{"HCL_LINK_MODEL", String, "",
              "File of link classes with latency and bandwidth for the cost model "
              "(docs/heterogeneous.md)",
              nullptr},
    ParamSpec{"HCL_PROBE", Bool, "0",
              "Measure latency and bandwidth of each link class at init; rank 0 publishes them",
              nullptr},
    ParamSpec{"HCL_PEER_WATCH", Bool, "1",
              "A TCP connection beside each libfabric and net-plugin link, so that a peer's death fails the "
              "survivors at once (those networks may not report it); must be equal on all ranks",
              nullptr},
    ParamSpec{"HCL_RAISE_FD_LIMIT", Bool, "1",
              "Raise the soft file descriptor limit, up to the hard one, where a communicator needs more "
              "(0: leave it, for programs that use select())",
              nullptr},
    ParamSpec{"HCL_DIRECT", Bool, "1",
              "Allow the direct algorithms, which read and write peers' buffers, where every "
              "link can (shared memory with single copy, ranks of one process)",
              nullptr},
    ParamSpec{"HCL_IPC_DISABLE", Bool, "0",
              "Stage device buffers through host memory even where every rank is on one host "
              "with devices of one vendor that could map each other's memory (CUDA/HIP IPC)",
              "NCCL_P2P_DISABLE"},
    ParamSpec{"HCL_GPU_GATE", String, "",
              "How a GPU stream waits for HCL's worker: spin (a one-thread spin kernel) or wait (stream memory "
              "waits even where the device does not claim them), for experiments; unset: what the device supports",
              nullptr},
    ParamSpec{"HCL_SHM_DISABLE", Bool, "0",
              "Use TCP even between ranks on one host", "NCCL_SHM_DISABLE"},
    ParamSpec{"HCL_SHM_CMA_THRESHOLD", Int, "16384",
              "Shared-memory messages at least this large use process_vm_readv single copy "
              "(0 disables); left unset, 262144 where a host's ranks share cores",
              nullptr, 0},
    ParamSpec{"HCL_SHM_MAP", Bool, "1",
              "Map peers' hclMemAlloc buffers and scratch windows (pidfd_getfd) so collectives load and store them directly",
              nullptr},
    ParamSpec{"HCL_SHM_SLOT_BYTES", Int, "262144",
              "Bytes per slot of the shared-memory FIFOs' bulk lane (messages too large for the small and medium slots)",
              nullptr},
    ParamSpec{"HCL_SHM_SLOTS", Int, "8",
              "Slots per shared-memory FIFO in the bulk lane (messages too large for the small and medium slots)",
              nullptr},
    ParamSpec{"HCL_SHM_PACKED_SLOTS", Int, "512",
              "Slots per shared-memory FIFO for messages of at most 16 bytes, two per cache line (0: none)", nullptr},
    ParamSpec{"HCL_SHM_SMALL_SLOTS", Int, "2048",
              "Slots per shared-memory FIFO for messages of at most HCL_SHM_SMALL_SLOT_BYTES (0: none)", nullptr},
    ParamSpec{"HCL_SHM_SMALL_SLOT_BYTES", Int, "256", "Bytes per small-message shared-memory FIFO slot", nullptr},
    ParamSpec{"HCL_SHM_MEDIUM_SLOTS", Int, "128",
              "Slots per shared-memory FIFO for messages too large for a small slot and of at most "
              "HCL_SHM_MEDIUM_SLOT_BYTES (0: none)",
              nullptr},
    ParamSpec{"HCL_SHM_MEDIUM_SLOT_BYTES", Int, "4096", "Bytes per medium-message shared-memory FIFO slot",
              nullptr},
    ParamSpec{"HCL_SHM_STREAM_STORES", Int, "-1",
              "Messages of 16 KiB and more copied through shared-memory FIFO slots: 1 stores them past the "
              "cache, 0 through it, -1 times the sender's copies and stores past the cache while they run slowly",
              nullptr, -1, 1},
    ParamSpec{"HCL_TCP_BUFFER_BYTES", Int, "4194304", "Socket send/receive buffer size in bytes",
              nullptr, 0, int64_t{1} << 31},
    ParamSpec{"HCL_TCP_STREAMS", Int, "1", "TCP sockets per peer pair; from 2, each direction has its own and large messages are striped over them (the lower rank's value is used). Unset: HCL_SOCKET_NTHREADS x HCL_NSOCKS_PERTHREAD", nullptr, 1, 64},
    ParamSpec{"HCL_SOCKET_NTHREADS", Int, "1",
              "With HCL_TCP_STREAMS unset, TCP sockets per peer pair are this times HCL_NSOCKS_PERTHREAD, as NCCL's "
              "socket transport opens (HCL's sockets share the rank's progress, with no threads of their own); "
              "above 16, 16 with a warning, as NCCL",
              "NCCL_SOCKET_NTHREADS", 1, std::numeric_limits<int32_t>::max()},
    ParamSpec{"HCL_NSOCKS_PERTHREAD", Int, "1", "See HCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD", 1, 64},
    ParamSpec{"HCL_OFI", String, "auto",
              "libfabric for links between hosts (and within one under HCL_SHM_DISABLE): auto (hardware "
              "providers, where the host shows an RDMA device), on (any provider but sockets; an error if "
              "none), off",
              nullptr},
    ParamSpec{"HCL_OFI_PROVIDER", String, "",
              "The libfabric provider to use, by its exact name (e.g. 'tcp;ofi_rxm', 'shm', 'efa'); naming "
              "one turns HCL_OFI auto into on",
              nullptr},
    ParamSpec{"HCL_IB", String, "auto",
              "HCL's own verbs transport (InfiniBand, RoCE) for links between hosts (and within one under "
              "HCL_SHM_DISABLE): auto (where the host has an active RDMA port), on (an error if none), off",
              nullptr},
    ParamSpec{"HCL_IB_DISABLE", Bool, "0", "1 turns HCL's verbs transport off (as HCL_IB=off)", "NCCL_IB_DISABLE"},
    ParamSpec{"HCL_IB_HCA", String, "",
              "Verbs ports to use: a comma list of device[:port], prefixes unless the list starts with '=', "
              "left out when it starts with '^' (NCCL's syntax)",
              "NCCL_IB_HCA"},
    ParamSpec{"HCL_IB_GID_INDEX", Int, "-1",
              "GID index for verbs links: -1 picks the first RoCE v2 GID with an IPv4 address on RoCE ports "
              "and 0 on InfiniBand",
              "NCCL_IB_GID_INDEX", -1, 255},
    ParamSpec{"HCL_IB_TIMEOUT", Int, "20", "Verbs ack timeout, 4.096 us * 2^value per try", "NCCL_IB_TIMEOUT", 1, 31},
    ParamSpec{"HCL_IB_RETRY_CNT", Int, "7", "Verbs retries before a send fails", "NCCL_IB_RETRY_CNT", 0, 7},
    ParamSpec{"HCL_IB_SL", Int, "0", "InfiniBand service level of verbs links", "NCCL_IB_SL", 0, 15},
    ParamSpec{"HCL_IB_TC", Int, "0", "Traffic class of verbs links (RoCE)", "NCCL_IB_TC", 0, 255},
    ParamSpec{"HCL_IBVERBS_LIBRARY", String, "",
              "The verbs library to open instead of libibverbs.so.1 (tests use a fake one); naming one turns "
              "HCL_IB auto into on",
              nullptr},
    ParamSpec{"HCL_NET", String, "",
              "The one network for links between ranks, by NCCL's names: Socket (TCP), IB (HCL's verbs), OFI "
              "(libfabric) or a net plugin's name; other networks are not opened, and a link that cannot take it "
              "fails init. Unset: the best network both ends have",
              "NCCL_NET"},
    ParamSpec{"HCL_NET_PLUGIN", String, "",
              "NCCL net plugin for links between hosts (and within one under HCL_SHM_DISABLE): a name "
              "(libnccl-net-<name>.so), a library path, or none; unset tries libnccl-net.so. A plugin named "
              "here that cannot be used fails init; under NCCL_NET_PLUGIN HCL warns and keeps its own transports",
              "NCCL_NET_PLUGIN"},
    ParamSpec{"HCL_TCP_CONGESTION", String, "auto", "TCP congestion control: auto (cubic, else reno, on links within a host; kernel default elsewhere), system, or an algorithm name", nullptr},
    ParamSpec{"HCL_TIMEOUT_MS", Int, "60000",
              "A wait on a peer that sees no progress for this many milliseconds fails (0: never)", nullptr, 0},
    ParamSpec{"HCL_CHUNK_BYTES", Int, "524288",
              "Pipeline slice size of ring algorithms in bytes, and the largest slice of the direct and window "
              "algorithms",
              nullptr, 4096, int64_t{1} << 30},
    ParamSpec{"HCL_HUGE_PAGES_AFTER", Int, "16",
              "Host buffers of the direct algorithms: each 2 MiB region at least half inside one is "
              "collapsed into a transparent huge page once this many calls used it, then asked again "
              "after twice as many uses each time, up to 64 times this many (0: never)",
              nullptr, 0, 1 << 20},
    ParamSpec{"HCL_ALGO", String, "", "Collective algorithm override", "NCCL_ALGO"},
    ParamSpec{"HCL_WINDOW_STAGING", Int, "-1",
              "Window all-reduce, all-gather and all-to-all on malloc buffers: 1 stages through shared "
              "scratch, 0 goes straight between "
              "the buffers (process_vm_readv/writev), -1 measures both per call size and keeps the faster",
              nullptr, -1, 1},
    ParamSpec{"HCL_SPIN_US", Int, "50", "Busy-poll time in microseconds before backing off",
              nullptr, 0, 10'000'000},
    ParamSpec{"HCL_DEVICE", String, "auto",
              "Device of the communicators this process creates: auto, cpu, cuda[:N], hip[:N], sim[:N] "
              "(hclSetDevice overrides it per thread)",
              nullptr},
    ParamSpec{"HCL_PLUGIN_DIR", String, "", "Directory searched first for the GPU device plugins", nullptr},
    ParamSpec{"HCL_STAGE_CHUNK_BYTES", Int, "1048576",
              "Chunk size of the host-staged path for device buffers", nullptr, 4096, int64_t{1} << 30},
    ParamSpec{"HCL_STAGE_SLOTS", Int, "3", "Bounce-buffer slots of the host-staged pipeline", nullptr, 2, 16},
    ParamSpec{"HCL_SIM_COPY_GBPS", Int, "0",
              "Copy rate of the sim test device (copy engine and native-stream commands) in GB/s (0: as fast as memcpy)", nullptr, 0},
    ParamSpec{"HCL_SIM_SHARED_QUEUE", Bool, "0",
              "Sim test device: copies wait while any native stream of the device is stopped on a wait, as on a "
              "GPU whose streams share one hardware queue",
              nullptr},
    ParamSpec{"HCL_COMM_BLOCKING", Bool, "1", "0: inits whose config does not set blocking return hclInProgress and finish in the background (poll hclCommGetAsyncError)", "NCCL_COMM_BLOCKING"},
};

}  // namespace

std::span<const ParamSpec> paramTable() { return kParams; }

}  // namespace hcl
