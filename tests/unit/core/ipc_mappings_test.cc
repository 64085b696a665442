// Peer mappings of the IPC path, on the sim device: beyond the bound the
// least recently used are retired, and closed only once no stream of the
// device waits on a gate ticket (a GPU's close would wait for that stream,
// which may wait for the closing thread).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/ipc_area.h"
#include "device/gate_waits.h"
#include "device/sim/sim_device.h"

namespace hcl {
namespace {

class IpcMappingsTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(sim::runtime().device(0, &device_).ok());
    std::string why;
    if (!device_->ipcSupported(&why)) GTEST_SKIP() << "sim IPC unavailable here: " << why;
  }
  void TearDown() override {
    for (void* p : buffers_) (void)device_->freeDevice(p);
  }

  // A fresh device allocation's handle.
  DeviceIpcHandle exported() {
    void* p = nullptr;
    EXPECT_TRUE(device_->allocDevice(4096, &p).ok());
    buffers_.push_back(p);
    DeviceIpcHandle h;
    uint64_t offset = 1;
    EXPECT_TRUE(device_->ipcExport(p, &h, &offset).ok());
    EXPECT_EQ(offset, 0u);
    return h;
  }

  Device* device_ = nullptr;
  std::vector<void*> buffers_;
};

TEST_F(IpcMappingsTest, CloseWaitsUntilNoStreamWaitsOnAGate) {
  std::unique_ptr<StreamGate> gate;
  ASSERT_TRUE(device_->openPrivateGate(gate).ok());
  uint64_t t = 0;
  ASSERT_TRUE(gate->mark(&t).ok());
  ASSERT_TRUE(gate->waitFor(t).ok());  // the stream now waits until t is released

  IpcPeerMappings mappings(*device_);
  const size_t extra = 5;
  std::vector<void*> bases;
  for (size_t i = 0; i < IpcPeerMappings::kMaxOpen + extra; ++i) {
    void* base = nullptr;
    ASSERT_TRUE(mappings.open(1, exported(), &base).ok()) << i;
    ASSERT_NE(base, nullptr);
    bases.push_back(base);
  }
  EXPECT_EQ(mappings.openCount(), IpcPeerMappings::kMaxOpen);
  EXPECT_EQ(mappings.retiredCount(), extra);

  // The device refuses to close while the wait is pending, and nothing is lost.
  EXPECT_EQ(device_->ipcClose(bases.front()).code(), hclInProgress);
  mappings.closeRetired();
  EXPECT_EQ(mappings.retiredCount(), extra);

  gate->release(t);
  mappings.closeRetired();
  EXPECT_EQ(mappings.retiredCount(), 0u);
  EXPECT_EQ(mappings.openCount(), IpcPeerMappings::kMaxOpen);
}

// The runtime refuses to map an allocation still mapped, so a retired
// mapping asked for again is taken back, not opened twice.
TEST_F(IpcMappingsTest, ARetiredMappingAskedForAgainIsTakenBack) {
  std::unique_ptr<StreamGate> gate;
  ASSERT_TRUE(device_->openPrivateGate(gate).ok());
  uint64_t t = 0;
  ASSERT_TRUE(gate->mark(&t).ok());
  ASSERT_TRUE(gate->waitFor(t).ok());

  IpcPeerMappings mappings(*device_);
  const DeviceIpcHandle first = exported();
  void* firstBase = nullptr;
  ASSERT_TRUE(mappings.open(1, first, &firstBase).ok());
  for (size_t i = 0; i < IpcPeerMappings::kMaxOpen; ++i) {
    void* base = nullptr;
    ASSERT_TRUE(mappings.open(1, exported(), &base).ok()) << i;
  }
  ASSERT_EQ(mappings.retiredCount(), 1u);  // the first, least recently used
  void* again = nullptr;
  ASSERT_TRUE(mappings.open(1, first, &again).ok());
  EXPECT_EQ(again, firstBase);
  EXPECT_EQ(mappings.openCount(), IpcPeerMappings::kMaxOpen);
  EXPECT_EQ(mappings.retiredCount(), 1u);  // another one made room for it
  gate->release(t);
}

TEST_F(IpcMappingsTest, AWaitOnATicketReleasedBeforehandDoesNotHoldCloses) {
  std::unique_ptr<StreamGate> gate;
  ASSERT_TRUE(device_->openPrivateGate(gate).ok());
  uint64_t t = 0;
  ASSERT_TRUE(gate->mark(&t).ok());
  gate->release(t);
  ASSERT_TRUE(gate->waitFor(t).ok());
  void* base = nullptr;
  ASSERT_TRUE(device_->ipcOpen(exported(), &base).ok());
  EXPECT_TRUE(device_->ipcClose(base).ok());
}

TEST_F(IpcMappingsTest, ADestroyedGateHoldsNoCloses) {
  void* base = nullptr;
  ASSERT_TRUE(device_->ipcOpen(exported(), &base).ok());
  {
    std::unique_ptr<StreamGate> gate;
    ASSERT_TRUE(device_->openPrivateGate(gate).ok());
    uint64_t t = 0;
    ASSERT_TRUE(gate->mark(&t).ok());
    ASSERT_TRUE(gate->waitFor(t).ok());
    EXPECT_EQ(device_->ipcClose(base).code(), hclInProgress);
  }  // the gate lets its stream go as it is destroyed
  EXPECT_TRUE(device_->ipcClose(base).ok());
}

}  // namespace
}  // namespace hcl

namespace hcl {
namespace {

// The accounting behind IpcClose's refusals, as the GPU plugins use it.
TEST(PendingWaits, QuietOnlyWithNoWaitPendingAndNeverBehindAnIssuer) {
  auto device = std::make_shared<PendingWaits>();
  auto gate = std::make_unique<GateWaits>(device);
  EXPECT_TRUE(device->quiet().owns_lock());
  {
    const auto issuing = gate->issuing();
    EXPECT_FALSE(device->quiet().owns_lock());  // returns at once instead of waiting
  }
  gate->waited(3);
  gate->waited(5);
  EXPECT_FALSE(device->quiet().owns_lock());
  gate->released(4);
  EXPECT_EQ(device->count(), 1);
  gate->released(5);
  EXPECT_TRUE(device->quiet().owns_lock());
  gate->waited(2);  // released already: passes at once
  EXPECT_EQ(device->count(), 0);
  gate->waited(9);
  gate.reset();  // a destroyed gate lets its stream go
  EXPECT_EQ(device->count(), 0);
}

}  // namespace
}  // namespace hcl
