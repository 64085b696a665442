// The shared segment of one pair of ranks (low < high): a header, then two
// single-producer/single-consumer FIFOs per lane. FIFO d carries messages
// from side d to side 1-d (side 0 is the low rank, which creates it).
//
// Only the header's pages are taken at creation. A FIFO's slots are made
// present (Segment::reserve) by the first message either side posts to them,
// so a pair costs /dev/shm only for the lanes its messages use: a full mesh
// of 32 ranks held 3 GiB of segments when every pair reserved all of them.
//
// A message goes through the first lane (packed, small, medium) whose slot
// it fits, else through the bulk lane. Both sides pick the lane by the message's
// size, so each lane keeps the order of the messages it carries. The many
// slots of the small lanes let a sender run far ahead of its receiver: where
// they share a core, each runs many calls per time slice, and on cores of
// their own a stream of 64-256 B messages runs up to twice as fast with
// 2048 small slots as with 256. Deepening the bulk lane instead would cost
// megabytes per pair (docs/performance-history.md).
// The packed lane holds two messages of up to 16 bytes per cache line, so a
// receiver behind its sender takes two of them with one miss.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "transports/abort_reason.h"

namespace hcl::shm {

static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<int64_t>::is_always_lock_free);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

constexpr uint64_t kSegmentMagic = 0x36304d48534c4348ull;  // "HCLSHM06"
constexpr size_t kCacheLine = 64;

// In order of slot size: a message takes the first lane it fits, else the bulk lane.
enum Lane : int { kPackedLane = 0, kSmallLane = 1, kMediumLane = 2, kBulkLane = 3 };
constexpr int kLanes = 4;

// Whether the other side could read this side's memory with process_vm_readv.
enum CmaCapability : uint32_t { kCmaUnknown = 0, kCmaAvailable = 1, kCmaUnavailable = 2 };

struct alignas(kCacheLine) SideInfo {
  std::atomic<int64_t> pid;            // non-zero once this side has attached (release)
  std::atomic<uint64_t> probeAddress;  // a known 8-byte value in this process
  std::atomic<uint64_t> probeValue;
  std::atomic<uint32_t> aborted;
  std::atomic<uint32_t> peerCanReadMemory;  // CmaCapability, written by the other side
};

// Slots are published through their own sequence word (kSlotSequenceOffset),
// not a shared head counter, so the consumer finds a message with one miss.
struct FifoControl {
  struct alignas(kCacheLine) LaneTail {
    std::atomic<uint64_t> tail;  // slots of the lane released by the consumer
  };
  LaneTail lane[kLanes];
  // Sequence number of the last single-copy message the consumer finished reading.
  alignas(kCacheLine) std::atomic<uint64_t> cmaCompleted;
};

struct LaneLayout {
  uint32_t slots;  // 0: the lane is not used
  uint32_t reserved;
  uint64_t slotBytes;   // payload capacity of one slot
  uint64_t slotStride;  // SlotHeader + payload, cache-line aligned
  uint64_t offset;      // of FIFO 0's first slot; FIFO 1's follow them
};

// What a side that aborted for a failure says of it (abortBecause): the
// text, then its length (release), then the side's aborted flag.
struct AbortReason {
  std::atomic<uint32_t> bytes;
  char text[kMostAbortReasonBytes];
};

struct SegmentHeader {
  std::atomic<uint64_t> magic;  // stored last by the creator
  uint64_t totalBytes;
  int32_t ranks[2];
  LaneLayout lanes[kLanes];
  SideInfo side[2];
  FifoControl fifo[2];
  // Bytes at the start of every slot of FIFO f's lane l that are present,
  // raised by whichever side reserved them: a receiver looks at the head of
  // another lane only where some side did, so that looking never faults in
  // a page /dev/shm may have no room for.
  std::atomic<uint64_t> reservedPrefix[2][kLanes];
  AbortReason abortReason[2];
};

// Inline: a message of at most kSlotInlineBytes carried in the header's own
// cache line, so the consumer finds header and data with one miss.
enum class MessageMode : uint32_t { Copy = 1, SingleCopy = 2, Inline = 3 };

// At the start of every slot. Every fragment of a message repeats the
// message's tag, size, mode and ordinal so the stream can be checked.
struct SlotHeader {
  uint32_t tag;
  uint32_t mode;  // MessageMode
  uint64_t bytes;
  uint32_t fragment;  // index of this fragment within the message, modulo 2^32
  // The message's place among all messages of its direction, both lanes
  // counted (modulo 2^32): a receiver waiting on one lane finds its message
  // in another when the two sides disagree on its size.
  uint32_t ordinal;
  uint64_t cmaSequence;  // single copy: value cmaCompleted reaches when read
  int64_t cmaPid;
  uint64_t cmaAddress;
};
// In the header's cache line, after SlotHeader: the slot's FIFO position + 1,
// stored last (release) by the producer once header and payload are in place.
constexpr size_t kSlotSequenceOffset = 56;
static_assert(sizeof(SlotHeader) <= kSlotSequenceOffset);
constexpr size_t kSlotHeaderBytes = kCacheLine;
// An Inline message's data, in place of the single-copy fields.
constexpr size_t kSlotInlineOffset = offsetof(SlotHeader, cmaSequence);
constexpr size_t kSlotInlineBytes = kSlotSequenceOffset - kSlotInlineOffset;
static_assert(kSlotInlineBytes == 32);

// A slot of the packed lane: a whole message of up to kPackedPayloadBytes.
// Its word, stored last (release) by the producer, holds the slot's FIFO
// position + 1 in the low kPackedPositionBits and the message's size above.
struct PackedSlot {
  uint32_t tag;
  uint32_t ordinal;
  uint8_t data[16];
  uint64_t word;
};
constexpr size_t kPackedSlotBytes = sizeof(PackedSlot);
constexpr size_t kPackedPayloadBytes = sizeof(PackedSlot::data);
constexpr size_t kPackedWordOffset = offsetof(PackedSlot, word);
constexpr size_t kPackedDataOffset = offsetof(PackedSlot, data);
constexpr int kPackedPositionBits = 56;
constexpr uint64_t kPackedPositionMask = (uint64_t{1} << kPackedPositionBits) - 1;
static_assert(kPackedSlotBytes * 2 == kCacheLine);

struct LaneGeometry {
  uint32_t slots = 0;
  uint64_t slotBytes = 0;
};
struct Geometry {
  LaneGeometry lane[kLanes];
};

// HCL_SHM_{SMALL_,MEDIUM_,}SLOTS x HCL_SHM_{SMALL_,MEDIUM_,}SLOT_BYTES and
// HCL_SHM_PACKED_SLOTS, validated.
Status geometryFromParams(Geometry& out);

// The lane sizes a segment was created with.
Geometry geometryOf(const SegmentHeader& header);

// "64 KiB", "4 MiB", "1000 B"
std::string formatBytes(uint64_t bytes);

// "8x256 KiB", or with the other lanes "512x16 B, 2048x256 B, 128x4 KiB, 8x256 KiB".
std::string describeLanes(const Geometry& geometry);

// "/hcl-<hex of secret[0..8)>-<commTag hex>-<low>-<high>"
std::string segmentName(const uint8_t (&secret)[16], uint64_t commTag, int low, int high);

// One mapping of a segment; unmapped on destruction. Does not unlink.
class Segment {
 public:
  // fd: kept open (and closed here) where reserving needs it; -1 if not.
  Segment(std::string name, void* base, size_t bytes, int fd = -1);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // shm_open(O_CREAT|O_EXCL), size, map, initialise the header. Unlinks on failure.
  static Status create(const std::string& name, const Geometry& geometry, int low, int high,
                       std::shared_ptr<Segment>& out);
  // Opens an existing segment; *missing is set (and success returned) when
  // it does not exist yet.
  static Status open(const std::string& name, int low, int high, std::shared_ptr<Segment>& out,
                     bool* missing);

  const std::string& name() const { return name_; }
  SegmentHeader& header() const;
  // Slot `index` (< the lane's slots) of one FIFO of one lane.
  uint8_t* slot(int fifo, Lane lane, uint64_t index) const;
  // Makes the first `prefixBytes` of every slot of one FIFO of one lane
  // present in /dev/shm (the whole FIFO where the gaps between prefixes are
  // under a page), so a full /dev/shm is this error, not a SIGBUS on a store:
  // madvise(MADV_POPULATE_WRITE), or fallocate where the kernel lacks it.
  Status reserve(int fifo, Lane lane, uint64_t prefixBytes);
  // Whether some side reserved at least the slots' header lines there.
  bool headersReserved(int fifo, Lane lane) const;

 private:
  // Makes [begin, begin + bytes) of the mapping present; 0 or an errno.
  int populate(uintptr_t begin, uint64_t bytes);

  std::string name_;
  void* base_;
  size_t bytes_;
  int fd_;
};

}  // namespace hcl::shm
