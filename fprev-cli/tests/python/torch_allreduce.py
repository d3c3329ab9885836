"""fprev --exec responder: torch.distributed.all_reduce (SUM) across WORLD processes.

    fprev reveal --exec "python3 torch_allreduce.py WORLD [COUNT ELEMENT BACKEND]" \
        --n WORLD --dtype f64 --startup-timeout 120

Rank r contributes value r of each probe (one line of WORLD numbers) at element ELEMENT
of a COUNT-element float64 tensor, the other elements fixed random values (they set the
message size, which the backend's algorithm may depend on). Rank 0 runs in this process,
reading probes from stdin and answering with element ELEMENT of the reduced tensor; the
other ranks are started with torch.multiprocessing (a spawned process gets no stdin).
BACKEND is gloo (CPU, the default) or nccl (one GPU per rank: tensors on cuda:RANK).
"""
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

STOP, RUN = 0, 1


def serve(rank, world, count, element, backend, port, probes):
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    device = torch.device(f"cuda:{rank}") if backend == "nccl" else torch.device("cpu")
    gen = torch.Generator().manual_seed(7 + rank)
    mine = (torch.rand(count, generator=gen, dtype=torch.float64) * 2 - 1).to(device)
    command = torch.zeros(1, dtype=torch.int64, device=device)
    probe = torch.zeros(world, dtype=torch.float64, device=device)
    lines = iter(probes) if probes is not None else None
    try:
        while True:
            if rank == 0:
                line = next(lines, None)
                command.fill_(STOP if line is None else RUN)
                if line is not None:
                    probe.copy_(torch.tensor([float(v) for v in line.split()], dtype=torch.float64))
            dist.broadcast(command, src=0)
            if int(command.item()) != RUN:
                break
            dist.broadcast(probe, src=0)
            t = mine.clone()
            t[element] = probe[rank]
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
            if rank == 0:
                sys.stdout.write(repr(float(t[element].item())) + "\n")
                sys.stdout.flush()
    finally:
        dist.destroy_process_group()


def main():
    world = int(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    element = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    backend = sys.argv[4] if len(sys.argv) > 4 else "gloo"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    others = [
        ctx.Process(target=serve, args=(r, world, count, element, backend, port, None), daemon=True)
        for r in range(1, world)
    ]
    for p in others:
        p.start()
    serve(0, world, count, element, backend, port, sys.stdin)
    for p in others:
        p.join()


if __name__ == "__main__":
    main()
