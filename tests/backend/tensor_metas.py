"""``meta``: a :class:`~backends.cuda.tensors.TensorMeta` for host-side tests (no device array):
row-major element strides unless given, a fake pointer, a torch-framework tag."""

from backends.cuda.tensors import TensorMeta


def meta(shape, dtype, strides=None, ptr=1 << 20, device=0, itemsize=1, framework="torch"):
    if strides is None:
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= max(s, 1)
        strides = tuple(reversed(strides))
    return TensorMeta(ptr, tuple(shape), tuple(strides), dtype, itemsize, device, framework)
