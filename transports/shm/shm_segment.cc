#include "transports/shm/shm_segment.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "core/params.h"

namespace hcl::shm {
namespace {

constexpr int64_t kMaxSlots = 4096;
constexpr int64_t kMinSlotBytes = 256;
constexpr int64_t kMaxSlotBytes = int64_t{1} << 30;

uint64_t roundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

uint64_t slotsOffset() { return roundUp(sizeof(SegmentHeader), 4096); }

// One FIFO's slots of a lane, rounded up to whole cache lines so that the
// two FIFOs never share one.
uint64_t fifoBytes(const LaneLayout& l) { return roundUp(uint64_t{l.slots} * l.slotStride, kCacheLine); }

// Where each lane's slots lie, packed lane first; returns the segment's size.
uint64_t layOut(const Geometry& g, LaneLayout (&lanes)[kLanes]) {
  uint64_t at = slotsOffset();
  for (int lane = 0; lane < kLanes; ++lane) {
    LaneLayout& l = lanes[lane];
    l.slots = g.lane[lane].slots;
    l.reserved = 0;
    l.slotBytes = g.lane[lane].slotBytes;
    l.slotStride = lane == kPackedLane ? kPackedSlotBytes : kSlotHeaderBytes + roundUp(l.slotBytes, kCacheLine);
    l.offset = at;
    at += 2 * fifoBytes(l);
  }
  return at;
}

// Whether a header's lane layout and size are the ones its lane sizes give,
// within the limits its creator had to keep.
bool describesItsLayout(const SegmentHeader& h, const Geometry& g, uint64_t fileBytes) {
  if (g.lane[kBulkLane].slots == 0 || g.lane[kBulkLane].slotBytes == 0) return false;
  if (g.lane[kPackedLane].slotBytes != kPackedPayloadBytes) return false;
  for (const LaneGeometry& l : g.lane) {
    if (l.slots > kMaxSlots || l.slotBytes > static_cast<uint64_t>(kMaxSlotBytes)) return false;
  }
  LaneLayout expected[kLanes];
  if (layOut(g, expected) != fileBytes || h.totalBytes != fileBytes) return false;
  for (int lane = 0; lane < kLanes; ++lane) {
    if (h.lanes[lane].slotStride != expected[lane].slotStride || h.lanes[lane].offset != expected[lane].offset) {
      return false;
    }
  }
  return true;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

std::string errnoText(int err) { return fmt::format("{} ({})", std::strerror(err), err); }

constexpr const char* kShrinkAdvice =
    " (enlarge /dev/shm, lower HCL_SHM_SLOTS, HCL_SHM_MEDIUM_SLOTS or HCL_SHM_SMALL_SLOTS or their _SLOT_BYTES, or "
    "set HCL_SHM_DISABLE=1)";

constexpr const char* kLaneNames[kLanes] = {"packed", "small", "medium", "bulk"};

uint64_t pageBytes() {
  static const uint64_t bytes = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return bytes;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

// Whether this kernel populates shared mappings for writing on request
// (Linux 5.14 and later, where no sandbox refuses it). Without it,
// segments keep their descriptor to reserve with fallocate instead.
bool populateWriteWorks() {
  static const bool works = [] {
    const size_t bytes = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    void* page = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return false;
    const bool ok = ::madvise(page, bytes, MADV_POPULATE_WRITE) == 0;
    ::munmap(page, bytes);
    return ok;
  }();
  return works;
}

// Capacity of the file system behind shm_open, 0 when it cannot be read.
uint64_t devShmBytes() {
  struct statvfs fs {};
  if (::statvfs("/dev/shm", &fs) != 0) return 0;
  return static_cast<uint64_t>(fs.f_blocks) * fs.f_frsize;
}

}  // namespace

Status geometryFromParams(Geometry& out) {
  struct LaneParams {
    const char* slots;
    const char* slotBytes;
    int64_t minSlots, minSlotBytes;
  };
  // The small lanes may be switched off (0 slots), and their slots may have no payload beyond the header
  // line, which holds messages of up to kSlotInlineBytes. The packed lane's slots have one size.
  constexpr LaneParams kParams[kLanes] = {
      {"HCL_SHM_PACKED_SLOTS", nullptr, 0, 0},
      {"HCL_SHM_SMALL_SLOTS", "HCL_SHM_SMALL_SLOT_BYTES", 0, 0},
      {"HCL_SHM_MEDIUM_SLOTS", "HCL_SHM_MEDIUM_SLOT_BYTES", 0, 0},
      {"HCL_SHM_SLOTS", "HCL_SHM_SLOT_BYTES", 1, kMinSlotBytes},
  };
  for (int lane = 0; lane < kLanes; ++lane) {
    const LaneParams& p = kParams[lane];
    const int64_t slots = paramInt(p.slots);
    if (slots < p.minSlots || slots > kMaxSlots) {
      return invalidArgument(
          fmt::format("{}={} is out of range [{}, {}]", p.slots, slots, p.minSlots, kMaxSlots));
    }
    const int64_t slotBytes = p.slotBytes ? paramInt(p.slotBytes) : int64_t{kPackedPayloadBytes};
    if (slotBytes < p.minSlotBytes || slotBytes > kMaxSlotBytes) {
      return invalidArgument(fmt::format("{}={} is out of range [{}, {}]", p.slotBytes, slotBytes,
                                         p.minSlotBytes, kMaxSlotBytes));
    }
    out.lane[lane].slots = static_cast<uint32_t>(slots);
    out.lane[lane].slotBytes = static_cast<uint64_t>(slotBytes);
  }
  return {};
}

std::string formatBytes(uint64_t bytes) {
  constexpr uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  if (bytes >= kGiB && bytes % kGiB == 0) return fmt::format("{} GiB", bytes / kGiB);
  if (bytes >= kMiB && bytes % kMiB == 0) return fmt::format("{} MiB", bytes / kMiB);
  if (bytes >= kKiB && bytes % kKiB == 0) return fmt::format("{} KiB", bytes / kKiB);
  return fmt::format("{} B", bytes);
}

Geometry geometryOf(const SegmentHeader& header) {
  Geometry g;
  for (int lane = 0; lane < kLanes; ++lane) g.lane[lane] = {header.lanes[lane].slots, header.lanes[lane].slotBytes};
  return g;
}

std::string describeLanes(const Geometry& geometry) {
  std::string text;
  for (const LaneGeometry& l : geometry.lane) {
    if (l.slots == 0) continue;
    text += fmt::format("{}{}x{}", text.empty() ? "" : ", ", l.slots, formatBytes(l.slotBytes));
  }
  return text;
}

std::string segmentName(const uint8_t (&secret)[16], uint64_t commTag, int low, int high) {
  std::string name = "/hcl-";
  for (int i = 0; i < 8; ++i) name += fmt::format("{:02x}", secret[i]);
  name += fmt::format("-{:x}-{}-{}", commTag, low, high);
  return name;
}

Segment::Segment(std::string name, void* base, size_t bytes, int fd)
    : name_(std::move(name)), base_(base), bytes_(bytes), fd_(fd) {}

Segment::~Segment() {
  ::munmap(base_, bytes_);
  if (fd_ >= 0) ::close(fd_);
}

SegmentHeader& Segment::header() const { return *std::launder(static_cast<SegmentHeader*>(base_)); }

uint8_t* Segment::slot(int fifo, Lane lane, uint64_t index) const {
  const LaneLayout& l = header().lanes[lane];
  return static_cast<uint8_t*>(base_) + l.offset + static_cast<uint64_t>(fifo) * fifoBytes(l) + index * l.slotStride;
}

Status Segment::reserve(int fifo, Lane lane, uint64_t prefixBytes) {
  SegmentHeader& h = header();
  const LaneLayout& l = h.lanes[lane];
  std::atomic<uint64_t>& shared = h.reservedPrefix[fifo][lane];
  prefixBytes = std::min(prefixBytes, l.slotStride);
  if (l.slots == 0 || prefixBytes <= shared.load(std::memory_order_acquire)) return {};
  // The pages under each slot's prefix; neighbours less than a page apart are one run.
  const uint64_t page = pageBytes();
  const auto pageOf = [&](const uint8_t* p) { return reinterpret_cast<uintptr_t>(p) / page * page; };
  std::vector<std::pair<uintptr_t, uintptr_t>> runs;
  for (uint64_t i = 0; i < l.slots; ++i) {
    const uint8_t* start = slot(fifo, lane, i);
    const uintptr_t begin = pageOf(start);
    // Not past the file's end: fallocate there would grow the file.
    const uintptr_t end = std::min(pageOf(start + prefixBytes - 1) + page, reinterpret_cast<uintptr_t>(base_) + bytes_);
    if (runs.empty() || begin > runs.back().second) {
      runs.emplace_back(begin, end);
    } else {
      runs.back().second = std::max(runs.back().second, end);
    }
  }
  uint64_t total = 0;
  for (const auto& [begin, end] : runs) total += end - begin;
  for (const auto& [begin, end] : runs) {
    if (const int err = populate(begin, end - begin); err != 0) {
      // Populating fails with EFAULT where the fault would have been a SIGBUS.
      const bool full = err == EFAULT || err == ENOSPC;
      return systemError(fmt::format(
          "{} the {} lane's slots from rank {} to rank {} in shm segment {} ({} bytes): {}{}",
          full ? "no room in /dev/shm for" : "could not reserve", kLaneNames[lane], h.ranks[fifo],
          h.ranks[1 - fifo], name_, total, full ? "the file system is full" : errnoText(err),
          full || err == ENOMEM ? kShrinkAdvice : ""));
    }
  }
  uint64_t seen = shared.load(std::memory_order_relaxed);
  while (seen < prefixBytes && !shared.compare_exchange_weak(seen, prefixBytes, std::memory_order_release)) {
  }
  return {};
}

int Segment::populate(uintptr_t begin, uint64_t bytes) {
  if (fd_ >= 0) {
    const auto offset = static_cast<off_t>(begin - reinterpret_cast<uintptr_t>(base_));
    return ::posix_fallocate(fd_, offset, static_cast<off_t>(bytes));
  }
  return ::madvise(reinterpret_cast<void*>(begin), bytes, MADV_POPULATE_WRITE) == 0 ? 0 : errno;
}

bool Segment::headersReserved(int fifo, Lane lane) const {
  // Any prefix a side reserves holds a slot's header line (all of a packed slot).
  return header().reservedPrefix[fifo][lane].load(std::memory_order_acquire) != 0;
}

Status Segment::create(const std::string& name, const Geometry& geometry, int low, int high,
                       std::shared_ptr<Segment>& out) {
  LaneLayout lanes[kLanes];
  const uint64_t total = layOut(geometry, lanes);

  Fd fd(::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600));
  if (fd.get() < 0) {
    const int err = errno;
    return systemError(fmt::format("rank {}: shm_open({}, O_CREAT|O_EXCL) for rank {} failed: {}{}",
                                   low, name, high, errnoText(err),
                                   err == EEXIST ? " (left over from an earlier run?)" : ""));
  }
  auto fail = [&](std::string what, int err) {
    ::shm_unlink(name.c_str());
    return systemError(fmt::format("rank {}: {} of shm segment {} ({} bytes) for rank {} failed: {}{}", low, what,
                                   name, total, high, errnoText(err),
                                   err == ENOSPC || err == ENOMEM ? kShrinkAdvice : ""));
  };
  // The slots are reserved as they come into use, so a pair that uses only
  // some lanes would fit; a segment larger than the whole file system is
  // refused all the same, as the settings that size it are surely wrong.
  if (const uint64_t capacity = devShmBytes(); capacity != 0 && total > capacity) {
    ::shm_unlink(name.c_str());
    return systemError(fmt::format("rank {}: shm segment {} for rank {} needs {} bytes, more than /dev/shm holds "
                                   "({} bytes){}",
                                   low, name, high, total, capacity, kShrinkAdvice));
  }
  // The header's pages first, so that a full /dev/shm is an error here
  // instead of a SIGBUS, and an opener that finds the file this large may
  // read the header.
  if (const int err = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(slotsOffset())); err != 0) {
    return fail("posix_fallocate", err);
  }
  if (::ftruncate(fd.get(), static_cast<off_t>(total)) != 0) return fail("ftruncate", errno);
  void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) return fail("mmap", errno);

  auto* h = std::construct_at(static_cast<SegmentHeader*>(base));
  for (int lane = 0; lane < kLanes; ++lane) h->lanes[lane] = lanes[lane];
  h->totalBytes = total;
  h->ranks[0] = low;
  h->ranks[1] = high;
  h->magic.store(kSegmentMagic, std::memory_order_release);
  out = std::make_shared<Segment>(name, base, total, populateWriteWorks() ? -1 : fd.release());
  return {};
}

Status Segment::open(const std::string& name, int low, int high, std::shared_ptr<Segment>& out,
                     bool* missing) {
  *missing = false;
  Fd fd(::shm_open(name.c_str(), O_RDWR, 0));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT) {
      *missing = true;
      return {};
    }
    return systemError(fmt::format("rank {}: shm_open({}) for rank {} failed: {}", high, name, low,
                                   errnoText(err)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return systemError(
        fmt::format("rank {}: fstat of shm segment {} failed: {}", high, name, errnoText(errno)));
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size < slotsOffset()) {
    // The creator has not sized it yet; treat as not there.
    *missing = true;
    return {};
  }
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) {
    return systemError(
        fmt::format("rank {}: mmap of shm segment {} failed: {}", high, name, errnoText(errno)));
  }
  auto segment = std::make_shared<Segment>(name, base, size, populateWriteWorks() ? -1 : fd.release());
  const SegmentHeader& h = segment->header();
  if (h.magic.load(std::memory_order_acquire) != kSegmentMagic) {
    *missing = true;  // not initialised yet
    return {};
  }
  // The layout the header's lane sizes give must be the one it describes.
  const Geometry g = geometryOf(h);
  if (h.ranks[0] != low || h.ranks[1] != high || !describesItsLayout(h, g, size)) {
    return internalError(fmt::format(
        "rank {}: shm segment {} has an unexpected layout (ranks {}/{}, slots {}, {} bytes in all, file has {})",
        high, name, h.ranks[0], h.ranks[1], describeLanes(g), h.totalBytes, size));
  }
  out = std::move(segment);
  return {};
}

}  // namespace hcl::shm
