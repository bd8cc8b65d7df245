"""Components shared by the GEMM families: the tile scheduler and the epilogue protocol."""
