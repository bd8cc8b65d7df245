"""The native host path (``hostpath.c``) against the Python code it accelerates.

Law (``cute_py.backends.cuda.hostpath``): with or without the extension every call launches
the same kernel with the same parameter bytes on the same stream and raises the same errors.
Checked on the CPU with a recording stand-in driver (``_hostpath.stub``): the launcher's
patching and driver arguments, the fast-path key (equal tuples), and ``gemm_fast`` against
``gemm_entry``'s Python fast path on torch CPU tensors with recording plans."""

import ctypes
import os
import struct

import pytest

from cute_py.backends.cuda import gemm_api as G
from cute_py.backends.cuda import hostpath
from cute_py.backends.cuda import stream as S
from cute_py.backends.cuda.kernel import ArgPack
from cute_py.errors import LaunchError

N = hostpath.NATIVE
needs_native = pytest.mark.skipif(N is None, reason="the native host path is not built here")


def test_built_where_the_readme_installs():
    # CI installs with `pip install -e .`, which builds the extension (gcc and Python's
    # headers are there): a broken build must not pass silently
    if os.environ.get("CI") == "true" and os.environ.get("CUTE_PY_NATIVE", "1") != "0":
        assert N is not None


# ------------------------------------------------------------------------------- Launcher

def _pack():
    return ArgPack(["ptr", "i32", "ptr", "f32", "tmap", "ptr", "f64"])


def _launcher(pack, cluster=None):
    plain, ex = N.stub()
    slots = [(pack.word(0), 0), (pack.word(2), 1), (pack.word(4), 2), (pack.word(5), 0)]
    scal = [(3, 1), (6, 0)]
    cfg = None
    if cluster is not None:
        from cute_py.backends.cuda import driver
        cfg = driver.make_launch_config((8, 2, 1), (384, 1, 1), 4096, cluster)
    return hostpath.launcher(pack, slots, scal, 0xF00D, (8, 2, 1), (384, 1, 1), 4096,
                             ex if cluster is not None else plain, cfg)


@needs_native
def test_launcher_patches_and_launches():
    pack = _pack()
    pack.set(1, 77)
    pack.set(4, bytes(range(128)))
    L = _launcher(pack)
    before = N.stub_record()["calls"]
    assert L((0x1000, 0x2000, 0x3000), (2.5, -1.25), 0xABC) == 0
    rec = N.stub_record()
    assert rec["calls"] == before + 1
    assert (rec["func"], rec["grid"], rec["block"], rec["smem"], rec["stream"]) == \
        (0xF00D, (8, 2, 1), (384, 1, 1), 4096, 0xABC)
    assert rec["params"] == ctypes.cast(pack.params, ctypes.c_void_p).value
    w = pack.words
    assert (w[pack.word(0)], w[pack.word(2)], w[pack.word(4)], w[pack.word(5)]) == \
        (0x1000, 0x2000, 0x3000, 0x1000)
    raw = pack.tobytes()
    assert struct.unpack_from("<i", raw, pack.offsets[1])[0] == 77      # untouched
    assert raw[pack.offsets[4] + 8:pack.offsets[4] + 128] == bytes(range(8, 128))
    assert struct.unpack_from("<f", raw, pack.offsets[3])[0] == -1.25   # role 1, f32
    assert struct.unpack_from("<d", raw, pack.offsets[6])[0] == 2.5     # role 0, f64


@needs_native
def test_launcher_equals_the_python_patch():
    # the same calls through the Python plan's patch (pack.words / pack.set) give the same bytes
    a, b = _pack(), _pack()
    L = _launcher(a)
    for ptrs, sc in [((1 << 40, 16, 32), (1.0, 0.0)), ((8, 1 << 47, 0), (0.1, 3)),
                     ((7, 9, 11), (0.1, 3))]:
        assert L(ptrs, sc, 0) == 0
        for w, r in [(b.word(0), 0), (b.word(2), 1), (b.word(4), 2), (b.word(5), 0)]:
            b.words[w] = ptrs[r]
        b.set(3, sc[1])
        b.set(6, sc[0])
        assert a.tobytes() == b.tobytes()


@needs_native
def test_launcher_writes_scalars_only_when_they_change():
    pack = _pack()
    L = _launcher(pack)
    L((1, 2, 3), (1.0, 2.0), 0)
    pack.set(3, 99.0)           # a stale byte the launcher must not rewrite for equal scalars
    L((1, 2, 3), (1, 2), 0)
    assert struct.unpack_from("<f", pack.tobytes(), pack.offsets[3])[0] == 99.0
    L((1, 2, 3), (1.0, 5.0), 0)
    assert struct.unpack_from("<f", pack.tobytes(), pack.offsets[3])[0] == 5.0


@needs_native
def test_launcher_cluster_config():
    pack = _pack()
    L = _launcher(pack, cluster=(2, 1, 1))
    assert L((1, 2, 3), (0.0, 0.0), 0x55) == 0
    rec = N.stub_record()
    assert (rec["stream"], rec["num_attrs"], rec["cluster"], rec["grid"], rec["smem"]) == \
        (0x55, 1, (2, 1, 1), (8, 2, 1), 4096)


@needs_native
def test_launcher_rejects_bad_arguments():
    L = _launcher(_pack())
    with pytest.raises(TypeError):
        L([1, 2, 3], (0.0, 0.0), 0)
    with pytest.raises(OverflowError):
        L((-1, 2, 3), (0.0, 0.0), 0)
    with pytest.raises(TypeError):
        L((1, 2, 3), ("x", 0.0), 0)
    with pytest.raises(TypeError):
        L((1, 2, 3), (0.0, 0.0))
    pack = _pack()
    plain, _ = N.stub()
    with pytest.raises(ValueError):         # a slot past the pack
        hostpath.launcher(pack, [(pack.size // 8, 0)], [], 1, (1, 1, 1), (1, 1, 1), 0, plain)
    i32 = ArgPack(["ptr", "i32"])            # a scalar that is not f32 / f64: no launcher
    assert hostpath.launcher(i32, [(0, 0)], [(1, 0)], 1, (1, 1, 1), (1, 1, 1), 0, plain) is None


# ------------------------------------------------------------------------------ the key

torch = pytest.importorskip("torch")


def _tensors():
    f16, bf16 = torch.float16, torch.bfloat16
    base = torch.empty(64, 96, dtype=f16)
    return [base, base.t(), base[:, 8:40], torch.empty(3, 5, 7, dtype=bf16),
            torch.empty(3, 5, 7, dtype=bf16).transpose(-1, -2), torch.empty(0, 4, dtype=f16)]


@needs_native
@pytest.mark.parametrize("alpha", [1.0, 1, 2.0, -0.5])
@pytest.mark.parametrize("backend", ["auto", "sm90", "sm80"])
def test_native_key_equals_python_key(alpha, backend):
    ts = _tensors()
    for i, A in enumerate(ts):
        B = ts[(i + 1) % len(ts)]
        for C, D in [(None, None), (ts[(i + 2) % len(ts)], None), (None, ts[(i + 3) % len(ts)]),
                     (ts[(i + 4) % len(ts)], ts[(i + 5) % len(ts)])]:
            use_c = C is not None
            ptrs = (A.data_ptr() + 16 * i, B.data_ptr() + 4 * i, C.data_ptr() + 2 if use_c
                    else 0, D.data_ptr() + 128 if D is not None else 0)
            args = (A, B, C, D, alpha, use_c, *ptrs, A.get_device(), backend)
            kn, kp = N.fast_key(*args), G._py_fast_key(*args)
            assert kn == kp and hash(kn) == hash(kp)


# ----------------------------------------------------------------- gemm_fast vs gemm_entry

class _Rec:
    """Records what a fast path asks of a cached call."""

    def __init__(self):
        self.log = []


class _Plan:
    __slots__ = ("rec", "_native")

    def __init__(self, rec):
        self.rec, self._native = rec, None

    def run(self, ptrs, scalars, stream):
        self.rec.log.append(("plan.run", tuple(ptrs), tuple(scalars), stream))


class _Call:
    def __init__(self, rec, out_shape, spans, simple=True, copy_a=False, copy_b=False,
                 reduce=None):
        self.rec, self.plan = rec, _Plan(rec)
        self.out_shape, self.spans = out_shape, spans
        self.simple, self.copy_a, self.copy_b = simple, copy_a, copy_b
        self.reduce, self.swap, self.ws = reduce, False, None

    def run(self, pa, pb, pd, pc, alpha, beta, stream):
        self.rec.log.append(("call.run", pa, pb, pd, pc, alpha, beta, stream))

    def copy_in(self, A, B_nk, stream):
        self.rec.log.append(("copy_in", tuple(B_nk.shape), stream))
        return [0xA000 if self.copy_a else None, 0xB000 if self.copy_b else None]


@pytest.fixture
def fast_paths(monkeypatch):
    """gemm_entry's fast path on CPU tensors: a fake stream getter (device -> 7 + device)."""
    if N is None:
        pytest.skip("the native host path is not built here")
    getter = (lambda dev: 7 + dev)
    saved = list(S.TORCH_FAST), list(G._READY), dict(G._PLANS)
    S.TORCH_FAST[:] = [torch.Tensor, getter]
    G._READY[0] = True
    N.configure(torch.Tensor, getter, G._stream, G._overlap_error, G._PLANS)
    yield
    S.TORCH_FAST[:] = saved[0]
    G._PLANS.clear()
    G._PLANS.update(saved[2])
    G._READY[0] = False       # the next real call configures the native path again


def _both(call_args, setup):
    """Run gemm_entry with the native path and with the Python one (same fresh plans);
    return each run's (result kind, log, error)."""
    outs = []
    for native in (N, None):
        G._PLANS.clear()
        rec = _Rec()
        setup(rec)
        old = G._NATIVE
        G._NATIVE = native
        try:
            r = G.gemm_entry(*call_args)
            pd = r.data_ptr()       # an allocated out differs between runs: named, not compared
            log = [tuple("OUT" if x == pd else tuple("OUT" if y == pd else y for y in x)
                         if isinstance(x, tuple) else x for x in e) for e in rec.log]
            outs.append(("ok", tuple(r.shape), log))
        except LaunchError as e:
            outs.append(("error", str(e), rec.log))
        except Exception as e:  # noqa: BLE001 - compared between both paths
            outs.append((type(e).__name__, str(e), rec.log))
        finally:
            G._NATIVE = old
    return outs


def _args(A, B, C=None, alpha=1.0, beta=0.0, out=None, stream=None, explain=False,
          backend="auto", bias=None, tensors=None):
    return (A, B, C, alpha, beta, out, stream, explain, backend, None, None, bias, None, None,
            tensors or {})


def _register(A, B, C, out, alpha, backend, **kw):
    use_c = C is not None
    key = G._fast_key(A, B, C if use_c else None, out, alpha, use_c, A.data_ptr(),
                      B.data_ptr(), C.data_ptr() if use_c else 0,
                      out.data_ptr() if out is not None else 0, A.get_device(), backend)
    def span(t):                # the bytes a dense tensor (or its transpose) covers
        return (0, t.numel() * t.element_size()) if t is not None else (0, 0)

    def setup(rec):
        G._PLANS[key] = _Call(rec, (A.shape[0], B.shape[1]),
                              (0, A.shape[0] * B.shape[1] * 2, span(A), span(B), span(C)),
                              **kw)
    return setup


@pytest.mark.parametrize("case", ["out", "alloc", "c", "c_beta0", "alpha_int", "copies",
                                  "split", "stream", "explain", "bias", "backend", "miss",
                                  "overlap", "inplace_c", "bool_alpha"])
def test_gemm_fast_equals_python(fast_paths, case):
    f16 = torch.float16
    A = torch.randn(48, 32).to(f16)
    B = torch.randn(40, 32).to(f16).t()
    D = torch.empty(48, 40, dtype=f16)
    C = torch.randn(48, 40).to(f16)
    alpha, beta, kw, args = 1.0, 0.0, {}, None
    reg_c, reg_out = None, D
    if case == "alloc":
        reg_out = None
        args = _args(A, B)
    elif case in ("c", "inplace_c"):
        reg_c, beta = C, 0.5
        if case == "inplace_c":
            reg_out = D = C
    elif case == "c_beta0":
        args = _args(A, B, C=C, beta=0.0, out=D)
    elif case == "alpha_int":
        alpha = 2
    elif case == "copies":
        kw = dict(copy_a=True, copy_b=True)
    elif case == "split":
        kw = dict(simple=False, reduce="a reduce plan")   # GemmCall.run in Python
    elif case == "stream":
        args = _args(A, B, out=D, stream=12345)
    elif case == "explain":
        args = _args(A, B, out=D, explain=True)
    elif case == "bias":
        args = _args(A, B, out=D, bias=torch.zeros(40, dtype=f16))
    elif case == "backend":
        args = _args(A, B, out=D, backend="sm70")
    elif case == "miss":
        args = _args(A, B, out=torch.empty(48, 40, dtype=torch.bfloat16))
    elif case == "overlap":
        big = torch.empty(48 * 40 + 48 * 32, dtype=f16)
        A, D = big[:48 * 32].view(48, 32), big[:48 * 40].view(48, 40)
        reg_out = D
    elif case == "bool_alpha":
        args = _args(A, B, alpha=True, out=D)
    if args is None:
        args = _args(A, B, C=reg_c, alpha=alpha, beta=beta, out=reg_out)
    setup = _register(A, B, reg_c, reg_out, alpha, "auto", **kw)
    native, python = _both(args, setup)
    # the general path runs on CPU tensors only to raise: both must agree on everything
    assert native == python
    if case in ("out", "alloc", "c", "alpha_int", "copies", "split", "stream", "inplace_c"):
        assert native[0] == "ok" and native[2], native
    if case == "overlap":
        assert native[0] == "error" and "overlaps" in native[1]


def test_gemm_fast_launches_the_plans_launcher(fast_paths):
    # a plan with a native launcher: gemm_fast patches (A, B, D, C) and (alpha, beta) and
    # launches on the stream the getter gives, without calling back into Python
    f16 = torch.float16
    A, B = torch.randn(48, 32).to(f16), torch.randn(40, 32).to(f16).t()
    C, D = torch.randn(48, 40).to(f16), torch.empty(48, 40, dtype=f16)
    pack = ArgPack(["ptr", "ptr", "ptr", "ptr", "f32", "f32"])
    plain, _ = N.stub()
    L = hostpath.launcher(pack, [(pack.word(i), i) for i in range(4)], [(4, 0), (5, 1)], 0xBEEF,
                          (3, 1, 1), (256, 1, 1), 1024, plain)
    rec = _Rec()
    _register(A, B, C, D, 0.75, "auto")(rec)
    for call in G._PLANS.values():
        call.plan._native = L
    before = N.stub_record()["calls"]
    assert G.gemm_entry(*_args(A, B, C=C, alpha=0.75, beta=-2.0, out=D)) is D
    got = N.stub_record()
    assert got["calls"] == before + 1 and got["stream"] == 6 and not rec.log
    assert list(pack.words[:4]) == [A.data_ptr(), B.data_ptr(), D.data_ptr(), C.data_ptr()]
    assert struct.unpack_from("<ff", pack.tobytes(), pack.offsets[4]) == (0.75, -2.0)


def _stub_plan(n_ptrs):
    """A LaunchPlan whose native launcher is the recording stand-in (pointers, then alpha, beta
    as f32)."""
    import threading

    from cute_py.backends.cuda.kernel import LaunchPlan
    pack = ArgPack(["ptr"] * n_ptrs + ["f32", "f32"])
    plain, _ = N.stub()
    plan = LaunchPlan()
    plan._native = hostpath.launcher(pack, [(pack.word(i), i) for i in range(n_ptrs)],
                                     [(n_ptrs, 0), (n_ptrs + 1, 1)], 0xC0DE, (5, 1, 1),
                                     (384, 1, 1), 0, plain)
    plan._lock, plan.pack = threading.Lock(), pack
    return plan


@pytest.mark.parametrize("swap", [False, True])
def test_gemm_fast_split_call_launches_directly(fast_paths, swap):
    # a split-K / swapped GemmCall without a reduce launch, whose stream has its workspace:
    # gemm_fast launches the plan itself with (A, B) swapped as GemmCall.run swaps them and the
    # workspace's two pointers appended -- the same bytes as the Python path
    from cute_py.backends.cuda.gemm_common import StreamWorkspace
    f16 = torch.float16
    A, B = torch.randn(48, 32).to(f16), torch.randn(40, 32).to(f16).t()
    D = torch.empty(48, 40, dtype=f16)
    got = []
    for native in (N, None):
        G._PLANS.clear()
        call = G.GemmCall()
        call.plan, call.simple, call.swap, call.reduce = _stub_plan(6), False, swap, None
        call.copy_a = call.copy_b = False
        call.out_shape, call.spans = (48, 40), (0, 3840, (0, 3072), (0, 2560), (0, 0))
        call.ws = StreamWorkspace(16, 4, "torch", -1)
        call.ws._by_stream[6] = (None, 0x111, 0x222)
        G._PLANS[G._fast_key(A, B, None, D, 0.5, False, A.data_ptr(), B.data_ptr(), 0,
                             D.data_ptr(), -1, "auto")] = call
        old, G._NATIVE = G._NATIVE, native
        try:
            assert G.gemm_entry(*_args(A, B, alpha=0.5, out=D)) is D
        finally:
            G._NATIVE = old
        rec = N.stub_record()
        rec.pop("calls")
        rec.pop("params")
        pack = call.plan.pack
        got.append((list(pack.words[:6]), struct.unpack_from("<ff", pack.tobytes(),
                                                             pack.offsets[6]), rec))
    assert got[0] == got[1]
    pa, pb = (B.data_ptr(), A.data_ptr()) if swap else (A.data_ptr(), B.data_ptr())
    assert got[0][0] == [pa, pb, D.data_ptr(), D.data_ptr(), 0x111, 0x222]
    assert got[0][1] == (0.5, 0.0) and got[0][2]["stream"] == 6
