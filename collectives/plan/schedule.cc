#include "collectives/plan/schedule.h"

namespace hcl {

uint32_t ScheduleBuilder::send(int peer, BufferRef src, size_t bytes) {
  Step st;
  st.kind = Step::Kind::Send;
  st.peer = peer;
  st.transfer = s_.transfers++;
  st.a = src;
  st.bytes = bytes;
  s_.steps.push_back(st);
  return st.transfer;
}

uint32_t ScheduleBuilder::recv(int peer, BufferRef dst, size_t bytes) {
  Step st;
  st.kind = Step::Kind::Recv;
  st.peer = peer;
  st.transfer = s_.transfers++;
  st.dst = dst;
  st.bytes = bytes;
  s_.steps.push_back(st);
  return st.transfer;
}

void ScheduleBuilder::wait(uint32_t transfer) {
  Step st;
  st.kind = Step::Kind::Wait;
  st.transfer = transfer;
  s_.steps.push_back(st);
}

void ScheduleBuilder::waitAll(const std::vector<uint32_t>& transfers) {
  for (uint32_t t : transfers) wait(t);
}

void ScheduleBuilder::reduce(BufferRef dst, Form dstForm, BufferRef a, Form aForm, BufferRef b,
                             Form bForm, size_t count) {
  if (count == 0) return;
  Step st;
  st.kind = Step::Kind::Reduce;
  st.dst = dst;
  st.a = a;
  st.b = b;
  st.dstForm = dstForm;
  st.aForm = aForm;
  st.bForm = bForm;
  st.count = count;
  push(st);
}

void ScheduleBuilder::convert(BufferRef dst, Form dstForm, BufferRef a, Form aForm, size_t count) {
  if (count == 0) return;
  Step st;
  st.kind = Step::Kind::Convert;
  st.dst = dst;
  st.a = a;
  st.dstForm = dstForm;
  st.aForm = aForm;
  st.count = count;
  push(st);
}

void ScheduleBuilder::copy(BufferRef dst, BufferRef src, size_t bytes, bool streamDst) {
  if (bytes == 0) return;
  if (dst.id == src.id && dst.offset == src.offset && dst.index == src.index) return;
  Step st;
  st.kind = Step::Kind::Copy;
  st.dst = dst;
  st.a = src;
  st.bytes = bytes;
  st.streamDst = streamDst;
  push(st);
}

void ScheduleBuilder::push(Step st) {
  st.only = only_;
  s_.steps.push_back(st);
}

uint32_t ScheduleBuilder::exchangeAddresses(int self, int peer) {
  const uint32_t r = recv(peer, addressEntry(peer), kAddressEntryBytes);
  send(peer, addressEntry(self), kAddressEntryBytes);
  return r;
}

void ScheduleBuilder::peerCopy(Step::Kind kind, int peer, BufferRef dst, BufferRef a, size_t bytes,
                               bool streamDst) {
  if (bytes == 0) return;
  Step st;
  st.kind = kind;
  st.peer = peer;
  st.dst = dst;
  st.a = a;
  st.bytes = bytes;
  st.streamDst = streamDst;
  push(st);
}

void ScheduleBuilder::readPeer(int peer, BufferRef dst, BufferRef peerSrc, size_t bytes, bool streamDst) {
  peerCopy(Step::Kind::ReadPeer, peer, dst, peerSrc, bytes, streamDst);
}

void ScheduleBuilder::writePeer(int peer, BufferRef peerDst, BufferRef src, size_t bytes) {
  peerCopy(Step::Kind::WritePeer, peer, peerDst, src, bytes, false);
}

void ScheduleBuilder::checkPeerSizes(int peer) {
  Step st;
  st.kind = Step::Kind::CheckPeerSizes;
  st.peer = peer;
  push(st);
}

void ScheduleBuilder::reducePeer(int peer, BufferRef dst, Form dstForm, BufferRef peerA, Form aForm, BufferRef b,
                                 Form bForm, size_t count, size_t peerBytes, BufferRef via) {
  const size_t before = s_.steps.size();
  reduce(dst, dstForm, peerA, aForm, b, bForm, count);
  if (s_.steps.size() == before) return;
  Step& st = s_.steps.back();
  st.kind = Step::Kind::ReducePeer;
  st.peer = peer;
  st.bytes = peerBytes;
  st.via = via;
}

}  // namespace hcl
