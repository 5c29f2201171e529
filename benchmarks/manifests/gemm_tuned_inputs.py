"""The launch arguments of gemm_tuned.yaml's problems (imported by mytriton-build --tune only)."""


def gemm_inputs(problem):
    """(grid, args) of C = A @ B in fp16 for one problem: A M×K, B K×N, random, on the GPU."""
    import torch
    M, N, K = problem["M"], problem["N"], problem["K"]
    generator = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=generator)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16, generator=generator)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)

    def grid(meta):
        return (-(-M // meta["BLOCK_M"]) * -(-N // meta["BLOCK_N"]),)
    return grid, (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
