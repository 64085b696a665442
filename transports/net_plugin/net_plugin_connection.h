// A Connection to one peer over an NCCL net plugin: a send comm to the peer
// and a receive comm from it. Messages travel in pieces through buffers
// registered once with the plugin (so user buffers need no registration and
// no plugin ever touches them), each piece headed by the message's tag and
// size so that ranks whose calls differ fail instead of mixing data.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transports/net_plugin/net_plugin.h"
#include "transports/net_plugin/page_buffer.h"
#include "transports/peer_watch.h"
#include "transports/transport.h"

namespace hcl::netplugin {

struct PieceHeader {
  uint32_t tag = 0;
  uint32_t last = 0;       // 1 on a message's last piece
  uint64_t messageBytes = 0;
};

class NetPluginConnection final : public Connection {
 public:
  static constexpr size_t kSlots = 4;  // pieces in flight each way (plugins take 8 requests per comm)

  // Takes the two comms; closes them when destroyed. slotBytes holds a
  // piece with its header. `watch` (null: the network tells itself) tells
  // when the peer's process ends.
  NetPluginConnection(NetPlugin& plugin, void* sendComm, void* recvComm, int rank, int peer, size_t slotBytes,
                      std::string description, std::shared_ptr<PeerWatch> watch = nullptr);
  ~NetPluginConnection() override;
  NetPluginConnection(const NetPluginConnection&) = delete;
  NetPluginConnection& operator=(const NetPluginConnection&) = delete;

  // Registers the piece buffers; before any post().
  Status open();

  Status post(Transfer& transfer) override;
  Status progress(bool* madeProgress) override;
  void abort() override { abortBecause({}); }
  void abortBecause(const Status& why) override;
  std::string describe() const override { return description_; }

 private:
  struct Slot {
    uint8_t* bytes = nullptr;  // slotBytes_ of its direction's buffer
    void* request = nullptr;
    enum class State { Free, Staged, Posted, Filled } state = State::Free;
    bool last = false;  // sends: the message's last piece
    size_t size = 0;    // bytes in the piece, its header included
  };
  // One registered buffer per direction, cut into kSlots pieces.
  struct Direction {
    PageBuffer buffer;
    void* mhandle = nullptr;
    Slot slots[kSlots];
    Slot& at(size_t index) { return slots[index % kSlots]; }
    // The plugin failed a call on this direction's comm (the peer closed,
    // the network broke): it is not called there again.
    Status failure;
  };

  size_t piecesOf(size_t bytes) const;
  void progressSends(bool* moved);
  Status progressReceives(bool* moved);
  void postReceives();
  void takeReceiveCompletions(bool* moved);
  Status deliver(Slot& slot);
  Status broken(const Status& why) const;
  Status fail(Status why);
  void release();
  bool closeComms();

  NetPlugin& plugin_;
  void* sendComm_;
  void* recvComm_;
  int rank_;
  int peer_;
  size_t slotBytes_;
  std::string description_;
  std::shared_ptr<PeerWatch> watch_;

  // post(), progress() and abort() may come from different threads (a
  // failure elsewhere aborts every link of the communicator).
  std::mutex mutex_;
  Direction send_;
  Direction recv_;
  size_t nextStage_ = 0, nextSendPost_ = 0, nextSendDone_ = 0;
  size_t nextRecvPost_ = 0, nextRecvDone_ = 0, nextDeliver_ = 0;
  // Receives are posted only for pieces that queued receives still need,
  // so an idle link has no request in the plugin (some plugins refuse to
  // close a comm that has one); on networks whose close cancels them
  // (verbs), every free slot keeps one posted, so a sender that runs ahead
  // finds a receive waiting.
  const bool eagerReceives_;
  uint64_t piecesWanted_ = 0;
  uint64_t piecesPosted_ = 0;

  std::deque<Transfer*> toCut_;     // sends with bytes not yet in a slot
  std::deque<Transfer*> awaiting_;  // sends wholly in slots, waiting for their last piece
  std::deque<Transfer*> receives_;
  Status failed_;
  bool closed_ = false;
};

}  // namespace hcl::netplugin
