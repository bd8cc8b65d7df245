/* cute_py's native host path: a launch plan's patch-and-launch step, and gemm's cached call.
 *
 * Two things only, both optional accelerators of Python code that stays the reference:
 *
 * - `Launcher`: the hot step of `LaunchPlan.run` (backends/cuda/kernel.py).  It writes each
 *   call's pointers into the plan's packed parameters (one 64-bit word each), the f32 / f64
 *   scalars when they change, and calls `cuLaunchKernel` (or `cuLaunchKernelEx` with the plan's
 *   cluster config) through a function pointer handed over by the driver module.  The GIL is
 *   held throughout, so no other Python thread patches the same pack while the driver reads it.
 *   It returns the CUresult; Python handles every non-zero result.
 *
 * - `gemm_fast`: `gemm_entry`'s torch fast path (backends/cuda/gemm_api.py), statement for
 *   statement: the same eligibility test, the same key (`fast_key`, a flat tuple equal to
 *   `_fast_key`'s), the same out-overlap check, then the cached call's launch.  It returns None
 *   for every call it does not take (the caller runs the general path) and propagates every
 *   Python exception unchanged.
 *
 * Nothing here knows a kernel, a layout or a tensor's internals: tensors are read through their
 * Python methods (`data_ptr()`, `shape`, `stride()`, `dtype`, `get_device()`), plans through
 * their attributes.  No CUDA header is needed: the two driver signatures and the launch config
 * are declared below as the driver API defines them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---------------------------------------------------------------- the driver's launch calls */

typedef struct {
    unsigned int id;
    char pad[4];
    unsigned int value[16];         /* CUlaunchAttributeValue: a 64-byte union */
} LaunchAttribute;

typedef struct {
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int smem;
    void *stream;
    LaunchAttribute *attrs;
    unsigned int num_attrs;
} LaunchConfig;                     /* CUlaunchConfig */

typedef int (*launch_fn)(void *func, unsigned int gx, unsigned int gy, unsigned int gz,
                         unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,
                         void *stream, void **params, void **extra);
typedef int (*launch_ex_fn)(const LaunchConfig *config, void *func, void **params,
                            void **extra);

/* ------------------------------------------------------------------------------- Launcher */

typedef struct {
    PyObject_HEAD
    void *func;
    unsigned int grid[3], block[3], smem;
    launch_fn plain;                /* NULL for a cluster launch */
    launch_ex_fn ex;
    LaunchConfig *config;           /* the plan's cluster config (kept alive by `keep`) */
    void **params;
    uint64_t *words;                /* the pack's 64-bit words */
    unsigned char *base;            /* the pack's bytes */
    Py_ssize_t nslots;
    Py_ssize_t *slot_word, *slot_role;
    Py_ssize_t nscalars;
    Py_ssize_t *scalar_off, *scalar_role;
    char *scalar_f64;               /* 1: an f64 parameter, 0: f32 */
    double *last;                   /* the scalars last written */
    int have_last;
    PyObject *keep;                 /* the objects owning params / pack / config */
    vectorcallfunc vectorcall;
} Launcher;

static void launcher_dealloc(Launcher *self) {
    PyMem_Free(self->slot_word);
    PyMem_Free(self->slot_role);
    PyMem_Free(self->scalar_off);
    PyMem_Free(self->scalar_role);
    PyMem_Free(self->scalar_f64);
    PyMem_Free(self->last);
    Py_XDECREF(self->keep);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Write the pointers and scalars, then launch on `stream`: the CUresult. */
static int launcher_launch(Launcher *L, const uint64_t *ptrs, Py_ssize_t nptrs,
                           const double *scalars, Py_ssize_t nscalars, void *stream) {
    for (Py_ssize_t i = 0; i < L->nslots; i++) {
        Py_ssize_t r = L->slot_role[i];
        L->words[L->slot_word[i]] = r < nptrs ? ptrs[r] : 0;
    }
    if (L->nscalars) {
        int same = L->have_last;
        for (Py_ssize_t i = 0; same && i < L->nscalars; i++) {
            Py_ssize_t r = L->scalar_role[i];
            double v = r < nscalars ? scalars[r] : 0.0;
            same = v == L->last[i];
        }
        if (!same) {
            for (Py_ssize_t i = 0; i < L->nscalars; i++) {
                Py_ssize_t r = L->scalar_role[i];
                double v = r < nscalars ? scalars[r] : 0.0;
                if (L->scalar_f64[i]) {
                    memcpy(L->base + L->scalar_off[i], &v, 8);
                } else {
                    float f = (float)v;
                    memcpy(L->base + L->scalar_off[i], &f, 4);
                }
                L->last[i] = v;
            }
            L->have_last = 1;
        }
    }
    if (L->plain)
        return L->plain(L->func, L->grid[0], L->grid[1], L->grid[2], L->block[0], L->block[1],
                        L->block[2], L->smem, stream, L->params, NULL);
    L->config->stream = stream;
    return L->ex(L->config, L->func, L->params, NULL);
}

#define MAX_ARGS 16

/* A tuple of at most MAX_ARGS Python numbers, read as pointers (`ptrs`: unsigned 64-bit
 * ints) or as scalars (`vals`: doubles); its length, or -1 with an exception. */
static Py_ssize_t read_tuple(PyObject *seq, const char *what, uint64_t *ptrs, double *vals) {
    if (!PyTuple_Check(seq)) {
        PyErr_Format(PyExc_TypeError, "Launcher: %s must be a tuple", what);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    if (n > MAX_ARGS) {
        PyErr_Format(PyExc_ValueError, "Launcher: too many %s", what);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(seq, i);
        if (ptrs)
            ptrs[i] = PyLong_AsUnsignedLongLong(x);
        else
            vals[i] = PyFloat_AsDouble(x);
        if (PyErr_Occurred())
            return -1;
    }
    return n;
}

/* launcher(ptrs: tuple, scalars: tuple, stream: int) -> CUresult */
static PyObject *launcher_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 3 || (kwnames && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "Launcher(ptrs, scalars, stream) takes 3 positional "
                        "arguments");
        return NULL;
    }
    uint64_t ptrs[MAX_ARGS];
    double scalars[MAX_ARGS];
    Py_ssize_t np = read_tuple(args[0], "ptrs", ptrs, NULL);
    if (np < 0)
        return NULL;
    Py_ssize_t ns = read_tuple(args[1], "scalars", NULL, scalars);
    if (ns < 0)
        return NULL;
    void *stream = PyLong_AsVoidPtr(args[2]);
    if (stream == NULL && PyErr_Occurred())
        return NULL;
    return PyLong_FromLong(launcher_launch((Launcher *)self, ptrs, np, scalars, ns, stream));
}

static int read_index_pairs(PyObject *seq, Py_ssize_t *n, Py_ssize_t **a, Py_ssize_t **b,
                            const char *what) {
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast)
        return -1;
    *n = PySequence_Fast_GET_SIZE(fast);
    *a = PyMem_Calloc(*n ? *n : 1, sizeof(Py_ssize_t));
    *b = PyMem_Calloc(*n ? *n : 1, sizeof(Py_ssize_t));
    if (!*a || !*b) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyArg_ParseTuple(pair, "nn", &(*a)[i], &(*b)[i])) {
            Py_DECREF(fast);
            return -1;
        }
        if ((*a)[i] < 0 || (*b)[i] < 0 || (*b)[i] >= MAX_ARGS) {
            Py_DECREF(fast);
            PyErr_Format(PyExc_ValueError, "%s: an index is out of range", what);
            return -1;
        }
    }
    Py_DECREF(fast);
    return 0;
}

/* Launcher(func, grid, block, smem, params, base, size, slots, scalar_slots, launch, config,
 *          keep)
 *   func: CUfunction address; grid, block: 3-tuples; smem: bytes; params: address of the
 *   void*[] of parameter addresses; base, size: the pack's bytes; slots: ((word, role), ...);
 *   scalar_slots: ((byte offset, role, is_f64), ...); launch: the address of cuLaunchKernel
 *   (config 0) or of cuLaunchKernelEx (config: the address of a CUlaunchConfig); keep: any
 *   object owning those buffers. */
static PyObject *launcher_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    unsigned long long func, params, base, launch, config;
    Py_ssize_t size;
    unsigned int g[3], b[3], smem;
    PyObject *slots, *scalar_slots, *keep;
    if (kw && PyDict_Size(kw)) {
        PyErr_SetString(PyExc_TypeError, "Launcher takes positional arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "K(III)(III)IKKnOOKKO", &func, &g[0], &g[1], &g[2], &b[0],
                          &b[1], &b[2], &smem, &params, &base, &size, &slots, &scalar_slots,
                          &launch, &config, &keep))
        return NULL;
    if (!func || !params || !base || !launch || (base & 7) || size < 0) {
        PyErr_SetString(PyExc_ValueError, "Launcher: null or misaligned address");
        return NULL;
    }
    Launcher *L = (Launcher *)type->tp_alloc(type, 0);
    if (!L)
        return NULL;
    L->func = (void *)(uintptr_t)func;
    memcpy(L->grid, g, sizeof g);
    memcpy(L->block, b, sizeof b);
    L->smem = smem;
    L->params = (void **)(uintptr_t)params;
    L->base = (unsigned char *)(uintptr_t)base;
    L->words = (uint64_t *)(uintptr_t)base;
    if (config) {
        L->config = (LaunchConfig *)(uintptr_t)config;
        L->ex = (launch_ex_fn)(uintptr_t)launch;
    } else {
        L->plain = (launch_fn)(uintptr_t)launch;
    }
    L->keep = keep;
    Py_INCREF(keep);
    L->vectorcall = launcher_vectorcall;
    if (read_index_pairs(slots, &L->nslots, &L->slot_word, &L->slot_role, "Launcher: slots"))
        goto fail;
    for (Py_ssize_t i = 0; i < L->nslots; i++) {
        if ((L->slot_word[i] + 1) * 8 > size) {
            PyErr_SetString(PyExc_ValueError, "Launcher: a slot lies outside the pack");
            goto fail;
        }
    }
    PyObject *fast = PySequence_Fast(scalar_slots, "Launcher: scalar_slots");
    if (!fast)
        goto fail;
    L->nscalars = PySequence_Fast_GET_SIZE(fast);
    Py_ssize_t n = L->nscalars ? L->nscalars : 1;
    L->scalar_off = PyMem_Calloc(n, sizeof(Py_ssize_t));
    L->scalar_role = PyMem_Calloc(n, sizeof(Py_ssize_t));
    L->scalar_f64 = PyMem_Calloc(n, 1);
    L->last = PyMem_Calloc(n, sizeof(double));
    if (!L->scalar_off || !L->scalar_role || !L->scalar_f64 || !L->last) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < L->nscalars; i++) {
        int f64;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "nnp", &L->scalar_off[i],
                              &L->scalar_role[i], &f64)) {
            Py_DECREF(fast);
            goto fail;
        }
        L->scalar_f64[i] = (char)f64;
        if (L->scalar_off[i] < 0 || L->scalar_off[i] + (f64 ? 8 : 4) > size ||
            L->scalar_role[i] < 0 || L->scalar_role[i] >= MAX_ARGS) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_ValueError, "Launcher: a scalar lies outside the pack");
            goto fail;
        }
    }
    Py_DECREF(fast);
    return (PyObject *)L;
fail:
    Py_DECREF(L);
    return NULL;
}

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cute_py.backends.cuda._hostpath.Launcher",
    .tp_basicsize = sizeof(Launcher),
    .tp_dealloc = (destructor)launcher_dealloc,
    .tp_vectorcall_offset = offsetof(Launcher, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A launch plan's patch-and-launch step: launcher(ptrs, scalars, stream) -> "
              "CUresult.",
    .tp_new = launcher_new,
};

/* ------------------------------------------------------------------------- the fast path */

static struct {
    PyTypeObject *tensor;           /* torch.Tensor */
    PyObject *stream_getter;        /* torch's raw current-stream getter: f(device) -> int */
    PyObject *stream_of;            /* f(stream, like) -> int: an explicit stream argument */
    PyObject *overlap_error;        /* f(pd) -> raises gemm's LaunchError for `out` */
    PyObject *plans;                /* gemm's key -> GemmCall */
} S;

static PyObject *s_data_ptr, *s_get_device, *s_dtype, *s_shape, *s_stride, *s_new_empty,
    *s_copy_a, *s_copy_b, *s_simple, *s_spans, *s_out_shape, *s_plan, *s_native, *s_run,
    *s_copy_in, *s_transpose, *s_auto, *s_sm90, *s_sm80, *s_reduce, *s_swap, *s_ws,
    *s_by_stream;

static PyObject *call0(PyObject *obj, PyObject *name) {
    return PyObject_VectorcallMethod(name, &obj, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

/* t.data_ptr() as an integer; -1 with an exception on failure. */
static int ptr_of(PyObject *t, long long *out) {
    PyObject *p = call0(t, s_data_ptr);
    if (!p)
        return -1;
    *out = PyLong_AsLongLong(p);
    Py_DECREF(p);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static long acls(long long p) {
    return !(p & 127) ? 0 : !(p & 15) ? 1 : !(p & 3) ? 2 : 3;
}

/* Put dtype, shape, stride(), get_device() and the alignment class of pointer `p` of `t` into
 * items[0..4] (new references); None x5 when t is NULL. */
static int meta5(PyObject *t, long long p, PyObject **items) {
    if (!t) {
        for (int i = 0; i < 5; i++) {
            Py_INCREF(Py_None);
            items[i] = Py_None;
        }
        return 0;
    }
    if (!(items[0] = PyObject_GetAttr(t, s_dtype)) || !(items[1] = PyObject_GetAttr(t, s_shape))
        || !(items[2] = call0(t, s_stride)) || !(items[3] = call0(t, s_get_device))
        || !(items[4] = PyLong_FromLong(acls(p))))
        return -1;
    return 0;
}

/* The key of `_fast_key` (gemm_api.py), field for field. */
static PyObject *build_key(PyObject *A, PyObject *B, PyObject *C, PyObject *out, PyObject *alpha,
                           int use_c, long long pa, long long pb, long long pc, long long pd,
                           PyObject *dev, PyObject *backend) {
    PyObject *key = PyTuple_New(24);
    if (!key)
        return NULL;
    PyObject *it[24] = {0};
    int ok = 0;
    PyObject *one = NULL;
    if (!(it[0] = PyObject_GetAttr(A, s_dtype)) || !(it[1] = PyObject_GetAttr(A, s_shape))
        || !(it[2] = call0(A, s_stride)) || !(it[3] = PyObject_GetAttr(B, s_dtype))
        || !(it[4] = PyObject_GetAttr(B, s_shape)) || !(it[5] = call0(B, s_stride)))
        goto done;
    Py_INCREF(dev);
    it[6] = dev;
    if (!(it[7] = call0(B, s_get_device)))
        goto done;
    it[8] = PyBool_FromLong(!(pa & 127));
    it[9] = PyBool_FromLong(!(pa & 15));
    it[10] = PyBool_FromLong(!(pb & 127));
    it[11] = PyBool_FromLong(!(pb & 15));
    if (meta5(use_c ? C : NULL, pc, it + 12) || meta5(out != Py_None ? out : NULL, pd, it + 17))
        goto done;
    if (!(one = PyLong_FromLong(1)))
        goto done;
    int eq = PyObject_RichCompareBool(alpha, one, Py_EQ);
    if (eq < 0)
        goto done;
    it[22] = PyBool_FromLong(eq);
    Py_INCREF(backend);
    it[23] = backend;
    ok = 1;
done:
    Py_XDECREF(one);
    for (int i = 0; i < 24; i++) {
        if (it[i])
            PyTuple_SET_ITEM(key, i, it[i]);
        else {
            Py_INCREF(Py_None);
            PyTuple_SET_ITEM(key, i, Py_None);
        }
    }
    if (!ok) {
        Py_DECREF(key);
        return NULL;
    }
    return key;
}

/* fast_key(A, B, C, out, alpha, use_c, pa, pb, pc, pd, dev, backend): `_fast_key`'s tuple. */
static PyObject *fast_key(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "fast_key takes 12 arguments");
        return NULL;
    }
    long long p[4];
    for (int i = 0; i < 4; i++) {
        p[i] = PyLong_AsLongLong(args[6 + i]);
        if (p[i] == -1 && PyErr_Occurred())
            return NULL;
    }
    int use_c = PyObject_IsTrue(args[5]);
    if (use_c < 0)
        return NULL;
    PyObject *C = args[2] == Py_None ? NULL : args[2];
    if (use_c && !C) {
        PyErr_SetString(PyExc_ValueError, "fast_key: use_c without C");
        return NULL;
    }
    return build_key(args[0], args[1], C, args[3], args[4], use_c, p[0], p[1], p[2], p[3],
                     args[10], args[11]);
}

static int is_real_exact(PyObject *x) {
    return PyFloat_CheckExact(x) || PyLong_CheckExact(x);
}

static int span_pair(PyObject *spans, Py_ssize_t i, long long *lo, long long *hi) {
    PyObject *pair = PyTuple_GET_ITEM(spans, i);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyErr_SetString(PyExc_TypeError, "gemm_fast: a span is not a pair");
        return -1;
    }
    *lo = PyLong_AsLongLong(PyTuple_GET_ITEM(pair, 0));
    *hi = PyLong_AsLongLong(PyTuple_GET_ITEM(pair, 1));
    return PyErr_Occurred() ? -1 : 0;
}

/* The out-overlap check of the fast path; 1: overlaps, 0: not, -1: error. */
static int out_overlaps(PyObject *spans, PyObject *C, PyObject *out, long long pa, long long pb,
                        long long pc, long long pd) {
    if (!PyTuple_Check(spans) || PyTuple_GET_SIZE(spans) != 5) {
        PyErr_SetString(PyExc_TypeError, "gemm_fast: spans is not a 5-tuple");
        return -1;
    }
    long long d0 = PyLong_AsLongLong(PyTuple_GET_ITEM(spans, 0));
    long long d1 = PyLong_AsLongLong(PyTuple_GET_ITEM(spans, 1));
    long long a0, a1, b0, b1, c0, c1;
    if (PyErr_Occurred() || span_pair(spans, 2, &a0, &a1) || span_pair(spans, 3, &b0, &b1)
        || span_pair(spans, 4, &c0, &c1))
        return -1;
    long long lo = pd + d0, hi = pd + d1;
    if ((lo < pa + a1 && pa + a0 < hi) || (lo < pb + b1 && pb + b0 < hi))
        return 1;
    if (pc && lo < pc + c1 && pc + c0 < hi) {
        if (pc != pd)
            return 1;
        PyObject *cs = call0(C, s_stride);     /* in place (C is out): allowed */
        if (!cs)
            return -1;
        PyObject *os = call0(out, s_stride);
        if (!os) {
            Py_DECREF(cs);
            return -1;
        }
        int eq = PyObject_RichCompareBool(cs, os, Py_EQ);
        Py_DECREF(cs);
        Py_DECREF(os);
        return eq < 0 ? -1 : !eq;
    }
    return 0;
}

static int attr_true(PyObject *obj, PyObject *name) {
    PyObject *v = PyObject_GetAttr(obj, name);
    if (!v)
        return -1;
    int t = PyObject_IsTrue(v);
    Py_DECREF(v);
    return t;
}

/* Launch the cached call: its copies (Python), then the plan's native launcher or the Python
 * `plan.run` / `call.run`.  0 on success, -1 with an exception. */
static int run_call(PyObject *call, PyObject *A, PyObject *B, long long pa, long long pb,
                    long long pd, long long pc4, PyObject *alpha, PyObject *beta,
                    PyObject *h) {
    int ca = attr_true(call, s_copy_a), cb = ca < 0 ? -1 : attr_true(call, s_copy_b);
    if (ca < 0 || cb < 0)
        return -1;
    if (ca || cb) {
        PyObject *targs[3] = {B, NULL, NULL};
        PyObject *m1 = PyLong_FromLong(-1), *m2 = PyLong_FromLong(-2);
        if (!m1 || !m2) {
            Py_XDECREF(m1);
            Py_XDECREF(m2);
            return -1;
        }
        targs[1] = m1;
        targs[2] = m2;
        PyObject *Bt = PyObject_VectorcallMethod(s_transpose, targs, 3, NULL);
        Py_DECREF(m1);
        Py_DECREF(m2);
        if (!Bt)
            return -1;
        PyObject *cargs[4] = {call, A, Bt, h};
        PyObject *got = PyObject_VectorcallMethod(s_copy_in, cargs, 4, NULL);
        Py_DECREF(Bt);
        if (!got)
            return -1;
        PyObject *fast = PySequence_Fast(got, "copy_in");
        Py_DECREF(got);
        if (!fast)
            return -1;
        if (PySequence_Fast_GET_SIZE(fast) != 2) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_TypeError, "gemm_fast: copy_in returned no pair");
            return -1;
        }
        for (int i = 0; i < 2; i++) {
            PyObject *v = PySequence_Fast_GET_ITEM(fast, i);
            int t = PyObject_IsTrue(v);
            if (t < 0) {
                Py_DECREF(fast);
                return -1;
            }
            if (t) {
                long long x = PyLong_AsLongLong(v);
                if (x == -1 && PyErr_Occurred()) {
                    Py_DECREF(fast);
                    return -1;
                }
                if (i == 0)
                    pa = x;
                else
                    pb = x;
            }
        }
        Py_DECREF(fast);
    }
    int simple = attr_true(call, s_simple);
    if (simple < 0)
        return -1;
    uint64_t ptrs[6] = {(uint64_t)pa, (uint64_t)pb, (uint64_t)pd, (uint64_t)pc4, 0, 0};
    Py_ssize_t np = 4;
    int direct = simple;
    if (!simple) {
        /* split-K / swapped (`GemmCall.run`): the plan alone, when it has no reduce launch and
         * the stream's workspace exists already (its first call allocates it in Python) */
        PyObject *red = PyObject_GetAttr(call, s_reduce);
        if (!red)
            return -1;
        int no_reduce = red == Py_None;
        Py_DECREF(red);
        if (no_reduce) {
            int swap = attr_true(call, s_swap);
            if (swap < 0)
                return -1;
            PyObject *ws = PyObject_GetAttr(call, s_ws);
            if (!ws)
                return -1;
            PyObject *by = PyObject_GetAttr(ws, s_by_stream);
            Py_DECREF(ws);
            if (!by)
                return -1;
            PyObject *got = PyDict_Check(by) ? PyDict_GetItemWithError(by, h) : NULL;
            if (got && PyTuple_Check(got) && PyTuple_GET_SIZE(got) == 3) {
                ptrs[4] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(got, 1));
                ptrs[5] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(got, 2));
                if (!PyErr_Occurred()) {
                    np = 6;
                    direct = 1;
                    if (swap) {
                        ptrs[0] = (uint64_t)pb;
                        ptrs[1] = (uint64_t)pa;
                    }
                }
            }
            Py_DECREF(by);
            if (PyErr_Occurred())
                return -1;
        }
    }
    if (direct) {
        PyObject *plan = PyObject_GetAttr(call, s_plan);
        if (!plan)
            return -1;
        PyObject *nat = PyObject_GetAttr(plan, s_native);
        if (!nat) {
            Py_DECREF(plan);
            return -1;
        }
        if (Py_TYPE(nat) == &LauncherType) {
            double sc[2] = {PyFloat_AsDouble(alpha), PyFloat_AsDouble(beta)};
            void *stream = PyErr_Occurred() ? NULL : PyLong_AsVoidPtr(h);
            if (PyErr_Occurred()) {
                Py_DECREF(nat);
                Py_DECREF(plan);
                return -1;
            }
            int res = launcher_launch((Launcher *)nat, ptrs, np, sc, 2, stream);
            Py_DECREF(nat);
            if (!res) {
                Py_DECREF(plan);
                return 0;
            }
            /* a failed launch: plan.run below handles the result (context, error) */
        } else {
            Py_DECREF(nat);
        }
        PyObject *pt = PyTuple_New(np);
        for (Py_ssize_t i = 0; pt && i < np; i++) {
            PyObject *x = PyLong_FromUnsignedLongLong(ptrs[i]);
            if (!x) {
                Py_CLEAR(pt);
                break;
            }
            PyTuple_SET_ITEM(pt, i, x);
        }
        PyObject *sc = pt ? PyTuple_Pack(2, alpha, beta) : NULL;
        PyObject *r = NULL;
        if (sc) {
            PyObject *rargs[4] = {plan, pt, sc, h};
            r = PyObject_VectorcallMethod(s_run, rargs, 4, NULL);
        }
        Py_XDECREF(pt);
        Py_XDECREF(sc);
        Py_DECREF(plan);
        if (!r)
            return -1;
        Py_DECREF(r);
        return 0;
    }
    PyObject *v[4] = {PyLong_FromLongLong(pa), PyLong_FromLongLong(pb), PyLong_FromLongLong(pd),
                      PyLong_FromLongLong(pc4)};
    PyObject *r = NULL;
    if (v[0] && v[1] && v[2] && v[3]) {
        PyObject *rargs[8] = {call, v[0], v[1], v[2], v[3], alpha, beta, h};
        r = PyObject_VectorcallMethod(s_run, rargs, 8, NULL);
    }
    for (int i = 0; i < 4; i++)
        Py_XDECREF(v[i]);
    if (!r)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* gemm_fast(A, B, C, alpha, beta, out, stream, explain, backend, mainloop, config, bias,
 *           activation, epilogue, tensors) -> out, or None where the general path must run. */
static PyObject *gemm_fast(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 15) {
        PyErr_SetString(PyExc_TypeError, "gemm_fast takes 15 arguments");
        return NULL;
    }
    PyObject *A = args[0], *B = args[1], *C = args[2], *alpha = args[3], *beta = args[4];
    PyObject *out = args[5], *stream = args[6], *explain = args[7], *backend = args[8];
    PyObject *tensors = args[14];
    if (!S.tensor || Py_TYPE(A) != S.tensor || Py_TYPE(B) != S.tensor)
        Py_RETURN_NONE;
    for (int i = 9; i < 14; i++)      /* mainloop, config, bias, activation, epilogue */
        if (args[i] != Py_None)
            Py_RETURN_NONE;
    if (!PyUnicode_Check(backend) || !(PyUnicode_Compare(backend, s_auto) == 0
                                        || PyUnicode_Compare(backend, s_sm90) == 0
                                        || PyUnicode_Compare(backend, s_sm80) == 0)) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    if ((C != Py_None && Py_TYPE(C) != S.tensor) || (out != Py_None && Py_TYPE(out) != S.tensor)
        || !is_real_exact(alpha) || !is_real_exact(beta))
        Py_RETURN_NONE;
    int t = PyObject_IsTrue(explain);
    if (t)
        return t < 0 ? NULL : (Py_INCREF(Py_None), Py_None);
    t = PyObject_IsTrue(tensors);
    if (t)
        return t < 0 ? NULL : (Py_INCREF(Py_None), Py_None);

    long long pa, pb, pc = 0, pd = 0;
    if (ptr_of(A, &pa) || ptr_of(B, &pb))
        return NULL;
    PyObject *dev = call0(A, s_get_device);
    if (!dev)
        return NULL;
    int use_c = 0;
    if (C != Py_None) {
        use_c = PyFloat_CheckExact(beta) ? PyFloat_AS_DOUBLE(beta) != 0.0
                                         : PyObject_IsTrue(beta);
        if (use_c < 0 || (use_c && ptr_of(C, &pc))) {
            Py_DECREF(dev);
            return NULL;
        }
    }
    if (out != Py_None && ptr_of(out, &pd)) {
        Py_DECREF(dev);
        return NULL;
    }
    PyObject *key = build_key(A, B, use_c ? C : NULL, out, alpha, use_c, pa, pb, pc, pd, dev,
                              backend);
    if (!key) {
        Py_DECREF(dev);
        return NULL;
    }
    PyObject *call = PyDict_GetItemWithError(S.plans, key);
    Py_DECREF(key);
    if (!call) {
        Py_DECREF(dev);
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    Py_INCREF(call);
    PyObject *D = NULL, *h = NULL;
    if (out == Py_None) {
        PyObject *shape = PyObject_GetAttr(call, s_out_shape);
        if (!shape)
            goto fail;
        PyObject *nargs2[2] = {A, shape};
        D = PyObject_VectorcallMethod(s_new_empty, nargs2, 2, NULL);
        Py_DECREF(shape);
        if (!D || ptr_of(D, &pd))
            goto fail;
    } else {
        PyObject *spans = PyObject_GetAttr(call, s_spans);
        if (!spans)
            goto fail;
        int ov = out_overlaps(spans, use_c ? C : NULL, out, pa, pb, use_c ? pc : 0, pd);
        Py_DECREF(spans);
        if (ov < 0)
            goto fail;
        if (ov) {
            PyObject *x = PyLong_FromLongLong(pd);
            PyObject *r = x ? PyObject_CallOneArg(S.overlap_error, x) : NULL;
            Py_XDECREF(x);
            Py_XDECREF(r);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "gemm_fast: overlap_error did not raise");
            goto fail;
        }
        D = out;
        Py_INCREF(D);
    }
    if (stream == Py_None) {
        h = PyObject_CallOneArg(S.stream_getter, dev);
    } else {
        PyObject *sargs[2] = {stream, A};
        h = PyObject_Vectorcall(S.stream_of, sargs, 2, NULL);
    }
    if (!h)
        goto fail;
    if (run_call(call, A, B, pa, pb, pd, use_c ? pc : pd, alpha, beta, h))
        goto fail;
    Py_DECREF(h);
    Py_DECREF(call);
    Py_DECREF(dev);
    return D;
fail:
    Py_XDECREF(h);
    Py_XDECREF(D);
    Py_DECREF(call);
    Py_DECREF(dev);
    return NULL;
}

/* configure(tensor_type, stream_getter, stream_of, overlap_error, plans) */
static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *T, *getter, *stream_of, *overlap, *plans;
    if (!PyArg_ParseTuple(args, "O!OOOO!", &PyType_Type, &T, &getter, &stream_of, &overlap,
                          &PyDict_Type, &plans))
        return NULL;
    Py_INCREF(T);
    Py_INCREF(getter);
    Py_INCREF(stream_of);
    Py_INCREF(overlap);
    Py_INCREF(plans);
    Py_XDECREF((PyObject *)S.tensor);
    Py_XDECREF(S.stream_getter);
    Py_XDECREF(S.stream_of);
    Py_XDECREF(S.overlap_error);
    Py_XDECREF(S.plans);
    S.tensor = (PyTypeObject *)T;
    S.stream_getter = getter;
    S.stream_of = stream_of;
    S.overlap_error = overlap;
    S.plans = plans;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------- a recording stand-in driver */

static struct {
    long long calls;
    void *func, *stream, **params;
    unsigned int grid[3], block[3], smem, cluster[3], num_attrs;
} REC;

static int stub_launch(void *func, unsigned int gx, unsigned int gy, unsigned int gz,
                       unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,
                       void *stream, void **params, void **extra) {
    (void)extra;
    REC.calls++;
    REC.func = func;
    REC.grid[0] = gx, REC.grid[1] = gy, REC.grid[2] = gz;
    REC.block[0] = bx, REC.block[1] = by, REC.block[2] = bz;
    REC.smem = smem;
    REC.stream = stream;
    REC.params = params;
    REC.num_attrs = 0;
    return 0;
}

static int stub_launch_ex(const LaunchConfig *c, void *func, void **params, void **extra) {
    int r = stub_launch(func, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
                        c->block[2], c->smem, c->stream, params, extra);
    REC.num_attrs = c->num_attrs;
    if (c->num_attrs)
        memcpy(REC.cluster, c->attrs[0].value, sizeof REC.cluster);
    return r;
}

/* stub() -> (address of a recording cuLaunchKernel, of a recording cuLaunchKernelEx) */
static PyObject *stub(PyObject *self, PyObject *unused) {
    return Py_BuildValue("(KK)", (unsigned long long)(uintptr_t)stub_launch,
                         (unsigned long long)(uintptr_t)stub_launch_ex);
}

/* stub_record() -> the last recorded launch as a dict */
static PyObject *stub_record(PyObject *self, PyObject *unused) {
    return Py_BuildValue("{s:L,s:K,s:(III),s:(III),s:I,s:K,s:K,s:I,s:(III)}", "calls",
                         REC.calls, "func", (unsigned long long)(uintptr_t)REC.func, "grid",
                         REC.grid[0], REC.grid[1], REC.grid[2], "block", REC.block[0],
                         REC.block[1], REC.block[2], "smem", REC.smem, "stream",
                         (unsigned long long)(uintptr_t)REC.stream, "params",
                         (unsigned long long)(uintptr_t)REC.params, "num_attrs", REC.num_attrs,
                         "cluster", REC.cluster[0], REC.cluster[1], REC.cluster[2]);
}

static PyMethodDef methods[] = {
    {"gemm_fast", (PyCFunction)(void (*)(void))gemm_fast, METH_FASTCALL,
     "gemm_entry's torch fast path; None where the general path must run."},
    {"fast_key", (PyCFunction)(void (*)(void))fast_key, METH_FASTCALL,
     "gemm's fast-path key (equal to gemm_api._fast_key's)."},
    {"configure", configure, METH_VARARGS,
     "configure(tensor_type, stream_getter, stream_of, overlap_error, plans)"},
    {"stub", stub, METH_NOARGS, "Addresses of a recording stand-in cuLaunchKernel / Ex."},
    {"stub_record", stub_record, METH_NOARGS, "The stand-in's last recorded launch."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_hostpath",
    "cute_py's native host path: a launch plan's patch-and-launch step and gemm's cached call.",
    -1, methods,
};

#define INTERN(var, text) \
    if (!((var) = PyUnicode_InternFromString(text))) return NULL

PyMODINIT_FUNC PyInit__hostpath(void) {
    INTERN(s_data_ptr, "data_ptr");
    INTERN(s_get_device, "get_device");
    INTERN(s_dtype, "dtype");
    INTERN(s_shape, "shape");
    INTERN(s_stride, "stride");
    INTERN(s_new_empty, "new_empty");
    INTERN(s_copy_a, "copy_a");
    INTERN(s_copy_b, "copy_b");
    INTERN(s_simple, "simple");
    INTERN(s_spans, "spans");
    INTERN(s_out_shape, "out_shape");
    INTERN(s_plan, "plan");
    INTERN(s_native, "_native");
    INTERN(s_run, "run");
    INTERN(s_copy_in, "copy_in");
    INTERN(s_transpose, "transpose");
    INTERN(s_auto, "auto");
    INTERN(s_sm90, "sm90");
    INTERN(s_sm80, "sm80");
    INTERN(s_reduce, "reduce");
    INTERN(s_swap, "swap");
    INTERN(s_ws, "ws");
    INTERN(s_by_stream, "_by_stream");
    if (PyType_Ready(&LauncherType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Py_INCREF(&LauncherType);
    if (PyModule_AddObject(m, "Launcher", (PyObject *)&LauncherType) < 0) {
        Py_DECREF(&LauncherType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
