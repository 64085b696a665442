#!/usr/bin/env python3
"""Allreduce through PyTorch's NCCL process group with HCL's libnccl.so.2
preloaded, ranks as processes on one GPU: the host-staged path as a
framework drives it, on its own streams. Beside each size: the GPU's own
pinned device->host and host->device copy times for the same bytes.

    LD_PRELOAD=build/libnccl.so.2 python3 tools/bench/torch_allreduce_bench.py [ranks=2] [iterations=10]
"""
import socket
import statistics
import sys
import time

SIZES = [1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20]


def copy_ms(torch, nbytes, iterations):
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    host = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
    out = []
    for direction in ("d2h", "h2d"):
        times = []
        for i in range(iterations + 1):
            torch.cuda.synchronize()
            start = time.perf_counter()
            if direction == "d2h":
                host.copy_(dev, non_blocking=True)
            else:
                dev.copy_(host, non_blocking=True)
            torch.cuda.synchronize()
            if i:
                times.append((time.perf_counter() - start) * 1e3)
        out.append(statistics.median(times))
    return out


def rank_main(rank, world, port, iterations):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", 0))
    if rank == 0:
        print(f"# {world} ranks on one {torch.cuda.get_device_name(0)}, float32 sum, medians of {iterations}")
        print(f"{'bytes':>11} {'allreduce ms':>13} {'busbw GB/s':>11} {'d2h ms':>8} {'h2d ms':>8} {'copy GB/s':>10}")
    for nbytes in SIZES:
        t = torch.ones(nbytes // 4, device="cuda")
        times = []
        for i in range(iterations + 2):
            dist.barrier()
            torch.cuda.synchronize()
            start = time.perf_counter()
            dist.all_reduce(t)
            torch.cuda.synchronize()
            if i >= 2:
                times.append((time.perf_counter() - start) * 1e3)
        ms = statistics.median(times)
        worst = torch.tensor([ms], device="cuda")
        dist.all_reduce(worst, op=dist.ReduceOp.MAX)
        if rank == 0:
            d2h, h2d = copy_ms(torch, nbytes, iterations)
            busbw = nbytes * 2 * (world - 1) / world / (worst.item() * 1e6)
            print(f"{nbytes:>11} {worst.item():>13.2f} {busbw:>11.2f} {d2h:>8.2f} {h2d:>8.2f} {nbytes / (d2h * 1e6):>10.1f}",
                  flush=True)
        del t
    dist.destroy_process_group()


def main():
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(rank_main, args=(world, port, iterations), nprocs=world, join=True)


if __name__ == "__main__":
    main()
