// tucoll-bench --memory device: GPU copies of an exchange's host send and receive buffers. The
// host buffers stay the contents' source and the check's reference (computed by the MPI on the
// host), so --check needs no CUDA-aware MPI; the timed calls see only the GPU addresses.
#pragma once

#include <string>

#include "buffer.h"

namespace tucoll::bench {

class DeviceMirror {
  public:
    DeviceMirror() = default;
    DeviceMirror(const DeviceMirror &) = delete;
    DeviceMirror &operator=(const DeviceMirror &) = delete;
    ~DeviceMirror() { release(); }

    // "" when --memory `memory` can be served by this build on this machine, else why not.
    static std::string supported(const std::string &memory);

    // --memory device: allocates GPU buffers of the host buffers' sizes on GPU (node-local
    // rank) % (GPUs of the node), copies `send` up and fills the receive buffer with `recv`'s
    // bytes, synchronised: ready when a call starts. host: no-op.
    std::string mirror(const std::string &memory, const Bytes &send, const Bytes &recv);
    void release();

    bool active() const { return recv_ != nullptr; }
    void *send(Bytes &host) { return active() ? send_ : host.data(); }
    void *recv(Bytes &host) { return active() ? recv_ : host.data(); }
    // The receive buffer refilled from `host` (a sentinel) before a timed call.
    void reset_recv(const Bytes &host);
    // What the last call received: `host` itself, or with a mirror the GPU's receive buffer
    // copied back (into a buffer the mirror keeps).
    const Bytes &received(const Bytes &host) const;

  private:
    void *send_ = nullptr, *recv_ = nullptr;
    size_t recv_bytes_ = 0;
    mutable Bytes back_;
};

}  // namespace tucoll::bench
