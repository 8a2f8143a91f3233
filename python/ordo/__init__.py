"""ordo's client API for Python (ctypes over libordo.so.0; include/ordo/ordo.h).

    import array, ordo
    cfg = ordo.Config(argv=sys.argv[1:])        # --config FILE, --set K=V
    c = ordo.Client(cfg)
    w = array.array("f", [0.0] * 1000)          # any writable float32 buffer:
    t = c.declare("w", w)                       #   array, numpy, torch .numpy()
    c.start()
    it = c.start_iteration()
    while c.next_iteration(it):
        c.push(t, grad, it)                     # grad: float32, same length
        c.wait(t, it + 1)                       # parameters into w
        it += 1
    c.finish(it)
    c.close()

Buffers follow the C API: a declared buffer must stay alive while the client
does (the Client keeps a reference); a pushed gradient buffer is sent without
copying and must stay unchanged until a wait for a later iteration returns
(the Client keeps references to the last ones pushed per tensor). Errors
raise ordo.Error with the C library's code and its reason (a client call's
is ps_client_last_error: "ps_client_push: tensor 7 is not declared ...")
in str() and .reason.

The library is LIBORDO_PATH if set, else the libordo.so.0 this package was
installed with (_libpath.py, written by `cmake --install`), else the one the
dynamic linker finds (the .deb's, or an installed prefix on its path); where
none loads, the import fails naming all three.

Installed with pip (`pip install ./python`, offline), the package holds no
library: set LIBORDO_PATH, or install ordo (the .deb, `cmake --install`).
"""
__version__ = "0.1.0"  # the project's (CMakeLists.txt); tests/integration/python.sh checks
import ctypes
import ctypes.util
import os

__all__ = ["Error", "Config", "Client", "library_path", "__version__"]


def _installed_path():
    try:
        from ._libpath import LIBORDO  # written by cmake --install
        return LIBORDO
    except ImportError:
        return None


def library_path():
    """The libordo.so.0 this package loads (see the module's docstring)."""
    path = os.environ.get("LIBORDO_PATH")
    if path:
        return path
    installed = _installed_path()
    if installed and os.path.exists(installed):
        return installed
    return ctypes.util.find_library("ordo") or "libordo.so.0"


def _load():
    path = library_path()
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        installed = _installed_path()
        raise ImportError(
            "ordo: cannot load libordo.so.0 (%s). Looked at: LIBORDO_PATH "
            "(%s); the prefix this package was installed with (%s); the "
            "dynamic linker's path (ldconfig, LD_LIBRARY_PATH: where the "
            ".deb puts it). Set LIBORDO_PATH to the build's libordo.so.0, "
            "or install ordo (the .deb, or cmake --install)." % (
                e, os.environ.get("LIBORDO_PATH") or "unset",
                installed or "none: not installed by cmake --install")) from None


_lib = _load()
_c_p = ctypes.c_void_p
_f_p = ctypes.POINTER(ctypes.c_float)
_sig = {
    "ps_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "ps_client_last_error": (ctypes.c_char_p, []),
    "ps_config_new": (ctypes.c_int, [ctypes.POINTER(_c_p)]),
    "ps_config_load": (ctypes.c_int, [_c_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
    "ps_config_set": (ctypes.c_int, [_c_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
    "ps_config_get": (ctypes.c_int, [_c_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
    "ps_config_free": (None, [ctypes.POINTER(_c_p)]),
    "ps_client_create": (ctypes.c_int, [_c_p, ctypes.POINTER(_c_p)]),
    "ps_client_declare": (ctypes.c_int, [_c_p, ctypes.c_char_p, ctypes.c_uint64, _f_p,
                                         ctypes.POINTER(ctypes.c_uint32)]),
    "ps_client_start": (ctypes.c_int, [_c_p]),
    "ps_client_start_iteration": (ctypes.c_uint64, [_c_p]),
    "ps_client_next_iteration": (ctypes.c_int, [_c_p, ctypes.c_uint64]),
    "ps_client_rank": (ctypes.c_int, [_c_p]),
    "ps_client_num_workers": (ctypes.c_int, [_c_p]),
    "ps_client_push": (ctypes.c_int, [_c_p, ctypes.c_uint32, _f_p, ctypes.c_uint64]),
    "ps_client_wait": (ctypes.c_int, [_c_p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int]),
    "ps_client_try": (ctypes.c_int, [_c_p, ctypes.c_uint32, ctypes.c_uint64]),
    "ps_client_pull": (ctypes.c_int, [_c_p, ctypes.c_uint32, ctypes.c_int]),
    "ps_client_set_lr": (ctypes.c_int, [_c_p, ctypes.c_uint64, ctypes.c_double]),
    "ps_client_flush": (ctypes.c_int, [_c_p, ctypes.c_int]),
    "ps_client_barrier": (ctypes.c_int, [_c_p, ctypes.c_int]),
    "ps_client_broadcast": (ctypes.c_int, [_c_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                           ctypes.c_int]),
    "ps_client_destroy": (None, [ctypes.POINTER(_c_p)]),
}
for _name, (_res, _args) in _sig.items():
    _fn = getattr(_lib, _name)
    _fn.restype, _fn.argtypes = _res, _args


class _Result(ctypes.Structure):
    # ps_client_result (include/ordo/ordo.h), field for field
    _fields_ = [("iterations", ctypes.c_uint64), ("seconds", ctypes.c_double),
                ("last_loss", ctypes.c_double)]


_lib.ps_client_finish.restype = ctypes.c_int
_lib.ps_client_finish.argtypes = [_c_p, ctypes.POINTER(_Result)]

# ps_err (include/ordo/error.h): its values are part of the ABI
(PS_OK, PS_EINVAL, PS_ENOMEM, PS_ETIMEDOUT, PS_ECLOSED, PS_EPROTO, PS_ENOTSUP,
 PS_ECONNREFUSED, PS_EADDRINUSE, PS_EABORTED, PS_EIO, PS_ECONFIG, PS_EAGAIN,
 PS_ENOENT, PS_ESTATE, PS_EINTR) = range(16)


class Error(Exception):
    """A failed call: .code is the ps_err value, .reason what the library
    said about it (a client call's: ps_client_last_error), str() both."""

    def __init__(self, code, what, detail=""):
        msg = _lib.ps_strerror(code).decode()
        super().__init__("%s: %s%s" % (what, msg, (" (%s)" % detail) if detail else ""))
        self.code = code
        self.reason = detail


def _check(rc, what, detail=""):
    if rc != 0:
        raise Error(rc, what, detail)


def _client_check(rc, what):
    """A ps_client_* call's result: raises Error with the library's reason
    (ps_client_last_error, read on this thread right after the call)."""
    if rc != 0:
        raise Error(rc, what, _lib.ps_client_last_error().decode(errors="replace"))


def _floats(buf, writable):
    """A float* into buf's memory (float32, C-contiguous) and its length."""
    mv = memoryview(buf)
    if mv.format != "f" or mv.itemsize != 4 or not mv.c_contiguous:
        raise TypeError("ordo needs a C-contiguous float32 buffer, got format %r" % mv.format)
    if writable and mv.readonly:
        raise TypeError("ordo writes parameters into this buffer: it must be writable")
    n = mv.nbytes // 4
    if mv.readonly:  # a gradient in read-only memory: send a copy
        arr = (ctypes.c_float * n).from_buffer_copy(mv)
    else:
        arr = (ctypes.c_float * n).from_buffer(mv.cast("B"))
    return ctypes.cast(arr, _f_p), n, arr


class Config:
    """A job configuration: defaults, then files and SECTION.KEY=VALUE."""

    def __init__(self, path=None, sets=(), argv=None):
        self._p = _c_p()
        _check(_lib.ps_config_new(ctypes.byref(self._p)), "ps_config_new")
        if path:
            self.load(path)
        for s in sets:
            self.set(s)
        args = list(argv or [])
        i = 0
        while i < len(args):  # the arguments ps-launch gives a worker
            if args[i] == "--config" and i + 1 < len(args):
                self.load(args[i + 1])
                i += 2
            elif args[i] == "--set" and i + 1 < len(args):
                self.set(args[i + 1])
                i += 2
            else:
                i += 1

    def load(self, path):
        err = ctypes.create_string_buffer(1024)
        _check(_lib.ps_config_load(self._p, path.encode(), err, len(err)), "config", err.value.decode())

    def set(self, assignment):
        err = ctypes.create_string_buffer(1024)
        _check(_lib.ps_config_set(self._p, assignment.encode(), err, len(err)), "config", err.value.decode())

    def get(self, key):
        """The value of "section.key" as text, e.g. get("train.lr")."""
        buf = ctypes.create_string_buffer(512)
        _check(_lib.ps_config_get(self._p, key.encode(), buf, len(buf)), "config", key)
        return buf.value.decode()

    def close(self):
        if self._p:
            _lib.ps_config_free(ctypes.byref(self._p))
            self._p = None

    def __del__(self):
        self.close()


class Client:
    """A worker of a job (ps_client)."""

    def __init__(self, config):
        self._cfg = config  # the C client reads it at create only; keep it
        self._p = _c_p()
        _client_check(_lib.ps_client_create(config._p, ctypes.byref(self._p)), "ps_client_create")
        self._values = {}
        self._pushed = {}

    def declare(self, name, values):
        ptr, n, keep = _floats(values, True)
        t = ctypes.c_uint32()
        _client_check(_lib.ps_client_declare(self._p, name.encode(), n, ptr, ctypes.byref(t)),
               "declare %s" % name)
        self._values[t.value] = (values, keep, n)
        return t.value

    def start(self):
        _client_check(_lib.ps_client_start(self._p), "start")

    def start_iteration(self):
        return _lib.ps_client_start_iteration(self._p)

    def next_iteration(self, it):
        return bool(_lib.ps_client_next_iteration(self._p, it))

    @property
    def rank(self):
        return _lib.ps_client_rank(self._p)

    @property
    def num_workers(self):
        return _lib.ps_client_num_workers(self._p)

    def push(self, tensor, grad, iteration):
        ptr, n, keep = _floats(grad, False)
        declared = self._values.get(tensor)  # undeclared: the library says so
        if declared and n != declared[2]:
            raise ValueError("gradient of %d values for a tensor of %d" % (n, declared[2]))
        _client_check(_lib.ps_client_push(self._p, tensor, ptr, iteration), "push")
        # sent without a copy: keep it alive until a later iteration's wait
        held = self._pushed.setdefault(tensor, [])
        held.append((iteration, grad, keep))
        del held[:-2]

    def set_lr(self, iteration, lr):
        """The learning rate of the servers' optimizer (server.optimizer =
        sgd, adam, adamw) for this worker's gradients of `iteration` and
        later (ps_client_set_lr)."""
        lr = float(lr)
        if not (lr >= 0 and lr != float("inf")):
            raise ValueError("ordo: learning rate %r: it must be finite and "
                             ">= 0" % lr)
        _client_check(_lib.ps_client_set_lr(self._p, iteration, lr), "set_lr")

    def wait(self, tensor, version, timeout_ms=-1):
        _client_check(_lib.ps_client_wait(self._p, tensor, version, timeout_ms), "wait")

    def pull(self, tensor, timeout_ms=-1):
        """Asynchronous mode (train.mode = async): fetches the tensor's
        current values from the servers into its buffer."""
        _client_check(_lib.ps_client_pull(self._p, tensor, timeout_ms), "pull")

    def try_wait(self, tensor, version):
        """True when the version has arrived (and was copied), else False."""
        rc = _lib.ps_client_try(self._p, tensor, version)
        if rc == 0:
            return True
        if rc == PS_EAGAIN:
            return False
        _client_check(rc, "try")

    def flush(self, timeout_ms=-1):
        _client_check(_lib.ps_client_flush(self._p, timeout_ms), "flush")
        self._pushed.clear()

    def barrier(self, timeout_ms=-1):
        _client_check(_lib.ps_client_barrier(self._p, timeout_ms), "barrier")

    def broadcast(self, root, buf, timeout_ms=-1):
        """Collective: every worker calls it with the same root and a
        writable buffer of the same size (bytearray, a contiguous numpy
        array, anything with the buffer protocol); root's bytes end up in
        every worker's buffer, bit for bit."""
        view = memoryview(buf)
        if view.readonly or not view.c_contiguous:
            raise ValueError("ordo: broadcast needs a writable, contiguous buffer")
        n = view.nbytes
        arr = (ctypes.c_char * n).from_buffer(view.cast("B")) if n else None
        _client_check(_lib.ps_client_broadcast(self._p, root, arr, n, timeout_ms), "broadcast")

    def finish(self, iterations, seconds=0.0, last_loss=0.0):
        r = _Result(iterations=iterations, seconds=seconds, last_loss=last_loss)
        _client_check(_lib.ps_client_finish(self._p, ctypes.byref(r)), "finish")

    def close(self):
        if self._p:
            _lib.ps_client_destroy(ctypes.byref(self._p))
            self._p = None
        self._pushed.clear()

    def __del__(self):
        self.close()

