#include "transports/shm/shm_segment.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <new>

#include "core/params.h"

namespace hcl::shm {
namespace {

constexpr int64_t kMaxSlots = 4096;
constexpr int64_t kMinSlotBytes = 256;
constexpr int64_t kMaxSlotBytes = int64_t{1} << 30;

uint64_t roundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

uint64_t slotsOffset() { return roundUp(sizeof(SegmentHeader), 4096); }

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string errnoText(int err) { return fmt::format("{} ({})", std::strerror(err), err); }

}  // namespace

Status geometryFromParams(Geometry& out) {
  const int64_t slots = paramInt("HCL_SHM_SLOTS");
  if (slots < 1 || slots > kMaxSlots) {
    return invalidArgument(
        fmt::format("HCL_SHM_SLOTS={} is out of range [1, {}]", slots, kMaxSlots));
  }
  const int64_t slotBytes = paramInt("HCL_SHM_SLOT_BYTES");
  if (slotBytes < kMinSlotBytes || slotBytes > kMaxSlotBytes) {
    return invalidArgument(fmt::format("HCL_SHM_SLOT_BYTES={} is out of range [{}, {}]", slotBytes,
                                       kMinSlotBytes, kMaxSlotBytes));
  }
  out.slots = static_cast<uint32_t>(slots);
  out.slotBytes = static_cast<uint64_t>(slotBytes);
  return {};
}

std::string segmentName(const uint8_t (&secret)[16], uint64_t commTag, int low, int high) {
  std::string name = "/hcl-";
  for (int i = 0; i < 8; ++i) name += fmt::format("{:02x}", secret[i]);
  name += fmt::format("-{:x}-{}-{}", commTag, low, high);
  return name;
}

Segment::Segment(std::string name, void* base, size_t bytes)
    : name_(std::move(name)), base_(base), bytes_(bytes) {}

Segment::~Segment() { ::munmap(base_, bytes_); }

SegmentHeader& Segment::header() const { return *std::launder(static_cast<SegmentHeader*>(base_)); }

uint8_t* Segment::slot(int fifo, uint64_t index) const {
  const SegmentHeader& h = header();
  const uint64_t offset =
      slotsOffset() + (static_cast<uint64_t>(fifo) * h.slots + index) * h.slotStride;
  return static_cast<uint8_t*>(base_) + offset;
}

Status Segment::create(const std::string& name, const Geometry& geometry, int low, int high,
                       std::shared_ptr<Segment>& out) {
  const uint64_t stride = kSlotHeaderBytes + roundUp(geometry.slotBytes, kCacheLine);
  const uint64_t total = slotsOffset() + 2ull * geometry.slots * stride;

  Fd fd(::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600));
  if (fd.get() < 0) {
    const int err = errno;
    return systemError(fmt::format("rank {}: shm_open({}, O_CREAT|O_EXCL) for rank {} failed: {}{}",
                                   low, name, high, errnoText(err),
                                   err == EEXIST ? " (left over from an earlier run?)" : ""));
  }
  auto fail = [&](std::string what, int err) {
    ::shm_unlink(name.c_str());
    return systemError(
        fmt::format("rank {}: {} of shm segment {} ({} bytes) for rank {} failed: {}{}", low, what,
                    name, total, high, errnoText(err),
                    err == ENOSPC || err == ENOMEM
                        ? " (enlarge /dev/shm, lower HCL_SHM_SLOTS/HCL_SHM_SLOT_BYTES "
                          "or set HCL_SHM_DISABLE=1)"
                        : ""));
  };
  if (::ftruncate(fd.get(), static_cast<off_t>(total)) != 0) return fail("ftruncate", errno);
  // Reserve the pages now: a full /dev/shm becomes an error here instead of SIGBUS later.
  if (const int err = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(total)); err != 0) {
    return fail("posix_fallocate", err);
  }
  void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) return fail("mmap", errno);

  auto* h = std::construct_at(static_cast<SegmentHeader*>(base));
  h->slots = geometry.slots;
  h->slotBytes = geometry.slotBytes;
  h->slotStride = stride;
  h->totalBytes = total;
  h->ranks[0] = low;
  h->ranks[1] = high;
  h->magic.store(kSegmentMagic, std::memory_order_release);
  out = std::make_shared<Segment>(name, base, total);
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
  auto segment = std::make_shared<Segment>(name, base, size);
  const SegmentHeader& h = segment->header();
  if (h.magic.load(std::memory_order_acquire) != kSegmentMagic) {
    *missing = true;  // not initialised yet
    return {};
  }
  const uint64_t expectedTotal = slotsOffset() + 2ull * h.slots * h.slotStride;
  if (h.ranks[0] != low || h.ranks[1] != high || h.slots == 0 || h.slotBytes == 0 ||
      h.slotStride < kSlotHeaderBytes + h.slotBytes || h.totalBytes != size ||
      expectedTotal != size) {
    return internalError(fmt::format(
        "rank {}: shm segment {} has an unexpected layout (ranks {}/{}, {} slots of {} bytes, "
        "{} bytes in all, file has {})",
        high, name, h.ranks[0], h.ranks[1], h.slots, h.slotBytes, h.totalBytes, size));
  }
  out = std::move(segment);
  return {};
}

}  // namespace hcl::shm
