"""A garbage-argument fuzzer for cute_py's public surface.

Every public callable and class (``cute_py.__all__``, the atom namespaces ``cute_py.atom``,
``cute_py.nvgpu.sm80`` / ``.sm90``, the command line ``cute_py.cli``) is called with a bounded,
seeded sample of argument tuples mixing valid values and garbage: wrong types, ``None``, floats,
bools, strings, 2**70 ints and 2**70-element layouts, 200-deep nesting, empty tuples and sympy
symbols.  Objects a call returns are also printed (``str``/``repr``).  A call may succeed or raise a
:class:`cute_py.errors.CuteError`; anything else is a *leak*, and a call that runs past the time
limit is a *hang*.

Run ``python tests/fuzz_public.py [--json] [--examples N]`` for a report; ``tests/test_fuzz_public.py``
runs it in a subprocess (with a memory limit) and requires 0 leaks and 0 hangs.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import os
import random
import resource
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


class Hang(BaseException):
    """Raised by the alarm; a BaseException so that no ``except Exception`` swallows it."""


def _on_alarm(signum, frame):
    raise Hang()


def _deep(n, leaf=2):
    x = leaf
    for _ in range(n):
        x = (x,)
    return x


def pools():
    """(valid, garbage): the values arguments are drawn from."""
    import cute_py as cute
    import sympy
    N = sympy.Symbol("N", positive=True, integer=True)
    valid = [
        4, 2, 1, 8, (2, 3), (4, (2, 2)), (1, 2), cute._, (cute._, 1),
        cute.Layout((4, 2), (1, 4)), cute.Layout(4, 2), cute.Layout((8, 8), (8, 1)),
        cute.Layout(((2, 2), 4), ((1, 4), 2)), cute.make_layout((2, 2, 2)),
        cute.Swizzle(3, 4, 3), cute.make_composed_layout(cute.Swizzle(2, 0, 3), 0,
                                                         cute.Layout((8, 8), (8, 1))),
        cute.make_identity_tensor((4, 8)), cute.make_tensor(cute.make_gmem_ptr("f16"),
                                                            cute.Layout((4, 8))),
        "f16", "float32", "K", "C",
    ]
    try:
        atom = cute.SM80_16x8x16_F32F16F16F32_TN()
        valid += [atom, cute.make_tiled_mma(atom, (2, 2, 1)),
                  cute.make_copy_atom(cute.UniversalCopy(32), "f32")]
        valid.append(cute.make_tiled_copy(valid[-1], cute.Layout((4, 8), (8, 1)),
                                          cute.Layout((1, 4))))
    except Exception:  # the pool is best effort; the fuzz of those constructors reports it
        pass
    garbage = [
        None, 1.5, float("nan"), True, False, "hello", "", b"x", [2, 3], {"a": 1}, object(),
        -1, 0, 2 ** 70, -(2 ** 70), (), ((),), (2 ** 70, 4), (2 ** 35, 2 ** 35), (0, 4), (4, -2),
        _deep(200), (1.5, 2), (None,), ("a", 2),
        N, (N, 4), N - 100, sympy.Rational(1, 2),
        cute.Layout(2 ** 70), cute.Layout((2 ** 35, 2 ** 35)), cute.Layout((2 ** 70, 4), (1, 0)),
        cute.Layout(_deep(200, 2)), cute.Layout((N, 4), (1, N)),
        cute.Layout(()),
    ]
    return valid, garbage


def targets():
    """(name, callable) for every public callable and class, each object once."""
    import cute_py as cute
    import cute_py.atom as atom_ns
    import cute_py.cli as cli
    mods = [("cute_py", cute, list(cute.__all__) + ["filter"]),
            ("cute_py.atom", atom_ns, list(atom_ns.__all__)),
            ("cute_py.cli", cli, [n for n in cli.__all__ if n != "main"])]
    try:
        import cute_py.nvgpu as nvgpu
        for sub in ("sm80", "sm90"):
            m = getattr(nvgpu, sub)
            mods.append((f"cute_py.nvgpu.{sub}", m, list(m.__all__)))
    except ImportError:
        pass
    seen, out = set(), []
    for modname, mod, names in mods:
        for n in names:
            obj = getattr(mod, n, None)
            if obj is None or id(obj) in seen or not (
                    inspect.isclass(obj) or inspect.isroutine(obj)):  # type aliases are not called
                continue
            if isinstance(obj, type) and issubclass(obj, BaseException):
                continue
            seen.add(id(obj))
            out.append((f"{modname}.{n}", obj))
    return out


def method_targets(valid):
    """(name, bound method) for the public methods of the library's values in the pool (layouts,
    swizzles, composed layouts, tensors, atoms, tiled MMAs and copies and their thread slices)."""
    import cute_py as cute
    objs = [v for v in valid if type(v).__module__.startswith("cute_py")]
    for v in list(objs):
        if isinstance(v, (cute.TiledMMA, cute.TiledCopy)):
            objs.append(v.get_slice(0))
    out, seen = [], set()
    for obj in objs:
        cls = type(obj)
        for n in dir(cls):
            if n.startswith("_") or (cls.__name__, n) in seen:
                continue
            attr = getattr(cls, n, None)
            if not callable(attr) or isinstance(attr, type):
                continue
            seen.add((cls.__name__, n))
            out.append((f"{cls.__name__}.{n}", getattr(obj, n)))
    return out


def _arity(fn):
    """(required, total) positional parameter counts; *args counts as two optional ones."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 1, 2
    req = tot = 0
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            tot += 1
            if p.default is p.empty:
                req += 1
        elif p.kind == p.VAR_POSITIONAL:
            tot += 2
    return req, min(tot, 5)


def _calls(fn, valid, garbage, rng, examples):
    """A bounded list of argument tuples: one garbage value in one position (the others valid),
    then random mixes."""
    req, tot = _arity(fn)
    hi = max(req, min(tot, req + 1), 1) if tot else 0
    calls = []
    if hi == 0:
        return [()]
    for pos in range(hi):
        for g in garbage:
            n = rng.randint(max(req, pos + 1), hi)
            args = [rng.choice(valid) for _ in range(n)]
            args[pos] = g
            calls.append(tuple(args))
    rng.shuffle(calls)
    calls = calls[: examples * 2 // 3]
    pool = valid + garbage
    while len(calls) < examples:
        n = rng.randint(req, hi)
        calls.append(tuple(rng.choice(pool) for _ in range(n)))
    return calls


def _short(x, n=80):
    try:
        s = repr(x)
    except BaseException as e:  # noqa: BLE001 - the fuzzer reports, it does not crash
        s = f"<unreprable {type(x).__name__}: {type(e).__name__}>"
    return s if len(s) <= n else s[: n - 3] + "..."


def _cli_cases():
    return [
        [], ["hello"], ["(4,2):(2,1)", "--op", "coalesce()"], ["(4,2):(2,1)", "--op", "coalesce(_, 1, 2, 3)"],
        ["(4,2):(2,1)", "--op", "composition(_, x=2)"], ["(4,2):(2,1)", "--op", "nope(_)"],
        ["layout", "(4,2,3):(1,4,8)", "-o", "a.svg"], ["layout", "(4,2):(1,4)", "-o", "/nonexistent/dir/x.svg"],
        ["(" * 300 + "4" + ")" * 300], ["--op", "coalesce(_)"], ["mma", "hello"],
        ["mma", "SM80_16x8x16_F32F16F16F32_TN", "--atom-layout", "a,b"],
        ["mma", "SM90_64xNx16_F32F16F16_SS", "--n", "7"], ["(4,2):(2,1)", "--op", "logical_divide(_, 0)"],
        ["layout", "hello"], ["(2**70):1"], [str(2 ** 70) + ":1"], ["(4,2):(2,1)", "--op", "size(_, " * 100],
    ]


def run(examples=24, timeout=2.0, seed=0, methods=True):
    """Fuzz; returns a dict with counts and the first few failures per target."""
    import cute_py as cute
    from cute_py.errors import CuteError
    valid, garbage = pools()
    rng = random.Random(seed)
    leaks, hangs, calls, slow = [], [], 0, []
    per_fn_leaks = {}
    old = signal.signal(signal.SIGALRM, _on_alarm)
    cwd = os.getcwd()
    tmp = tempfile.mkdtemp(prefix="cute_py_fuzz_")
    os.chdir(tmp)

    std_fds = {fd: os.dup(fd) for fd in (0, 1, 2)}   # a call that closes one is a failure

    def fds_closed():
        bad = []
        for fd, keep in std_fds.items():
            try:
                os.fstat(fd)
            except OSError:
                os.dup2(keep, fd)
                bad.append(fd)
        return bad

    def one(name, fn, args, post=True):
        nonlocal calls
        calls += 1
        t0 = time.perf_counter()
        out, err = io.StringIO(), io.StringIO()
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                r = fn(*args)
                if post and r is not None:
                    str(r), repr(r)
        except Hang:
            hangs.append((name, _short(args)))
        except CuteError:
            pass
        except SystemExit as e:
            if name != "cute_py.cli.main" or e.code not in (0, 2):
                leaks.append((name, _short(args), f"SystemExit({e.code})"))
        except MemoryError:
            hangs.append((name, _short(args) + " [MemoryError]"))
        except BaseException as e:  # noqa: BLE001
            per_fn_leaks[name] = per_fn_leaks.get(name, 0) + 1
            leaks.append((name, _short(args), f"{type(e).__name__}: {_short(str(e), 100)}"))
        else:
            if name == "cute_py.cli.main" and r not in (0, 2):
                leaks.append((name, _short(args), f"exit {r}"))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        closed = fds_closed()
        if closed:
            leaks.append((name, _short(args), f"closed the process' file descriptor(s) {closed}"))
        dt = time.perf_counter() - t0
        if dt > 0.5:
            slow.append((name, _short(args), round(dt, 2)))

    try:
        for name, fn in targets():
            for args in _calls(fn, valid, garbage, rng, examples):
                one(name, fn, args)
        if methods:
            for name, fn in method_targets(valid):
                for args in _calls(fn, valid, garbage, rng, max(examples // 2, 4)):
                    one(name, fn, args)
        import cute_py.cli as cli
        for argv in _cli_cases():
            one("cute_py.cli.main", cli.main, (argv,), post=False)
    finally:
        signal.signal(signal.SIGALRM, old)
        os.chdir(cwd)
        for keep in std_fds.values():
            os.close(keep)
    return {"calls": calls, "leaks": len(leaks), "hangs": len(hangs),
            "leaking_functions": len({n for n, *_ in leaks}),
            "leak_samples": leaks, "hang_samples": hangs, "slow": slow}


def main(argv=None):
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("--json", action="store_true")
    p.add_argument("--examples", type=int, default=24)
    p.add_argument("--timeout", type=float, default=2.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mem-gb", type=float, default=4.0)
    p.add_argument("--no-methods", action="store_true", help="only the module-level callables")
    a = p.parse_args(argv)
    if a.mem_gb > 0:
        lim = int(a.mem_gb * 2 ** 30)
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard == resource.RLIM_INFINITY or hard >= lim:
            resource.setrlimit(resource.RLIMIT_AS, (lim, hard))
    t0 = time.time()
    r = run(a.examples, a.timeout, a.seed, methods=not a.no_methods)
    r["seconds"] = round(time.time() - t0, 1)
    if a.json:
        print(json.dumps(r))
    else:
        for n, args, e in r["leak_samples"]:
            print(f"LEAK {n}{args}: {e}")
        for n, args in r["hang_samples"]:
            print(f"HANG {n}{args}")
        for s in r["slow"]:
            print("SLOW", *s)
        print(f"calls {r['calls']}, leaks {r['leaks']} in {r['leaking_functions']} functions, "
              f"hangs {r['hangs']}, {r['seconds']} s")
    return 0 if not (r["leaks"] or r["hangs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
