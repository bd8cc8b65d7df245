"""The GEMM shapes the benchmarks share: two squares and three LLM layers at M = 8192
((N, K) of a 7B-70B model's MLP up / down projections and its QKV projection)."""

SHAPES = {                      # name -> (M, N, K)
    "4096": (4096, 4096, 4096),
    "8192": (8192, 8192, 8192),
    "llm-up": (8192, 14336, 4096),
    "llm-down": (8192, 4096, 14336),
    "llm-qkv": (8192, 6144, 4096),
}
