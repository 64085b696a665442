#!/usr/bin/env python3
"""PyTorch's NCCL process group on HCL: run with HCL's libnccl.so.2 in
LD_PRELOAD. Ranks are processes sharing GPU 0 (NCCL itself refuses two ranks
on one GPU). Every collective torch.distributed offers is checked against
values computed on the host. Exits 0 on success, 77 (skip) without torch or a
CUDA device, 1 on a wrong result or an error.

    LD_PRELOAD=build/libnccl.so.2 python3 tests/gpu/torch_nccl_preload.py [ranks=2]
"""
import os
import socket
import sys

SKIP = 77


def check(name, got, want):
    import torch
    if not torch.equal(got.cpu(), want.cpu()):
        raise AssertionError(f"{name}: got {got.cpu().tolist()[:8]}..., want {want.cpu().tolist()[:8]}...")
    print(f"  {name}: correct", flush=True)


def rank_main(rank, world, port):
    import faulthandler
    import torch
    import torch.distributed as dist

    # Where a rank is stuck, rather than a silent hang.
    faulthandler.dump_traceback_later(int(os.environ.get("HCL_TEST_STACKS_AFTER", "120")), exit=True)
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=dev)
    with open("/proc/self/maps") as f:
        maps = f.read()
    if "libhcl" not in maps and "libnccl.so.2" not in os.environ.get("LD_PRELOAD", ""):
        raise AssertionError("HCL is not loaded: run with LD_PRELOAD=<build>/libnccl.so.2")

    n = 1 << 20  # 4 MiB of float: several staging chunks
    base = torch.arange(n, dtype=torch.float32, device=dev)

    t = base + rank
    dist.all_reduce(t)
    check("all_reduce sum", t, base * world + sum(range(world)))

    t = torch.full((1000,), float(rank + 2), device=dev)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    check("all_reduce max", t, torch.full((1000,), float(world + 1)))

    t = base.clone() if rank == world - 1 else torch.zeros(n, device=dev)
    print(f"  rank {rank}: broadcast issued", flush=True)
    dist.broadcast(t, src=world - 1)
    print(f"  rank {rank}: broadcast returned", flush=True)
    check("broadcast", t, base)

    mine = torch.full((4097,), float(rank), device=dev)
    out = torch.empty(4097 * world, device=dev)
    dist.all_gather_into_tensor(out, mine)
    check("all_gather", out, torch.cat([torch.full((4097,), float(r)) for r in range(world)]))

    src = torch.arange(333 * world, dtype=torch.float32, device=dev) + rank
    out = torch.empty(333, device=dev)
    dist.reduce_scatter_tensor(out, src)
    full = torch.arange(333 * world, dtype=torch.float32) * world + sum(range(world))
    check("reduce_scatter", out, full[rank * 333:(rank + 1) * 333])

    src = torch.arange(world * 10, dtype=torch.int32, device=dev) + 1000 * rank
    out = torch.empty_like(src)
    dist.all_to_all_single(out, src)
    want = torch.cat([torch.arange(rank * 10, rank * 10 + 10, dtype=torch.int32) + 1000 * r for r in range(world)])
    check("all_to_all", out, want)

    t = torch.full((77,), float(rank), dtype=torch.bfloat16, device=dev)
    dist.reduce(t, dst=0)
    if rank == 0:
        check("reduce bf16", t, torch.full((77,), float(sum(range(world))), dtype=torch.bfloat16))

    peer = (rank + 1) % world
    prev = (rank - 1) % world
    send = torch.full((5000,), float(rank), device=dev)
    recv = torch.empty(5000, device=dev)
    ops = [dist.P2POp(dist.isend, send, peer), dist.P2POp(dist.irecv, recv, prev)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    check("send/recv ring", recv, torch.full((5000,), float(prev)))

    # Stream order: work queued on the stream before the collective feeds it,
    # and work after it sees its result, with no host synchronisation between.
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        t = torch.ones(n, device=dev)
        t.mul_(rank + 1)
        dist.all_reduce(t)
        t.add_(1)
    s.synchronize()
    check("stream order", t, torch.full((n,), float(world * (world + 1) // 2 + 1)))

    dist.barrier()
    dist.destroy_process_group()
    faulthandler.cancel_dump_traceback_later()
    print(f"rank {rank}: every collective correct", flush=True)


def main():
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    if os.environ.get("HCL_TEST_SANITIZED"):
        # A sanitizer-instrumented libnccl.so.2 cannot be preloaded into an
        # uninstrumented Python: the sanitizer runtime must load first.
        print("skip: this is a sanitizer build of HCL")
        return SKIP
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError:
        print("skip: PyTorch is not installed")
        return SKIP
    if not torch.cuda.is_available():
        print("skip: no CUDA device")
        return SKIP
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(rank_main, args=(world, port), nprocs=world, join=True)
    print(f"torch.distributed nccl backend on HCL: {world} ranks on one GPU, every collective correct")
    return 0


if __name__ == "__main__":
    sys.exit(main())
