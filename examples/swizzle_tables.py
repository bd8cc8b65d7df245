"""Print the swizzle pictures of docs/swizzles.md: Swizzle(3,4,3) on a 128-byte-row grid, the
Hopper GMMA atoms and the SM80 ldmatrix atom, and a bank-conflict count.

    python examples/swizzle_tables.py
"""

import cute_py as cute
from cute_py import GMMA, Swizzle


def chunk_table(sw: Swizzle, rows: int = 8, row_bytes: int = 128, chunk: int = 16) -> str:
    """Where each 16-byte chunk of each 128-byte row lands under a byte-address swizzle."""
    lines = ["row | " + " ".join(f"c{c}" for c in range(row_bytes // chunk))]
    for r in range(rows):
        dst = [sw(r * row_bytes + c * chunk) % row_bytes // chunk for c in range(row_bytes // chunk)]
        lines.append(f"{r:3d} | " + " ".join(f"{d:2d}" for d in dst))
    return "\n".join(lines)


def bank_conflicts(layout, rows=8, col=0, elem_bytes=2) -> int:
    """Max threads hitting the same 4-byte bank when 8 rows read column ``col`` (ldmatrix phase)."""
    banks = [(layout(r, col) * elem_bytes // 4) % 32 for r in range(rows)]
    return max(banks.count(b) for b in set(banks))


def main():
    for B in range(4):
        sw = Swizzle(B, 4, 3)
        print(f"{sw}: 16-byte chunk index after swizzling (rows of 128 bytes)")
        print(chunk_table(sw))
        print()
    for name in ("Layout_K_SW128_Atom", "Layout_MN_SW128_Atom", "Layout_K_SW32_Atom"):
        atom = getattr(GMMA, name)("f16")
        print(f"GMMA.{name}('f16') = {atom}")
        print("tile_to_shape(.., (128, 64)) =", cute.tile_to_shape(atom, (128, 64)))
    print()
    cute.print_layout(GMMA.Layout_K_SW32_Atom("f16"))
    print()
    sm80 = cute.make_sm80_smem_layout_atom("f16", "K", 64)
    plain = cute.make_layout((8, 64), (64, 1))
    print("SM80 K-major atom:", sm80)
    print("ldmatrix bank conflicts (8 rows, column 0): swizzled", bank_conflicts(sm80),
          "vs row-major", bank_conflicts(plain))


if __name__ == "__main__":
    main()
