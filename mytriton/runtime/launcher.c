/* mytriton's native launch path: the hot half of the runtime's generated launchers, in C.
 *
 * The pure-Python launchers of runtime/driver.py cost ~0.5-1 us of Python per launch on top of a
 * ~4-5 us driver call.  This module does their common case in one call: read each argument
 * (int addresses, DeviceArray, torch.Tensor, Python ints / floats / bools), check it exactly as
 * the Python path does, pack it on the C stack and call cuLaunchKernel with the GIL released.
 * A DeviceArray's or tensor's device must be the device of the context the thread launched in
 * last (the function it is given belongs there); int addresses mean that context.
 * Anything else -- an argument kind it does not read, memory on another device, a value the
 * Python path would reject, a failed launch -- returns -1 before or instead of launching, and
 * the Python path then checks, explains and launches (in the right context).  So the two paths accept the same calls and pass the same bytes
 * (tests/test_native_launcher.py compares them), and every error message comes from Python.
 *
 * Built by mytriton-build against the stable ABI (Py_LIMITED_API, CPython >= 3.10) and shipped
 * in the generated package as _mtlaunch.abi3.so; it links against nothing but libc and gets
 * cuLaunchKernel's address from the runtime.
 *
 *   configure(entry, device_array_type, tensor_info) -> None
 *       entry: address of cuLaunchKernel; tensor_info: [torch.Tensor or None, {torch dtype: "fp32"},
 *       accessors or None, (subclasses read as torch.Tensor is)] (a list the runtime fills in when
 *       it first sees a tensor); accessors: (offset of the TensorImpl pointer, addresses of
 *       aoti_torch_get_data_ptr, _get_dtype, _get_device_type, _get_device_index, the device type
 *       code of CUDA); the subclasses (torch.nn.Parameter, Buffer) are read through the accessors
 *       only.
 *   launch(spec, (fn, device), gx, gy, gz, stream, *args) -> int
 *       spec: (block threads, dynamic shared bytes, kinds, dtypes) of one kernel: kinds holds two
 *       bytes per parameter (a struct code, or 'P' for a pointer, then the promised alignment or
 *       divisor, 0 for none), dtypes the dtype string of each pointer parameter.  fn: the
 *       CUfunction's address, device: the ordinal of the device of its context.
 *       Returns the CUresult of the launch, or -1: "use the Python path".
 *   launch((block, shared, kinds, dtypes, checks, twin shared), (fn, device, twin fn), ...) -> int
 *       the same for a kernel with a specialized variant (its twin, built with more promises):
 *       checks holds two bytes per parameter ('1', 0: the twin compiled the value 1 in and does
 *       not take it; 'A' and the alignment or divisor, 0 where it is over 255; '-', 0: nothing
 *       more); where every argument, as read, keeps them, the twin function runs on the same
 *       argument bytes less those it compiled in, with its own shared memory (a twin fn of 0, not
 *       loaded in the context yet: -1, the Python path loads it); else fn. A function pair
 *       without the twin's (its images cannot run on this device) runs fn.
 *
 * A DeviceArray's (address, dtype, device) is its one attribute _launch.  A tensor is read through
 * PyTorch's stable C accessors where the runtime found and checked them (tensor_info[2], see
 * driver._tensor_accessors): the TensorImpl pointer at a fixed offset of the tensor object, then
 * aoti_torch_get_device_type / _device_index / _dtype / _data_ptr on it -- a few nanoseconds each,
 * no Python objects made.  Those read the tensor as it is now (`t.data = ...` changes it in place),
 * so nothing is cached but the map from PyTorch's dtype codes to ours (fixed in a process).
 * Otherwise it calls get_device(), .dtype and data_ptr(): the C functions behind them are looked
 * up once per tensor class (each method's PyCFunction and calling convention, the dtype
 * descriptor's getter) and called directly; where they are not plain C methods, the ordinary way.
 * Measured on an H200 host, those three calls cost 200-290 ns a tensor (PyTorch's argument parser,
 * a new int for the address): three tensors made a launch 8-14 % slower than one of int addresses.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                         unsigned shared, void *stream, void **params, void **extra);

#define MAX_PARAMS 64
#define PYTHON_PATH (-1)

static launch_fn entry = NULL;
static PyObject *device_array_type = NULL;   /* strong references, set by configure() */
static PyObject *tensor_info = NULL;
static PyObject *s_launch, *s_get_device, *s_dtype, *s_data_ptr, *empty_tuple;

/* One no-argument method of the tensor class: its C function where it is a plain METH_NOARGS or
 * METH_VARARGS(|METH_KEYWORDS) C method, else NULL and it is called by name. */
typedef struct {
    PyObject *name;
    void *function;
    int flags;
} method;

static PyObject *described_type = NULL;                 /* the tensor class the below describe */
static method get_device_method, data_ptr_method;
static PyObject *dtype_descriptor = NULL;               /* the class's .dtype data descriptor */
static descrgetfunc dtype_get = NULL;                   /* and its getter */

/* PyTorch's stable C accessors of a tensor (its AOTInductor shim): error code 0 on success. */
typedef int32_t (*address_accessor)(void *tensor, void **out);
typedef int32_t (*code_accessor)(void *tensor, int32_t *out);
static Py_ssize_t impl_offset = -1;                     /* -1: no accessors, call the methods */
static address_accessor get_data_ptr;
static code_accessor get_dtype, get_device_type, get_device_index;
static int32_t cuda_device_type;
#define DTYPE_CODES 64
static PyObject *dtype_of_code[DTYPE_CODES];            /* PyTorch's dtype code -> ours (strong refs) */

static void forget_tensor_type(void) {
    Py_CLEAR(described_type);
    impl_offset = -1;
    for (int i = 0; i < DTYPE_CODES; i++)
        Py_CLEAR(dtype_of_code[i]);
}

static PyObject *configure(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3 || !PyList_Check(args[2]) || PyList_Size(args[2]) != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "configure(entry, device_array_type, [tensor_type, tensor_dtypes, accessors, alike])");
        return NULL;
    }
    void *address = PyLong_AsVoidPtr(args[0]);
    if (address == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "configure: null cuLaunchKernel address");
        return NULL;
    }
    entry = (launch_fn)address;
    PyObject *old_type = device_array_type, *old_info = tensor_info;
    Py_INCREF(args[1]);
    Py_INCREF(args[2]);
    device_array_type = args[1];
    tensor_info = args[2];
    Py_XDECREF(old_type);
    Py_XDECREF(old_info);
    forget_tensor_type();
    Py_RETURN_NONE;
}

/* An exact int as uint64 into *out; 0 when it is not one or does not fit. */
static int exact_u64(PyObject *v, uint64_t *out) {
    if (!PyLong_CheckExact(v))
        return 0;
    *out = PyLong_AsUnsignedLongLong(v);
    if (*out == (uint64_t)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

static int same_string(PyObject *a, PyObject *b) {
    return a == b || PyObject_RichCompareBool(a, b, Py_EQ) == 1;
}

/* An exact int equal to `device`. */
static int is_device(PyObject *v, long device) {
    if (v == NULL || !PyLong_CheckExact(v))
        return 0;
    long d = PyLong_AsLong(v);
    return d == device && !(d == -1 && PyErr_Occurred());
}

/* Find a method's C function from one instance (a bound builtin method whose self is it). */
static void describe_method(PyObject *instance, method *m) {
    m->function = NULL;
    PyObject *bound = PyObject_GetAttr(instance, m->name);
    if (bound != NULL && PyCFunction_Check(bound) && PyCFunction_GetSelf(bound) == instance) {
        int flags = PyCFunction_GetFlags(bound);
        if (flags == METH_NOARGS || flags == METH_VARARGS || flags == (METH_VARARGS | METH_KEYWORDS)) {
            m->function = (void *)PyCFunction_GetFunction(bound);
            m->flags = flags;
        }
    }
    Py_XDECREF(bound);
    PyErr_Clear();
}

/* The accessors of tensor_info[2]: (offset, 4 addresses, CUDA's code), all ints; 0 if not those. */
static int read_accessors(PyObject *accessors) {
    if (accessors == NULL || !PyTuple_Check(accessors) || PyTuple_Size(accessors) != 6)
        return 0;
    void *fn[4];
    Py_ssize_t offset = PyLong_AsSsize_t(PyTuple_GetItem(accessors, 0));
    long cuda = PyLong_AsLong(PyTuple_GetItem(accessors, 5));
    for (int i = 0; i < 4; i++)
        fn[i] = PyLong_AsVoidPtr(PyTuple_GetItem(accessors, 1 + i));
    if (PyErr_Occurred() || offset < 0 || offset % (Py_ssize_t)sizeof(void *) || !fn[0] || !fn[1] || !fn[2] ||
        !fn[3] || cuda < INT32_MIN || cuda > INT32_MAX) {
        PyErr_Clear();
        return 0;
    }
    get_data_ptr = (address_accessor)fn[0];
    get_dtype = (code_accessor)fn[1];
    get_device_type = (code_accessor)fn[2];
    get_device_index = (code_accessor)fn[3];
    cuda_device_type = (int32_t)cuda;
    impl_offset = offset;
    return 1;
}

/* Describe the tensor class of `instance` (kept while it is torch.Tensor). */
static int describe_tensor_type(PyObject *type, PyObject *instance) {
    forget_tensor_type();
    read_accessors(PyList_GetItem(tensor_info, 2));     /* else impl_offset stays -1: the methods */
    PyObject *dtype = PyObject_GetAttr(type, s_dtype);  /* a data descriptor: no instance attribute hides it */
    Py_XDECREF(dtype_descriptor);
    dtype_descriptor = dtype, dtype_get = NULL;
    if (dtype != NULL && PyType_GetSlot(Py_TYPE(dtype), Py_tp_descr_set) != NULL)
        dtype_get = (descrgetfunc)PyType_GetSlot(Py_TYPE(dtype), Py_tp_descr_get);
    PyErr_Clear();
    describe_method(instance, &get_device_method);
    describe_method(instance, &data_ptr_method);
    Py_INCREF(type);
    described_type = type;
    return 1;
}

/* Call a tensor method without arguments (new reference, or NULL with an exception set). */
static PyObject *call_method(PyObject *v, method *m) {
    if (m->function == NULL)
        return PyObject_CallMethodObjArgs(v, m->name, NULL);
    if (m->flags == METH_NOARGS)
        return ((PyCFunction)m->function)(v, NULL);
    if (m->flags == METH_VARARGS)
        return ((PyCFunction)m->function)(v, empty_tuple);
    return ((PyCFunctionWithKeywords)m->function)(v, empty_tuple, NULL);
}

/* Our dtype string of a tensor whose dtype .dtype reads (borrowed; NULL when the runtime has not
 * seen that dtype yet or it is none of ours). */
static PyObject *our_dtype(PyObject *v, PyObject *type) {
    PyObject *torch_dtype = dtype_get ? dtype_get(dtype_descriptor, v, type) : PyObject_GetAttr(v, s_dtype);
    if (torch_dtype == NULL)
        return NULL;
    PyObject *ours = PyDict_GetItemWithError(PyList_GetItem(tensor_info, 1), torch_dtype);
    Py_DECREF(torch_dtype);
    return ours;
}

/* A tensor through PyTorch's C accessors: its address when it is a CUDA tensor on `device` of
 * dtype `want`, else 0 (the Python path explains). */
static int read_tensor_directly(PyObject *v, PyObject *type, PyObject *want, long device, uint64_t *out) {
    void *impl = *(void **)((char *)v + impl_offset);   /* an at::Tensor is one TensorImpl pointer */
    void *tensor = &impl;
    int32_t device_type, index, code;
    void *address;
    if (get_device_type(tensor, &device_type) || device_type != cuda_device_type ||
        get_device_index(tensor, &index) || index != device || get_dtype(tensor, &code) || code < 0 ||
        code >= DTYPE_CODES)
        return 0;
    PyObject *ours = dtype_of_code[code];
    if (ours == NULL) {                                 /* first tensor of this dtype: learn its code */
        if ((ours = our_dtype(v, type)) == NULL)
            return 0;
        Py_INCREF(ours);
        dtype_of_code[code] = ours;
    }
    if (!same_string(ours, want) || get_data_ptr(tensor, &address))
        return 0;
    *out = (uint64_t)(uintptr_t)address;
    return 1;
}

/* A subclass of torch.Tensor that tensor_info[3] lists (read as a tensor is, through the accessors). */
static int tensor_alike(PyObject *type) {
    PyObject *alike = PyList_GetItem(tensor_info, 3);
    if (alike == NULL || !PyTuple_Check(alike))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_Size(alike); i++)
        if (PyTuple_GetItem(alike, i) == type)
            return 1;
    return 0;
}

/* The address of a pointer argument whose dtype is `want` and whose memory is on `device`
 * (any for int addresses), or 0 when the Python path must look. */
static int read_pointer(PyObject *v, PyObject *want, long device, uint64_t *out) {
    if (PyLong_CheckExact(v))
        return exact_u64(v, out);
    PyObject *type = (PyObject *)Py_TYPE(v), *tensor_type;
    int ok = 0;
    if (type == device_array_type) {
        PyObject *tag = PyObject_GetAttr(v, s_launch);      /* (address, dtype string, device) */
        ok = tag != NULL && PyTuple_Check(tag) && PyTuple_Size(tag) == 3 &&
             same_string(PyTuple_GetItem(tag, 1), want) && is_device(PyTuple_GetItem(tag, 2), device) &&
             exact_u64(PyTuple_GetItem(tag, 0), out);
        Py_XDECREF(tag);
    } else if ((tensor_type = PyList_GetItem(tensor_info, 0)) != Py_None && tensor_type != NULL &&
               (type == tensor_type || tensor_alike(type)) &&
               (tensor_type == described_type || describe_tensor_type(tensor_type, v))) {
        if (impl_offset >= 0)
            ok = read_tensor_directly(v, type, want, device, out);
        else if (type == tensor_type) {
            PyObject *dev = call_method(v, &get_device_method);
            if (is_device(dev, device)) {
                PyObject *ours = our_dtype(v, type);
                if (ours != NULL && same_string(ours, want)) {
                    PyObject *ptr = call_method(v, &data_ptr_method);
                    ok = ptr != NULL && exact_u64(ptr, out);
                    Py_XDECREF(ptr);
                }
            }
            Py_XDECREF(dev);
        }
    }
    if (PyErr_Occurred())
        PyErr_Clear();
    return ok;
}

/* One scalar argument by its struct code, with struct's range rules; 0 when the Python path must look. */
static int read_scalar(PyObject *v, char code, unsigned divisor, uint64_t *slot) {
    if (code == '?') {                       /* i1: a bool (the Python path also takes 0 / 1) */
        if (v != Py_True && v != Py_False)
            return 0;
        unsigned char b = v == Py_True;
        memcpy(slot, &b, 1);
        return 1;
    }
    if (code == 'f' || code == 'd') {        /* struct takes floats and ints */
        double x;
        if (PyFloat_CheckExact(v))
            x = PyFloat_AsDouble(v);
        else if (PyLong_CheckExact(v)) {
            x = PyLong_AsDouble(v);
            if (x == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
        } else
            return 0;
        if (code == 'd') {
            memcpy(slot, &x, 8);
            return 1;
        }
        float y = (float)x;
        if (isinf(y) && !isinf(x))           /* struct raises OverflowError */
            return 0;
        memcpy(slot, &y, 4);
        return 1;
    }
    if (!PyLong_CheckExact(v))               /* bools, numpy ints, ...: the Python path */
        return 0;
    int overflow = 0;
    if (code == 'Q') {
        uint64_t u;
        if (!exact_u64(v, &u) || (divisor > 1 && u % divisor))
            return 0;
        memcpy(slot, &u, 8);
        return 1;
    }
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    if (divisor > 1 && x % (long long)divisor)
        return 0;
    switch (code) {
    case 'b': if (x < INT8_MIN || x > INT8_MAX) return 0; { int8_t t = (int8_t)x; memcpy(slot, &t, 1); } return 1;
    case 'B': if (x < 0 || x > UINT8_MAX) return 0; { uint8_t t = (uint8_t)x; memcpy(slot, &t, 1); } return 1;
    case 'h': if (x < INT16_MIN || x > INT16_MAX) return 0; { int16_t t = (int16_t)x; memcpy(slot, &t, 2); } return 1;
    case 'H': if (x < 0 || x > UINT16_MAX) return 0; { uint16_t t = (uint16_t)x; memcpy(slot, &t, 2); } return 1;
    case 'i': if (x < INT32_MIN || x > INT32_MAX) return 0; { int32_t t = (int32_t)x; memcpy(slot, &t, 4); } return 1;
    case 'I': if (x < 0 || x > UINT32_MAX) return 0; { uint32_t t = (uint32_t)x; memcpy(slot, &t, 4); } return 1;
    case 'q': memcpy(slot, &x, 8); return 1;
    default: return 0;                       /* fp16, bf16, ...: the Python path */
    }
}

/* Whether the arguments as read (slots) keep every promise `checks` lists (see launch()); -1 where
 * one cannot be checked here (an alignment over 255). */
static int twin_holds(const char *checks, Py_ssize_t n, const uint64_t *slots) {
    for (Py_ssize_t i = 0; i < n; i++) {
        char code = checks[2 * i];
        unsigned aux = (unsigned char)checks[2 * i + 1];
        if (code == '1' && slots[i] != 1)
            return 0;
        if (code == 'A' && aux == 0)
            return -1;
        if (code == 'A' && slots[i] & (aux - 1))        /* (a power of two: parse_type) */
            return 0;
    }
    return 1;
}

static PyObject *launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Py_ssize_t spec_size = nargs >= 6 && PyTuple_Check(args[0]) ? PyTuple_Size(args[0]) : 0;
    if (entry == NULL || (spec_size != 4 && spec_size != 6))
        return PyLong_FromLong(PYTHON_PATH);
    PyObject *spec = args[0];
    char *kinds;
    Py_ssize_t nkinds;
    if (PyBytes_AsStringAndSize(PyTuple_GetItem(spec, 2), &kinds, &nkinds) < 0) {
        PyErr_Clear();
        return PyLong_FromLong(PYTHON_PATH);
    }
    Py_ssize_t n = nkinds / 2;
    PyObject *dtypes = PyTuple_GetItem(spec, 3);
    if (nargs != 6 + n || n > MAX_PARAMS || dtypes == NULL || !PyTuple_Check(dtypes) || PyTuple_Size(dtypes) != n) {
        PyErr_Clear();
        return PyLong_FromLong(PYTHON_PATH);
    }
    unsigned long block = PyLong_AsUnsignedLong(PyTuple_GetItem(spec, 0));
    unsigned long shared = PyLong_AsUnsignedLong(PyTuple_GetItem(spec, 1));
    unsigned long gx = PyLong_AsUnsignedLong(args[2]), gy = PyLong_AsUnsignedLong(args[3]);
    unsigned long gz = PyLong_AsUnsignedLong(args[4]);
    Py_ssize_t fns = PyTuple_Check(args[1]) ? PyTuple_Size(args[1]) : 0;
    if (fns != 2 && fns != 3) {
        PyErr_Clear();
        return PyLong_FromLong(PYTHON_PATH);
    }
    void *fn = PyLong_AsVoidPtr(PyTuple_GetItem(args[1], 0));
    long device = PyLong_AsLong(PyTuple_GetItem(args[1], 1));
    void *stream = PyLong_AsVoidPtr(args[5]);
    /* the specialized variant: its promises, shared memory and function (where it runs here) */
    char *checks = NULL;
    Py_ssize_t nchecks = 0;
    unsigned long twin_shared = 0;
    void *twin_fn = NULL;
    if (spec_size == 6 && fns == 3) {
        if (PyBytes_AsStringAndSize(PyTuple_GetItem(spec, 4), &checks, &nchecks) < 0 || nchecks != nkinds) {
            PyErr_Clear();
            return PyLong_FromLong(PYTHON_PATH);
        }
        twin_shared = PyLong_AsUnsignedLong(PyTuple_GetItem(spec, 5));
        twin_fn = PyLong_AsVoidPtr(PyTuple_GetItem(args[1], 2));    /* NULL: not loaded here yet */
    }
    if (PyErr_Occurred() || fn == NULL || block > UINT32_MAX || shared > UINT32_MAX || twin_shared > UINT32_MAX ||
        gx > UINT32_MAX || gy > UINT32_MAX || gz > UINT32_MAX) {
        PyErr_Clear();
        return PyLong_FromLong(PYTHON_PATH);
    }
    uint64_t slots[MAX_PARAMS];
    void *argv[MAX_PARAMS];
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = args[6 + i];
        char code = kinds[2 * i];
        unsigned aux = (unsigned char)kinds[2 * i + 1];
        slots[i] = 0;
        argv[i] = &slots[i];
        if (code == 'P') {
            if (!read_pointer(v, PyTuple_GetItem(dtypes, i), device, &slots[i]) || (aux > 1 && slots[i] % aux))
                return PyLong_FromLong(PYTHON_PATH);
        } else if (!read_scalar(v, code, aux, &slots[i]))
            return PyLong_FromLong(PYTHON_PATH);
    }
    int holds = checks != NULL ? twin_holds(checks, n, slots) : 0;
    if (holds < 0 || (holds && twin_fn == NULL))   /* (the Python path loads the twin) */
        return PyLong_FromLong(PYTHON_PATH);
    if (holds) {                             /* the twin: the same slots, less those it compiled in */
        Py_ssize_t kept = 0;
        for (Py_ssize_t i = 0; i < n; i++)
            if (checks[2 * i] != '1')
                argv[kept++] = &slots[i];
        fn = twin_fn;
        shared = twin_shared;
    }
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = entry(fn, (unsigned)gx, (unsigned)gy, (unsigned)gz, (unsigned)block, 1, 1, (unsigned)shared, stream,
                argv, NULL);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(err);
}

static PyMethodDef methods[] = {
    {"configure", (PyCFunction)(void (*)(void))configure, METH_FASTCALL, "Set cuLaunchKernel and the array types."},
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL, "Launch, or return -1 for the Python path."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_mtlaunch", "mytriton's native launch path", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__mtlaunch(void) {
    if (!(s_launch = PyUnicode_InternFromString("_launch")) ||
        !(s_get_device = PyUnicode_InternFromString("get_device")) || !(s_dtype = PyUnicode_InternFromString("dtype")) ||
        !(s_data_ptr = PyUnicode_InternFromString("data_ptr")) || !(empty_tuple = PyTuple_New(0)))
        return NULL;
    get_device_method.name = s_get_device;
    data_ptr_method.name = s_data_ptr;
    tensor_info = PyList_New(4);
    if (tensor_info == NULL)
        return NULL;
    Py_INCREF(Py_None);
    PyList_SetItem(tensor_info, 0, Py_None);
    PyList_SetItem(tensor_info, 1, PyDict_New());
    Py_INCREF(Py_None);
    PyList_SetItem(tensor_info, 2, Py_None);
    PyList_SetItem(tensor_info, 3, PyTuple_New(0));
    return PyModule_Create(&module);
}
