// One rank's view of a communicator: its peers, the link to each, the
// connections, and its failure state.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collectives/plan/plan.h"
#include "core/peer_info.h"
#include "core/redop.h"
#include "core/registrations.h"
#include "core/rescue_port.h"
#include "core/schedule_cache.h"
#include "core/shared_allocations.h"
#include "core/status.h"
#include "core/staging.h"
#include "core/staging_choice.h"
#include "core/ipc_area.h"
#include "core/execution_gate.h"
#include "core/huge_pages.h"
#include "core/issue_order.h"
#include "device/device.h"
#include "transports/link.h"
#include "transports/transport.h"

namespace hcl {

class KeptRuns;

struct CommSettings {
  int64_t timeoutMs = 60000;
  size_t chunkBytes = 512 * 1024;
  std::string algoOverride;
  std::string name;  // config commName
  int64_t spinUs = 50;
  Device* device = nullptr;  // null: the CPU
  size_t stageChunkBytes = 1 << 20;
  int stageSlots = 3;
  // HCL_WINDOW_STAGING: -1 measures which way runs faster (core/staging_choice.h).
  int windowStaging = -1;
  uint32_t hugePagesAfter = 16;  // HCL_HUGE_PAGES_AFTER
  // config.blocking / HCL_COMM_BLOCKING: false makes inits return
  // hclInProgress and finish in the background.
  bool blocking = true;
  // The one network for links between ranks: HCL_NET (NCCL_NET), else
  // config.netName, else a split's parent's; empty: the best each link has.
  // `netNameFrom` says where it came from.
  std::string netName;
  std::string netNameFrom;
};

class Communicator {
 public:
  Communicator(int rank, int nranks, const uint8_t secret[16], uint64_t commTag,
               CommSettings settings);
  ~Communicator();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const uint8_t* secret() const { return secret_; }
  uint64_t commTag() const { return commTag_; }
  const CommSettings& settings() const { return settings_; }
  Device& device() { return *device_; }
  // True when any rank computes on a GPU: then every rank runs collectives
  // through the host-staged pipeline (core/staged_run.h), so chunks match.
  bool staged() const { return staged_; }
  // True when every rank is on one host, on devices of one vendor that can
  // map each other's memory: collectives then take the IPC path
  // (core/ipc_run.h) instead of staging through host memory.
  bool ipc() const { return ipc_; }
  // The IPC path's tables and stand-ins for the calls on one stream (keyed by
  // the HCL stream), or, with a null key, for calls made without a stream
  // (the area then owns a gate on a stream of its own).
  Status ipcAreaFor(const void* stream, IpcArea** out);
  // Peers' allocations mapped here. Only the holder of the execution gate uses it.
  IpcPeerMappings& ipcMappings() { return *ipcMappings_; }
  // The bounce buffers and copy queues, made at the first staged operation.
  Status staging(StagingArea** out);
  // Bounce buffers of the calls on one device-runtime stream (keyed by the
  // HCL stream), whose copies run on that stream; made at its first call.
  Status stagingFor(const void* stream, StagingArea** out);
  const Planner& planner() const { return planner_; }
  // The planner's schedule for `args`, reused across calls of one shape.
  // Only the holder of the execution gate calls it.
  std::shared_ptr<const PreparedSchedule> schedule(const CollArgs& args) { return schedules_.get(planner_, args); }
  // Runs of recent collectives, to run again (core/kept_runs.h). Only the
  // holder of the execution gate uses them.
  KeptRuns& keptRuns() { return *keptRuns_; }
  void setPlanTable(std::shared_ptr<const PlanTable> table) { planner_.setTable(std::move(table)); }
  void setPeerAccess(bool on) { planner_.setPeerAccess(on); }
  void setSharedCpus(bool on) { planner_.setSharedCpus(on); }
  void setPairingOrder(std::vector<int> order) { planner_.setPairingOrder(std::move(order)); }
  void setCpuFamily(CpuFamily f) { planner_.setCpuFamily(f); }
  CpuFamily cpuFamily() const { return planner_.cpuFamily(); }
  bool sharedCpus() const { return planner_.sharedCpus(); }
  // Busy-poll time of waits on this communicator (Backoff).
  void setSpinUs(int64_t us) { settings_.spinUs = us; }
  RedOpTable& redOps() { return redOps_; }
  Registrations& registrations() { return registrations_; }
  Windows& windows() { return windows_; }
  const std::vector<PeerInfo>& peers() const { return peers_; }
  const std::vector<Link>& links() const { return links_; }
  Connection* connection(int peer) { return connections_[static_cast<size_t>(peer)].get(); }

  // Runs one rank's side of an operation at a time (core/execution_gate.h).
  ExecutionGate& executionGate() { return executionGate_; }
  // Which operation's turn it is (core/issue_order.h).
  IssueOrder& issueOrder() { return issueOrder_; }

  // Set by hclCommAbort (from any thread); every wait checks it.
  const std::atomic<bool>& abortFlag() const { return abortFlag_; }
  void requestAbort();
  // hclCommRevoke: operations in flight stop as with an abort, but the
  // communicator stays until destroyed, and it can still be split or shrunk
  // (through the rescue root, since its links are broken).
  void revoke() {
    revoked_.store(true, std::memory_order_release);
    requestAbort();
  }
  bool revoked() const { return revoked_.load(std::memory_order_acquire); }
  // hclCommFinalize: no operation may be issued after it; queries,
  // deregistration and hclCommDestroy still may.
  void markFinalized() { finalized_.store(true, std::memory_order_release); }
  bool finalized() const { return finalized_.load(std::memory_order_acquire); }

  // A fatal error: remember it, and break every link so peers fail fast.
  void fail(const Status& s);
  // hclSuccess, or the fatal error that broke the communicator, its text
  // quoted as the first error (it already names the call that failed).
  Status failure() const { return failed_.load(std::memory_order_acquire) ? failureQuoted() : Status{}; }
  // Not revoked, finalized, failed or aborted: what every call checks first.
  bool usable() const {
    return !revoked() && !finalized() && !failed_.load(std::memory_order_acquire) &&
           !abortFlag_.load(std::memory_order_acquire);
  }

  // Scratch memory for the operation in flight (one at a time per
  // communicator, under the execution gate). Small buffers are kept for the
  // next operation so the latency path does not allocate or fault pages.
  // With `turns` > 1, successive calls that stage get successive regions of
  // `bytes` each (Schedule::scratchTurns); a call that goes straight between
  // the buffers leaves the turn where it was, so the next staged call finds
  // its region as warm as calls in a row do (2 ranks, 1 MiB all-gather:
  // 42 us after six direct calls, against 56-65 when every call turned).
  // `fresh`: the bytes handed out were not handed out before, so the call
  // faults them in, or no call has staged through this scratch yet, so
  // peers have yet to map it.
  std::byte* acquireScratch(size_t bytes, size_t turns = 1, bool* fresh = nullptr);
  // A run staged through the scratch it acquired: its peers mapped it, and
  // the next call takes the next region.
  void scratchStaged() {
    scratchStaged_ = true;
    ++scratchTurn_;
  }
  // Whether runs that may stage through scratch should (HCL_WINDOW_STAGING).
  StagingChoice& stagingChoice() { return stagingChoice_; }
  HugePageAdvisor& hugePages() { return hugePages_; }
  void releaseScratch();

  // Number of the next collective call issued on the communicator
  // (core/call_tag.h). Its calls are issued by one thread at a time.
  uint64_t nextCallSerial() { return callSerial_.fetch_add(1, std::memory_order_relaxed); }
  // Per-call serial number of splits, so every child gets a distinct tag.
  uint64_t nextSplitSerial() { return splitSerial_++; }
  // Shrinks count apart: ranks a shrink excluded do not see it, so the
  // members of each shrink agree on the highest of their counts first.
  uint64_t shrinkSerial() const { return shrinkSerial_; }
  void setShrinkSerial(uint64_t next) { shrinkSerial_ = next; }

  std::string describeLinks() const;

  // The port published as PeerInfo::rescuePort (core/rescue_port.h).
  void holdRescuePort(RescuePort port) { rescuePort_ = std::move(port); }
  void releaseRescuePort() { rescuePort_.release(); }

  // Built once at init (core/comm_init.cc).
  void setTopology(std::vector<PeerInfo> peers, std::vector<Link> links,
                   std::vector<std::unique_ptr<Transport>> transports,
                   std::vector<std::unique_ptr<Connection>> connections);

 private:
  Status failureQuoted() const;  // failure() once failed_ is set

  int rank_;
  int nranks_;
  uint8_t secret_[16];
  uint64_t commTag_;
  CommSettings settings_;
  Device* device_;
  bool staged_ = false;
  bool ipc_ = false;
  std::unique_ptr<IpcPeerMappings> ipcMappings_;
  std::mutex ipcAreasMutex_;
  std::map<const void*, std::unique_ptr<IpcArea>> ipcAreas_;
  std::unique_ptr<StagingArea> staging_;
  std::mutex streamStagingMutex_;
  std::map<const void*, std::unique_ptr<StagingArea>> streamStaging_;
  Planner planner_;
  ScheduleCache schedules_;
  RedOpTable redOps_;
  Registrations registrations_;
  Windows windows_;
  std::vector<PeerInfo> peers_;
  std::vector<Link> links_;
  std::vector<std::unique_ptr<Transport>> transports_;
  std::vector<std::unique_ptr<Connection>> connections_;
  ExecutionGate executionGate_;
  IssueOrder issueOrder_;
  std::atomic<bool> abortFlag_{false};
  std::atomic<bool> revoked_{false};
  std::atomic<bool> finalized_{false};
  mutable std::mutex failureMutex_;
  Status failure_;
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> callSerial_{0};
  uint64_t splitSerial_ = 0;
  uint64_t shrinkSerial_ = 0;
  RescuePort rescuePort_;
  ShareableBuffer scratch_;  // peers map it in algorithms that stage data there
  size_t scratchTurn_ = 0;     // the region of the next call, where schedules rotate their scratch
  size_t scratchTouched_ = 0;  // bytes of it handed out since it was allocated
  bool scratchStaged_ = false;  // a run has staged through it since it was allocated
  StagingChoice stagingChoice_;
  HugePageAdvisor hugePages_;
  std::unique_ptr<KeptRuns> keptRuns_;  // last: its runs use the members above
};

}  // namespace hcl
