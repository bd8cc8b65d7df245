"""Per-architecture kernel components: each emits its part of a kernel into a
:class:`~backends.cuda.builder.KernelBuilder` (``common``: pieces both GEMM families share;
``sm80``: ``cp.async`` / ``ldmatrix`` / ``mma.sync``; ``sm90``: TMA / mbarrier pipelines /
``wgmma``)."""
