#include "transports/shm/shm_connection.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <utility>

#include "core/deadline.h"
#include "core/log.h"
#include "core/streaming_copy.h"
#include "transports/shm/shm_peer_mappings.h"
#include "transports/shm/shm_process.h"

namespace hcl::shm {

namespace {

// Bounds the work of one progress() call in each direction, so a call never
// takes long (4 MiB is about a millisecond of copying).
constexpr uint64_t kMaxBytesPerProgress = 4ull << 20;
constexpr auto kPeerCheckInterval = std::chrono::milliseconds(50);

// Copies an inline message (at most kSlotInlineBytes) without a call into
// memcpy, which costs more than such a copy: words of 8 or 4 bytes, the
// last one overlapping the one before, and single bytes below 4.
void copyInline(void* to, const void* from, uint64_t bytes) {
  auto* d = static_cast<uint8_t*>(to);
  const auto* s = static_cast<const uint8_t*>(from);
  if (bytes >= 8) {
    for (uint64_t at = 0; at + 8 < bytes; at += 8) std::memcpy(d + at, s + at, 8);
    std::memcpy(d + bytes - 8, s + bytes - 8, 8);
  } else if (bytes >= 4) {
    std::memcpy(d, s, 4);
    std::memcpy(d + bytes - 4, s + bytes - 4, 4);
  } else {
    for (uint64_t i = 0; i < bytes; ++i) d[i] = s[i];
  }
}

class ShmConnection final : public Connection {
 public:
  explicit ShmConnection(ConnectionConfig c)
      : rank_(c.rank),
        peer_(c.peer),
        side_(c.side),
        segment_(std::move(c.segment)),
        header_(segment_->header()),
        sendFifo_(header_.fifo[side_]),
        recvFifo_(header_.fifo[1 - side_]),
        cmaThreshold_(c.cmaThreshold),
        watchPeerPid_(c.watchPeerPid),
        mapPeerMemory_(c.mapPeerMemory),
        storeChoice_(c.slotStores),
        myPid_(::getpid()),
        peerPid_(header_.side[1 - side_].pid.load(std::memory_order_acquire)),
        mappings_(rank_, peer_, peerPid_) {
    // Both ends start with empty FIFOs; these are the only writers of their counters.
    for (int l = 0; l < kLanes; ++l) {
      const LaneLayout& layout = header_.lanes[l];
      LaneState& lane = lanes_[l];
      lane.slots = layout.slots;
      lane.slotBytes = layout.slotBytes;
      lane.stride = layout.slotStride;
      if (l == kPackedLane) {
        lane.sequenceOffset = kPackedWordOffset;
        lane.positionMask = kPackedPositionMask;
        lane.inlineOffset = kPackedDataOffset;
        lane.inlineCapacity = kPackedPayloadBytes;
      }
      if (lane.slots == 0) continue;
      lane.sendSlots = segment_->slot(side_, static_cast<Lane>(l), 0);
      lane.recvSlots = segment_->slot(1 - side_, static_cast<Lane>(l), 0);
      lane.sendTail = &sendFifo_.lane[l].tail;
      lane.recvTail = &recvFifo_.lane[l].tail;
      lane.sendTailSeen = lane.sendTail->load(std::memory_order_acquire);
      lane.sendHead = lane.sendTailSeen;
      lane.recvPosition = lane.recvTail->load(std::memory_order_acquire);
      lane.sendIndex = lane.sendHead % lane.slots;
      lane.recvIndex = lane.recvPosition % lane.slots;
    }
    cmaSent_ = sendFifo_.cmaCompleted.load(std::memory_order_acquire);
  }

  Status post(Transfer& t) override {
    if (!failure_.ok()) {
      t.complete(Transfer::State::Failed);
      return failure_;
    }
    if (t.bytes > 0 && t.buffer == nullptr) {
      t.complete(Transfer::State::Failed);
      return invalidArgument(
          fmt::format("rank {}: shm {} of {} bytes to/from rank {} with a null buffer", rank_,
                      t.isSend ? "send" : "receive", t.bytes, peer_));
    }
    t.progressed = 0;
    if (Status reserved = reserveFor(t); !reserved.ok()) {
      t.complete(Transfer::State::Failed);
      return fail(std::move(reserved));
    }
    if (t.isSend) {
      // A send may land in a free slot at once: the clock is read first, so
      // a peer gone for longer than the check interval is noticed before the
      // send counts as done.
      pollsSinceCheck_ = kPollsPerClockRead - 1;
      // A send of one slot with none queued before it goes into its slot
      // right here, which spares a small call the queue and a progress round.
      if (sends_.empty() && fitsOneSlot(t.bytes)) {
        if (Status peer = checkPeer(); !peer.ok()) {
          t.complete(Transfer::State::Failed);
          return fail(std::move(peer));
        }
        if (sendWhole(t)) return {};
      }
    } else if (recvs_.empty() && fitsOneSlot(t.bytes) && receiveWhole(t)) {
      // Likewise a small message that is already there; anything unusual
      // about it is left to progress() to report.
      return {};
    }
    (t.isSend ? sends_ : recvs_).push_back(&t);
    return {};
  }

  Status progress(bool* madeProgress) override {
    if (!failure_.ok()) return failure_;
    // Look at the peer before the FIFO: whatever a peer published before it
    // exited is then seen below, so only a peer gone with nothing left fails.
    // A send into the FIFO of a peer that is gone would never be read, so
    // it fails even when it moved.
    const Status peer = hasPendingWork() ? checkPeer() : Status{};
    const bool sending = !sends_.empty();
    bool moved = false;
    Status s = progressSends(moved);
    if (s.ok()) s = progressReceives(moved);
    if (s.ok()) completeSingleCopySends(moved);
    if (s.ok() && (!moved || sending)) s = peer;
    if (!s.ok()) {
      if (madeProgress) *madeProgress = true;
      return fail(std::move(s));
    }
    if (moved && madeProgress) *madeProgress = true;
    return {};
  }

  // A failure's text goes into this side's reason first, once: a peer
  // that sees the flag then quotes it.
  void abortBecause(const Status& why) override {
    if (!why.ok() && header_.side[side_].aborted.load(std::memory_order_relaxed) == 0) {
      AbortReason& reason = header_.abortReason[side_];
      const std::string text = shortenedAbortReason(why.message());
      std::memcpy(reason.text, text.data(), text.size());
      reason.bytes.store(static_cast<uint32_t>(text.size()), std::memory_order_release);
    }
    abort();
  }

  // The flag must be visible before any store the caller makes to its
  // buffers once this returns (peerAbortedAfterCopy): a seq_cst store alone
  // does not order later plain stores after it on every architecture (it
  // does on x86); the fence does.
  void abort() override {
    header_.side[side_].aborted.store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }

  // The probe at connect told whether we can reach the peer's memory; it is
  // stored in the peer's side of the header.
  bool peerMemoryAccess() const override {
    return cmaThreshold_ > 0 &&
           header_.side[1 - side_].peerCanReadMemory.load(std::memory_order_acquire) == kCmaAvailable;
  }

  Status readPeer(uint64_t peerAddress, void* local, size_t bytes) override {
    return copyPeer(peerAddress, bytes, "process_vm_readv", [&](uint64_t done, size_t len, int* err) {
      return readProcessMemory(peerPid_, peerAddress + done, static_cast<uint8_t*>(local) + done, len, err);
    });
  }

  Status writePeer(uint64_t peerAddress, const void* local, size_t bytes) override {
    return copyPeer(peerAddress, bytes, "process_vm_writev", [&](uint64_t done, size_t len, int* err) {
      return writeProcessMemory(peerPid_, peerAddress + done, static_cast<const uint8_t*>(local) + done, len,
                                err);
    });
  }

  void* mapPeer(const PeerBuffer& buffer, uint64_t peerAddress, size_t bytes) override {
    if (!mapPeerMemory_ || !failure_.ok() || !peerMemoryAccess()) return nullptr;
    // An aborted peer's call has returned, and its buffers are its own
    // again: the copying path then reports the abort instead.
    if (peerAborted()) return nullptr;
    return mappings_.map(buffer, peerAddress, bytes);
  }

  Status checkMappedAccess() override {
    if (!failure_.ok()) return failure_;
    if (peerAbortedAfterCopy()) return fail(peerAbortedError());
    return {};
  }

  std::string describe() const override {
    const uint32_t cma = header_.side[side_].peerCanReadMemory.load(std::memory_order_acquire);
    if (cmaThreshold_ > 0 && cma == kCmaAvailable) {
      return fmt::format("shm, single copy (process_vm_readv) from {}",
                         formatBytes(static_cast<uint64_t>(cmaThreshold_)));
    }
    return fmt::format("shm, copy through {} slots", describeLanes(geometryOf(header_)));
  }

 private:
  // ---- FIFO access -------------------------------------------------------

  // One lane of both FIFOs as this side sees it: it produces into the send
  // FIFO and consumes from the receive FIFO.
  struct alignas(kCacheLine) LaneState {
    uint64_t slots = 0;
    uint64_t slotBytes = 0;
    uint64_t stride = 0;
    uint8_t* sendSlots = nullptr;
    const uint8_t* recvSlots = nullptr;
    std::atomic<uint64_t>* sendTail = nullptr;  // released by the peer
    std::atomic<uint64_t>* recvTail = nullptr;  // released by this side
    uint64_t sendHead = 0;
    uint64_t sendTailSeen = 0;
    uint64_t recvPosition = 0;  // slots consumed
    // sendHead and recvPosition modulo `slots`, kept as they advance: a
    // division on every poll was a measurable part of a small message.
    uint64_t sendIndex = 0;
    uint64_t recvIndex = 0;
    // Where a slot's sequence word and inline data lie, and what else shares
    // the word: the packed lane's slots differ from the others'.
    uint64_t sequenceOffset = kSlotSequenceOffset;
    uint64_t positionMask = ~uint64_t{0};
    uint64_t inlineOffset = kSlotInlineOffset;
    uint64_t inlineCapacity = kSlotInlineBytes;
    bool packed() const { return sequenceOffset == kPackedWordOffset; }
    uint8_t* sendSlot() const { return sendSlots + sendIndex * stride; }
    const uint8_t* recvSlot() const { return recvSlots + recvIndex * stride; }
    void advanceSend() {
      ++sendHead;
      if (++sendIndex == slots) sendIndex = 0;
    }
    void advanceReceive() {
      ++recvPosition;
      if (++recvIndex == slots) recvIndex = 0;
    }
  };

  // Both sides pick the same lane for a message, from its size alone.
  // Any slot holds an inline message in its header line.
  Lane laneFor(uint64_t bytes) const {
    if (bytes <= kPackedPayloadBytes && lanes_[kPackedLane].slots > 0) return kPackedLane;
    for (int l = kSmallLane; l < kBulkLane; ++l) {
      if (lanes_[l].slots > 0 && bytes <= std::max<uint64_t>(lanes_[l].slotBytes, kSlotInlineBytes)) {
        return static_cast<Lane>(l);
      }
    }
    return kBulkLane;
  }

  // Makes present what a message touches in the slots of its lane (the
  // header line, and the payload where it is copied through them) before
  // either side stores or polls there (Segment::reserve).
  Status reserveFor(const Transfer& t) {
    const Lane lane = laneFor(t.bytes);
    const int fifo = t.isSend ? side_ : 1 - side_;
    const LaneState& state = lanes_[lane];
    const bool copied = t.isSend ? chooseMode(t.bytes) == MessageMode::Copy : expectCopiedPayload(t.bytes);
    const uint64_t prefix =
        std::min(kSlotHeaderBytes + (copied ? std::min<uint64_t>(t.bytes, state.slotBytes) : 0), state.stride);
    uint64_t& reserved = reservedPrefix_[fifo][lane];
    if (prefix <= reserved) return {};
    if (Status s = segment_->reserve(fifo, lane, prefix); !s.ok()) {
      return Status(s.code(), fmt::format("rank {}: {}", rank_, s.message()));
    }
    reserved = prefix;
    return {};
  }

  // Whether a message travels whole in one slot of a lane short of the
  // bulk lane, inline or copied, so that sendWhole and receiveWhole take it.
  bool fitsOneSlot(uint64_t bytes) const {
    return bytes <= kSlotInlineBytes || (laneFor(bytes) != kBulkLane && expectCopiedPayload(bytes));
  }

  void copyIntoSlot(const LaneState& lane, uint8_t* dst, const uint8_t* src, uint64_t len) {
    const SlotStoreChoice::Plan plan = storeChoice_.next(len);
    if (plan.stream) {
      nonTemporalCopy(dst, src, len);
      return;
    }
    if (!plan.timed) {
      std::memcpy(dst, src, len);
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(dst, src, len);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    // The first pass over the slots faults their pages in.
    if (lane.sendHead < lane.slots) return;
    const bool wasStreaming = storeChoice_.streaming();
    storeChoice_.record(len, ns.count());
    if (storeChoice_.streaming() != wasStreaming) {
      log::info(log::Shm, "rank {} -> rank {}: messages from {} now stored {} the cache ({:.1f} GB/s through it)",
                rank_, peer_, formatBytes(SlotStoreChoice::kFromBytes),
                storeChoice_.streaming() ? "past" : "through",
                static_cast<double>(len) / static_cast<double>(std::max<int64_t>(ns.count(), 1)));
    }
  }

  uint8_t* reserveSendSlot(LaneState& lane) {
    if (lane.sendHead - lane.sendTailSeen >= lane.slots) {
      lane.sendTailSeen = lane.sendTail->load(std::memory_order_acquire);
      if (lane.sendHead - lane.sendTailSeen >= lane.slots) return nullptr;
    }
    return lane.sendSlot();
  }
  static std::atomic_ref<uint64_t> sequenceOf(const LaneState& lane, const uint8_t* slot) {
    return std::atomic_ref<uint64_t>(
        *reinterpret_cast<uint64_t*>(const_cast<uint8_t*>(slot) + lane.sequenceOffset));
  }

  // `extra` shares the sequence word: a packed message's size.
  static void publishSendSlot(LaneState& lane, uint8_t* slot, uint64_t extra = 0) {
    lane.advanceSend();
    sequenceOf(lane, slot).store(lane.sendHead | extra, std::memory_order_release);
  }

  static const uint8_t* peekReceiveSlot(const LaneState& lane) {
    const uint8_t* slot = lane.recvSlot();
    const uint64_t word = sequenceOf(lane, slot).load(std::memory_order_acquire);
    return (word & lane.positionMask) == lane.recvPosition + 1 ? slot : nullptr;
  }

  // The header of the message in a slot peekReceiveSlot returned; a packed
  // slot's is rebuilt from its fields.
  static SlotHeader headerOf(const LaneState& lane, const uint8_t* slot) {
    SlotHeader h{};
    if (!lane.packed()) {
      std::memcpy(&h, slot, sizeof h);
      return h;
    }
    PackedSlot p;
    std::memcpy(&p, slot, kPackedDataOffset);
    h.tag = p.tag;
    h.ordinal = p.ordinal;
    h.mode = static_cast<uint32_t>(MessageMode::Inline);
    h.bytes = sequenceOf(lane, slot).load(std::memory_order_relaxed) >> kPackedPositionBits;
    return h;
  }
  bool expectCopiedPayload(uint64_t bytes) const {
    return bytes > kSlotInlineBytes && (cmaThreshold_ <= 0 || bytes < static_cast<uint64_t>(cmaThreshold_));
  }
  // Keeps the first lines of the next slot's payload requested while its
  // header is polled: they then arrive with the header's line instead of one
  // cross-core round trip after it (128 B to 16 KiB messages, about 0.1 us;
  // docs/performance-history.md). The hardware prefetcher follows on from there.
  static void prefetchPayload(const LaneState& lane, uint64_t bytes) {
    constexpr uint64_t kPrefetchBytes = 4096;
    const uint8_t* payload = lane.recvSlot() + kSlotHeaderBytes;
    const uint64_t n = std::min({bytes, lane.slotBytes, kPrefetchBytes});
    for (uint64_t at = 0; at < n; at += kCacheLine) __builtin_prefetch(payload + at);
  }
  static void releaseReceiveSlot(LaneState& lane) {
    lane.advanceReceive();
    lane.recvTail->store(lane.recvPosition, std::memory_order_release);
  }

  // ---- sends -------------------------------------------------------------

  MessageMode chooseMode(size_t bytes) {
    if (bytes <= kSlotInlineBytes) return MessageMode::Inline;
    if (cmaThreshold_ <= 0 || bytes < static_cast<uint64_t>(cmaThreshold_))
      return MessageMode::Copy;
    // Written by the peer during setup; read on the first large send.
    if (peerCanReadMemory_ == kCmaUnknown) {
      peerCanReadMemory_ = header_.side[side_].peerCanReadMemory.load(std::memory_order_acquire);
    }
    return peerCanReadMemory_ == kCmaAvailable ? MessageMode::SingleCopy : MessageMode::Copy;
  }

  Status progressSends(bool& moved) {
    uint64_t budget = kMaxBytesPerProgress;
    while (!sends_.empty() && budget > 0) {
      Transfer& t = *sends_.front();
      if (!sendStarted_) {
        sendMode_ = chooseMode(t.bytes);
        sendLane_ = &lanes_[laneFor(t.bytes)];
        sendFragments_ = 0;
        sendStarted_ = true;
      }
      LaneState& lane = *sendLane_;
      if (sendMode_ == MessageMode::Inline) {
        if (!sendWhole(t)) return {};
        sends_.pop_front();
        sendStarted_ = false;
        moved = true;
        continue;
      }
      if (sendMode_ == MessageMode::SingleCopy) {
        uint8_t* slot = reserveSendSlot(lane);
        if (slot == nullptr) return {};
        const SlotHeader h{t.tag,     static_cast<uint32_t>(MessageMode::SingleCopy),
                           t.bytes,   0,
                           sendOrdinal_, ++cmaSent_,
                           myPid_,    reinterpret_cast<uintptr_t>(t.buffer)};
        std::memcpy(slot, &h, sizeof h);
        publishSendSlot(lane, slot);
        ++sendOrdinal_;
        pendingSingleCopy_.emplace_back(cmaSent_, &t);
        sends_.pop_front();
        sendStarted_ = false;
        moved = true;
        continue;
      }
      // Copied messages exceed kSlotInlineBytes, and laneFor gave them a lane whose slots hold more.
      const uint64_t fragments = (t.bytes + lane.slotBytes - 1) / lane.slotBytes;
      while (sendFragments_ < fragments && budget > 0) {
        uint8_t* slot = reserveSendSlot(lane);
        if (slot == nullptr) return {};
        const uint64_t len = std::min<uint64_t>(lane.slotBytes, t.bytes - t.progressed);
        const SlotHeader h{t.tag,
                           static_cast<uint32_t>(MessageMode::Copy),
                           t.bytes,
                           static_cast<uint32_t>(sendFragments_),
                           sendOrdinal_,
                           0,
                           0,
                           0};
        // The header's line is stored last, together with its sequence word:
        // stored first, the polling receiver would take the line back while
        // the payload is copied, and publishing would wait for it again.
        if (len > 0)
          copyIntoSlot(lane, slot + kSlotHeaderBytes, static_cast<const uint8_t*>(t.buffer) + t.progressed, len);
        std::memcpy(slot, &h, sizeof h);
        publishSendSlot(lane, slot);
        t.progressed += len;
        ++sendFragments_;
        budget -= std::min(budget, std::max<uint64_t>(len, 1));
        moved = true;
      }
      if (sendFragments_ < fragments) return {};
      ++sendOrdinal_;
      sends_.pop_front();
      sendStarted_ = false;
      t.complete(Transfer::State::Done);
    }
    return {};
  }

  // A message that fits in one slot (fitsOneSlot), inline in its header
  // line or copied after it, sent whole when its lane has a free slot.
  bool sendWhole(Transfer& t) {
    LaneState& lane = lanes_[laneFor(t.bytes)];
    uint8_t* slot = reserveSendSlot(lane);
    if (slot == nullptr) return false;
    if (lane.packed()) {
      const uint32_t fields[2] = {t.tag, sendOrdinal_};
      std::memcpy(slot, fields, sizeof fields);
      copyInline(slot + lane.inlineOffset, t.buffer, t.bytes);
    } else if (t.bytes <= kSlotInlineBytes) {
      const SlotHeader h{t.tag, static_cast<uint32_t>(MessageMode::Inline), t.bytes, 0, sendOrdinal_, 0, 0, 0};
      std::memcpy(slot, &h, kSlotInlineOffset);
      copyInline(slot + lane.inlineOffset, t.buffer, t.bytes);
    } else {
      const SlotHeader h{t.tag, static_cast<uint32_t>(MessageMode::Copy), t.bytes, 0, sendOrdinal_, 0, 0, 0};
      copyIntoSlot(lane, slot + kSlotHeaderBytes, static_cast<const uint8_t*>(t.buffer), t.bytes);
      std::memcpy(slot, &h, sizeof h);
    }
    publishSendSlot(lane, slot, lane.packed() ? t.bytes << kPackedPositionBits : 0);
    ++sendOrdinal_;
    t.progressed = t.bytes;
    t.complete(Transfer::State::Done);
    return true;
  }

  void completeSingleCopySends(bool& moved) {
    if (pendingSingleCopy_.empty()) return;
    const uint64_t completed = sendFifo_.cmaCompleted.load(std::memory_order_acquire);
    while (!pendingSingleCopy_.empty() && pendingSingleCopy_.front().first <= completed) {
      Transfer* t = pendingSingleCopy_.front().second;
      pendingSingleCopy_.pop_front();
      t->complete(Transfer::State::Done);
      moved = true;
    }
  }

  // ---- receives ----------------------------------------------------------

  Status progressReceives(bool& moved) {
    uint64_t budget = kMaxBytesPerProgress;
    while (!recvs_.empty() && budget > 0) {
      Transfer& t = *recvs_.front();
      if (!recvStarted_) {
        LaneState& lane = lanes_[laneFor(t.bytes)];
        if (expectCopiedPayload(t.bytes)) prefetchPayload(lane, t.bytes);
        const uint8_t* slot = peekReceiveSlot(lane);
        if (slot == nullptr) {
          // Not on every poll: it would read two more lines per poll, which the sender then has to take back.
          return ++idlePolls_ % kIdlePollsPerLaneCheck == 0 ? sentInAnotherLane(lane, t) : Status{};
        }
        const SlotHeader h = headerOf(lane, slot);
        if (h.ordinal != recvOrdinal_) {
          // Messages of each lane arrive in order: the one expected went
          // through another lane, with another size.
          const Status other = sentInAnotherLane(lane, t);
          return other.ok() ? corrupted(h) : other;
        }
        if (h.fragment != 0 || (h.mode != static_cast<uint32_t>(MessageMode::Copy) &&
                                h.mode != static_cast<uint32_t>(MessageMode::SingleCopy) &&
                                h.mode != static_cast<uint32_t>(MessageMode::Inline)) ||
            (h.mode == static_cast<uint32_t>(MessageMode::Inline) && h.bytes > lane.inlineCapacity)) {
          return corrupted(h);
        }
        if (h.tag != t.tag || h.bytes != t.bytes) return mismatch(h, t);
        if (isWhole(lane, h)) {
          takeWhole(lane, slot, h, t);
          budget -= std::min(budget, std::max<uint64_t>(h.bytes, 1));
          recvs_.pop_front();
          moved = true;
          continue;
        }
        recvStarted_ = true;
        recvLane_ = &lane;
        recvMode_ = static_cast<MessageMode>(h.mode);
        recvFragments_ = 0;
        if (recvMode_ == MessageMode::SingleCopy) {
          recvSource_ = h;
          releaseReceiveSlot(lane);  // the descriptor is ours now; free the slot early
          moved = true;
        }
      }
      const bool finished = recvMode_ == MessageMode::Copy ? receiveFragments(t, budget, moved)
                                                           : readSingleCopy(t, budget, moved);
      if (!recvStatus_.ok()) return std::exchange(recvStatus_, {});
      if (!finished) return {};
      if (recvMode_ == MessageMode::SingleCopy) {
        recvFifo_.cmaCompleted.store(recvSource_.cmaSequence, std::memory_order_release);
      }
      recvs_.pop_front();
      recvStarted_ = false;
      ++recvOrdinal_;
      t.complete(Transfer::State::Done);
      moved = true;
    }
    return {};
  }

  // A message whole in its slot: inline, or copied in one fragment.
  static bool isWhole(const LaneState& lane, const SlotHeader& h) {
    return h.mode == static_cast<uint32_t>(MessageMode::Inline) ||
           (h.mode == static_cast<uint32_t>(MessageMode::Copy) && h.bytes <= lane.slotBytes);
  }
  void takeWhole(LaneState& lane, const uint8_t* slot, const SlotHeader& h, Transfer& t) {
    if (h.mode == static_cast<uint32_t>(MessageMode::Inline)) {
      copyInline(t.buffer, slot + lane.inlineOffset, h.bytes);
    } else {
      std::memcpy(t.buffer, slot + kSlotHeaderBytes, h.bytes);
    }
    releaseReceiveSlot(lane);
    ++recvOrdinal_;
    t.progressed = t.bytes;
    t.complete(Transfer::State::Done);
  }

  // The next message when it is in its lane, whole in its slot, and the
  // one `t` expects.
  bool receiveWhole(Transfer& t) {
    LaneState& lane = lanes_[laneFor(t.bytes)];
    const uint8_t* slot = peekReceiveSlot(lane);
    if (slot == nullptr) return false;
    const SlotHeader h = headerOf(lane, slot);
    if (h.ordinal != recvOrdinal_ || h.fragment != 0 || !isWhole(lane, h) || h.tag != t.tag ||
        h.bytes != t.bytes) {
      return false;
    }
    takeWhole(lane, slot, h, t);
    return true;
  }

  Status mismatch(const SlotHeader& h, const Transfer& t) const {
    return messageMismatch(rank_, peer_, h.tag, h.bytes, t.tag, t.bytes);
  }

  // The message expected next, found at the head of a lane `t` does not
  // use: the two sides disagree on its size. Success when it is not there.
  Status sentInAnotherLane(const LaneState& expected, const Transfer& t) const {
    for (const LaneState& other : lanes_) {
      if (&other == &expected || other.slots == 0) continue;
      // Nothing was ever sent there (and its pages may not exist).
      if (!segment_->headersReserved(1 - side_, static_cast<Lane>(&other - lanes_))) continue;
      const uint8_t* slot = peekReceiveSlot(other);
      if (slot == nullptr) continue;
      const SlotHeader h = headerOf(other, slot);
      if (h.ordinal == recvOrdinal_ && h.fragment == 0) return mismatch(h, t);
    }
    return {};
  }

  // Copies fragments of the current message out of the FIFO. True when the
  // whole message has arrived.
  bool receiveFragments(Transfer& t, uint64_t& budget, bool& moved) {
    while (recvFragments_ == 0 || t.progressed < t.bytes) {
      if (budget == 0) return false;
      LaneState& lane = *recvLane_;
      const uint8_t* slot = peekReceiveSlot(lane);
      if (slot == nullptr) return false;
      SlotHeader h;
      std::memcpy(&h, slot, sizeof h);
      if (h.fragment != static_cast<uint32_t>(recvFragments_) || h.ordinal != recvOrdinal_ || h.tag != t.tag ||
          h.bytes != t.bytes || h.mode != static_cast<uint32_t>(MessageMode::Copy)) {
        recvStatus_ = corrupted(h);
        return false;
      }
      const uint64_t len = std::min<uint64_t>(lane.slotBytes, t.bytes - t.progressed);
      if (len > 0)
        std::memcpy(static_cast<uint8_t*>(t.buffer) + t.progressed, slot + kSlotHeaderBytes, len);
      releaseReceiveSlot(lane);
      t.progressed += len;
      ++recvFragments_;
      budget -= std::min(budget, std::max<uint64_t>(len, 1));
      moved = true;
    }
    return true;
  }

  // Reads the current message from the sender's buffer, at most `budget` bytes
  // per call. True when it has all been read.
  bool readSingleCopy(Transfer& t, uint64_t& budget, bool& moved) {
    while (t.progressed < t.bytes && budget > 0) {
      // An aborted sender has returned, and its buffer is the caller's again.
      if (peerAborted()) {
        recvStatus_ = peerAbortedError();
        return false;
      }
      const uint64_t len = std::min<uint64_t>(budget, t.bytes - t.progressed);
      int err = 0;
      const ssize_t n =
          readProcessMemory(recvSource_.cmaPid, recvSource_.cmaAddress + t.progressed,
                            static_cast<uint8_t*>(t.buffer) + t.progressed, len, &err);
      if (n < 0 && (err == EINTR || err == EAGAIN)) return false;
      if (n < 0 && err == ESRCH) {
        recvStatus_ = remoteError(
            fmt::format("rank {}: rank {} (pid {}, shm) exited", rank_, peer_, recvSource_.cmaPid));
        return false;
      }
      if (n <= 0) {
        recvStatus_ = systemError(fmt::format(
            "rank {}: process_vm_readv of {} bytes from rank {} (pid {}) failed: {}", rank_, len,
            peer_, recvSource_.cmaPid, n < 0 ? std::strerror(err) : "no bytes read"));
        return false;
      }
      t.progressed += static_cast<uint64_t>(n);
      budget -= std::min<uint64_t>(budget, static_cast<uint64_t>(n));
      moved = true;
    }
    if (t.progressed < t.bytes) return false;
    // The sender may have aborted while the last piece was read: the bytes
    // could then be its caller's new data.
    if (peerAbortedAfterCopy()) {
      recvStatus_ = peerAbortedError();
      return false;
    }
    return true;
  }

  bool peerAborted() const { return header_.side[1 - side_].aborted.load(std::memory_order_acquire) != 0; }
  // After a copy from or to the peer's memory: the peer sets its flag before
  // its call returns, so a copy that saw the buffer reused (or wrote it after
  // it was given back) finds the flag set here.
  bool peerAbortedAfterCopy() const {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return peerAborted();
  }
  Status peerAbortedError() const {
    const AbortReason& reason = header_.abortReason[1 - side_];
    const size_t bytes = std::min<size_t>(reason.bytes.load(std::memory_order_acquire), sizeof reason.text);
    return remoteError(fmt::format("rank {}: rank {} (pid {}, shm) aborted{}", rank_, peer_, peerPid_,
                                   bytes == 0 ? "" : ", failing: " + std::string(reason.text, bytes)));
  }

  // Copies in pieces of at most kMaxBytesPerProgress until done (the kernel
  // may also move fewer bytes than asked), checking between pieces that the
  // peer has not aborted: once it has, its buffers may already be reused.
  template <typename CopyFn>
  Status copyPeer(uint64_t peerAddress, size_t bytes, const char* call, CopyFn copy) {
    if (!failure_.ok()) return failure_;
    if (!peerMemoryAccess()) return Connection::readPeer(peerAddress, nullptr, bytes);
    uint64_t done = 0;
    while (done < bytes) {
      // A peer that aborted may free its buffers at once: stop touching them.
      if (peerAborted()) return fail(peerAbortedError());
      int err = 0;
      const ssize_t n = copy(done, static_cast<size_t>(std::min<uint64_t>(bytes - done, kMaxBytesPerProgress)), &err);
      if (n < 0 && err == EINTR) continue;
      if (n < 0 && err == ESRCH) {
        return fail(remoteError(fmt::format("rank {}: rank {} (pid {}, shm) exited", rank_, peer_, peerPid_)));
      }
      if (n <= 0) {
        return fail(systemError(fmt::format("rank {}: {} of {} bytes at {:#x} in rank {} (pid {}) failed: {}", rank_,
                                            call, bytes - done, peerAddress + done, peer_, peerPid_,
                                            n < 0 ? std::strerror(err) : "no bytes moved")));
      }
      done += static_cast<uint64_t>(n);
    }
    if (peerAbortedAfterCopy()) return fail(peerAbortedError());
    return {};
  }

  Status corrupted(const SlotHeader& h) const {
    return internalError(fmt::format(
        "rank {}: corrupted shm stream from rank {} (message {} fragment {} mode {} tag {} bytes {}, "
        "expected message {} fragment {})",
        rank_, peer_, h.ordinal, h.fragment, h.mode, h.tag, h.bytes, recvOrdinal_,
        recvStarted_ ? recvFragments_ : 0));
  }

  // ---- failure -----------------------------------------------------------

  bool hasPendingWork() const {
    return !sends_.empty() || !recvs_.empty() || !pendingSingleCopy_.empty();
  }

  // Rate-limited: is the peer still there and not aborted?
  Status checkPeer() {
    if (++pollsSinceCheck_ % kPollsPerClockRead != 0) return {};
    const auto now = CoarseClock::now();
    if (now < nextPeerCheck_) return {};
    nextPeerCheck_ = now + kPeerCheckInterval;
    if (peerAborted()) return peerAbortedError();
    if (watchPeerPid_ && processExited(peerPid_)) {
      return remoteError(
          fmt::format("rank {}: rank {} (pid {}, shm) exited", rank_, peer_, peerPid_));
    }
    return {};
  }

  Status fail(Status s) {
    failure_ = s;
    std::deque<Transfer*> sends = std::exchange(sends_, {});
    std::deque<Transfer*> recvs = std::exchange(recvs_, {});
    auto singleCopy = std::exchange(pendingSingleCopy_, {});
    for (Transfer* t : sends) t->complete(Transfer::State::Failed);
    for (Transfer* t : recvs) t->complete(Transfer::State::Failed);
    for (auto& [seq, t] : singleCopy) t->complete(Transfer::State::Failed);
    return s;
  }

  const int rank_;
  const int peer_;
  const int side_;
  const std::shared_ptr<Segment> segment_;
  SegmentHeader& header_;
  FifoControl& sendFifo_;
  FifoControl& recvFifo_;
  const int64_t cmaThreshold_;
  const bool watchPeerPid_;
  const bool mapPeerMemory_;
  SlotStoreChoice storeChoice_;  // used by the sender only
  const int64_t myPid_;
  const int64_t peerPid_;
  PeerMappings mappings_;

  Status failure_;
  CoarseClock::time_point nextPeerCheck_{};
  // The clock itself is read only every few polls.
  static constexpr uint32_t kPollsPerClockRead = 64;
  uint32_t pollsSinceCheck_ = 0;
  // Idle polls between looks for the expected message in the other lanes.
  static constexpr uint32_t kIdlePollsPerLaneCheck = 64;
  uint32_t idlePolls_ = 0;

  LaneState lanes_[kLanes];
  // What this side has reserved, per FIFO and lane (Segment::reserve).
  uint64_t reservedPrefix_[2][kLanes] = {};

  // Producer side of FIFO side_.
  uint32_t sendOrdinal_ = 0;  // of the message being pushed, modulo 2^32
  LaneState* sendLane_ = nullptr;
  uint64_t cmaSent_ = 0;
  uint32_t peerCanReadMemory_ = kCmaUnknown;
  std::deque<Transfer*> sends_;  // front is the one being pushed
  bool sendStarted_ = false;
  MessageMode sendMode_ = MessageMode::Copy;
  uint64_t sendFragments_ = 0;
  std::deque<std::pair<uint64_t, Transfer*>> pendingSingleCopy_;  // (sequence, transfer)

  // Consumer side of FIFO 1 - side_.
  uint32_t recvOrdinal_ = 0;  // of the message expected next, modulo 2^32
  std::deque<Transfer*> recvs_;  // front is the one being filled
  bool recvStarted_ = false;
  LaneState* recvLane_ = nullptr;
  MessageMode recvMode_ = MessageMode::Copy;
  uint64_t recvFragments_ = 0;
  SlotHeader recvSource_{};
  Status recvStatus_;
};

}  // namespace

std::unique_ptr<Connection> makeShmConnection(ConnectionConfig config) {
  return std::make_unique<ShmConnection>(std::move(config));
}

}  // namespace hcl::shm
