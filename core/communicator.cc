#include "core/communicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/kept_runs.h"
#include "core/log.h"

namespace hcl {

Communicator::Communicator(int rank, int nranks, const uint8_t secret[16], uint64_t commTag,
                           CommSettings settings)
    : rank_(rank),
      nranks_(nranks),
      commTag_(commTag),
      settings_(std::move(settings)),
      device_(settings_.device ? settings_.device : &cpuDevice()),
      planner_(settings_.algoOverride),
      stagingChoice_(settings_.windowStaging < 0    ? StagingChoice::Mode::Measure
                     : settings_.windowStaging == 0 ? StagingChoice::Mode::Never
                                                    : StagingChoice::Mode::Always),
      hugePages_(HugePageAdvisor::forThisHost(settings_.hugePagesAfter)),
      keptRuns_(std::make_unique<KeptRuns>()) {
  std::memcpy(secret_, secret, sizeof secret_);
}

Communicator::~Communicator() {
  keptRuns_.reset();
  // Streams drain before the peers' memory they may still use is unmapped.
  ipcAreas_.clear();
  ipcMappings_.reset();
  // Connections go before the transports that made them.
  connections_.clear();
  transports_.clear();
}

Status Communicator::ipcAreaFor(const void* stream, IpcArea** out) {
  std::lock_guard lock(ipcAreasMutex_);
  auto& area = ipcAreas_[stream];
  if (!area) {
    std::unique_ptr<StreamGate> own;
    if (!stream) HCL_TRY(device_->openPrivateGate(own));
    auto made = std::make_unique<IpcArea>(*device_, std::move(own));
    HCL_TRY(made->init());
    area = std::move(made);
  }
  *out = area.get();
  return {};
}

Status Communicator::staging(StagingArea** out) {
  if (!staging_) {
    auto area = std::make_unique<StagingArea>(*device_, settings_.stageChunkBytes, settings_.stageSlots);
    HCL_TRY(area->init());
    staging_ = std::move(area);
  }
  *out = staging_.get();
  return {};
}

Status Communicator::stagingFor(const void* stream, StagingArea** out) {
  std::lock_guard lock(streamStagingMutex_);
  auto& area = streamStaging_[stream];
  if (!area) {
    auto made = std::make_unique<StagingArea>(*device_, settings_.stageChunkBytes, settings_.stageSlots);
    HCL_TRY(made->init());
    area = std::move(made);
  }
  *out = area.get();
  return {};
}

void Communicator::requestAbort() {
  abortFlag_.store(true, std::memory_order_release);
  issueOrder_.wake();  // operations waiting for their turn give up
  // An operation in flight sees the flag within one polling round and
  // leaves the gate; connections are only touched by its holder.
  const ExecutionGate::Hold hold = executionGate_.enter();
  for (auto& c : connections_) {
    if (c) c->abortOnPurpose();
  }
}

void Communicator::fail(const Status& s) {
  {
    std::lock_guard lock(failureMutex_);
    if (!failure_.ok()) return;
    failure_ = s;
  }
  failed_.store(true, std::memory_order_release);
  // Every caller is an operation that noticed the failure, hence COLL.
  log::warn(log::Coll, "communicator failed: {}", s.message());
  for (auto& c : connections_) {
    if (c) c->abortBecause(s);
  }
}

Status Communicator::failureQuoted() const {
  std::lock_guard lock(failureMutex_);
  return {failure_.code(), "communicator has failed (first error: " + failure_.message() + ")"};
}

std::byte* Communicator::acquireScratch(size_t bytes, size_t turns, bool* fresh) {
  // Large scratch is where schedules stage data for peers to map; small
  // scratch stays on the heap (a memfd each would cost file descriptors).
  // Small windows that rotate are large together, and mapped too.
  constexpr size_t kShareFrom = 256 * 1024;
  constexpr size_t kPage = 4096;
  const size_t region = turns > 1 ? (bytes + kPage - 1) / kPage * kPage : bytes;
  const size_t total = region * std::max<size_t>(turns, 1);
  if (total > scratch_.size()) {
    scratch_ = ShareableBuffer(total, total >= kShareFrom);
    scratchTouched_ = 0;
    scratchStaged_ = false;
  }
  const size_t at = turns > 1 ? region * (scratchTurn_ % turns) : 0;
  if (fresh) *fresh = at + bytes > scratchTouched_ || !scratchStaged_;
  scratchTouched_ = std::max(scratchTouched_, at + bytes);
  return scratch_.data() + at;
}

void Communicator::releaseScratch() {
  constexpr size_t kKeep = 16u << 20;
  if (scratch_.size() > kKeep) {
    scratch_ = ShareableBuffer();
    scratchTouched_ = 0;
    scratchStaged_ = false;
  }
}

std::string Communicator::describeLinks() const {
  std::string out;
  for (int p = 0; p < nranks_; ++p) {
    if (p == rank_) continue;
    const Connection* c = connections_.empty() ? nullptr : connections_[static_cast<size_t>(p)].get();
    const Link& l = links_[static_cast<size_t>(p)];
    out += fmt::format("rank {} -> rank {}: {} ({})\n", rank_, p, c ? c->describe() : toString(l.kind), l.reason);
  }
  return out;
}

void Communicator::setTopology(std::vector<PeerInfo> peers, std::vector<Link> links,
                               std::vector<std::unique_ptr<Transport>> transports,
                               std::vector<std::unique_ptr<Connection>> connections) {
  peers_ = std::move(peers);
  staged_ = std::any_of(peers_.begin(), peers_.end(), [](const PeerInfo& p) { return p.deviceKind != DeviceKind::Cpu; });
  const PeerInfo& first = peers_.front();
  ipc_ = nranks_ <= kIpcMaxRanks && std::all_of(peers_.begin(), peers_.end(), [&](const PeerInfo& p) {
           return p.ipcCapable && p.deviceKind != DeviceKind::Cpu && p.deviceKind == first.deviceKind &&
                  p.vendor == first.vendor && p.hostId == first.hostId;
         });
  if (ipc_) ipcMappings_ = std::make_unique<IpcPeerMappings>(*device_);
  links_ = std::move(links);
  transports_ = std::move(transports);
  connections_ = std::move(connections);
}

}  // namespace hcl
