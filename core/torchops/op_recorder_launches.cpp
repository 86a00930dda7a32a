// The op recorder: a Triton launch's record from Python without the dispatcher or ctypes
// (op_recorder_state.hpp). python/gparity wraps Inductor's launcher (CachingAutotuner.run) with the
// launch hook made here: while no step is recorded it calls the launcher; while one is, a launch
// at a call site it knows (the caller's code and bytecode offset, the autotuner, the launcher the
// autotuner chose) is recorded here around the launcher's call (kernel_begin, kernel_end), and any
// other goes to python/gparity's Python hook, which registers the site and tells the hook of it.
// Also the two builtins that Python hook records a launch with. Built only with Python's headers
// (GPARITY_OPREC_PYTHON).

#if GPARITY_OPREC_PYTHON
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include <unordered_map>

#include "core/torchops/op_recorder_state.hpp"

namespace gparity::torchops::oprec_detail {
namespace {

// ---- a launch's record through two builtins (no dispatcher call, no ctypes conversion) ---------
// torch.ops.gparity.oprec_kernel_begin costs a launch the Python op call and the dispatcher's
// argument matching (~20 us on an H200's host against ~9 us of the record itself), and the
// hook's Python the tensors' filtering and signature: a step of Inductor's launches pays them
// on the critical path. These take the launch's positional arguments as they are.

PyObject* tensor_type = nullptr;  // torch.Tensor (a reference), given by python/gparity
PyObject* cdata_name = nullptr;   // "_cdata": a tensor's TensorImpl address

/// The torch.Tensor instances among `items[0, n)` and their positions; false with a Python error
/// set.
bool launch_tensors(PyObject* const* items, Py_ssize_t n, std::vector<at::Tensor>& tensors,
                    std::vector<std::int64_t>& positions) {
  tensors.reserve(static_cast<std::size_t>(n));
  positions.reserve(static_cast<std::size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = items[i];
    if (!PyObject_TypeCheck(item, reinterpret_cast<PyTypeObject*>(tensor_type))) continue;
    // torch.Tensor._cdata: the address of the tensor's TensorImpl (every release since 1.0);
    // the caller holds the tensor, so the impl lives while the new reference is taken.
    PyObject* cdata = PyObject_GetAttr(item, cdata_name);
    if (!cdata) return false;
    void* impl = PyLong_AsVoidPtr(cdata);
    Py_DECREF(cdata);
    if (!impl) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "oprec_launch_begin: a tensor without an impl");
      return false;
    }
    tensors.emplace_back(c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::reclaim_copy(
        static_cast<c10::TensorImpl*>(impl)));
    positions.push_back(i);
  }
  return true;
}

/// Two arguments, the first an int (into `first`); false with a Python error set.
bool int_and_one_more(PyObject* const* args, Py_ssize_t nargs, const char* usage, long long& first) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, usage);
    return false;
  }
  first = PyLong_AsLongLong(args[0]);
  return !(first == -1 && PyErr_Occurred());
}

/// `f()`, a C++ exception raised as Python's RuntimeError.
template <typename F>
PyObject* raising_python_errors(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

/// kernel_begin(site, the tensors among items[0, n) and their positions) into `index`; false
/// with a Python error set.
bool begin_launch(std::int64_t site, PyObject* const* items, Py_ssize_t n, std::int64_t& index) {
  std::vector<at::Tensor> tensors;
  std::vector<std::int64_t> positions;
  if (!launch_tensors(items, n, tensors, positions)) return false;
  try {
    index = kernel_begin(site, tensors, &positions);
    return true;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return false;
  }
}

/// oprec_launch_begin(site, args) -> the record's index; -1: no step recorded; -2: the tensors
/// are not where the site's signature has them (nothing recorded).
PyObject* launch_begin(PyObject* /*self*/, PyObject* const* args, Py_ssize_t nargs) {
  long long site = 0;
  if (!int_and_one_more(args, nargs, "oprec_launch_begin(site, args)", site)) return nullptr;
  if (!PyTuple_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "oprec_launch_begin: the launch's arguments must be a tuple");
    return nullptr;
  }
  std::int64_t index = -1;
  if (!begin_launch(site, &PyTuple_GET_ITEM(args[1], 0), PyTuple_GET_SIZE(args[1]), index)) return nullptr;
  return PyLong_FromLongLong(index);
}

/// oprec_launch_end(index, launched): what the launch wrote, hashed (kernel_end).
PyObject* launch_end(PyObject* /*self*/, PyObject* const* args, Py_ssize_t nargs) {
  long long index = 0;
  if (!int_and_one_more(args, nargs, "oprec_launch_end(index, launched)", index)) return nullptr;
  const int launched = PyObject_IsTrue(args[1]);
  if (launched < 0) return nullptr;
  return raising_python_errors([&] {
    kernel_end(index, launched != 0);
    Py_RETURN_NONE;
  });
}

// ---- the launch hook ---------------------------------------------------------------------------
// Python's part of a launch record (the hook function, the site's lookup, the builtins' calls)
// cost ~12 us a launch on an H200's host, as much as the record's C++ (docs/ops.md, "Cost"). The
// hook is a builtin bound as CachingAutotuner's method (an instancemethod): Inductor's `call`
// calls it with no Python frame between, and a launch at a known site costs the lookup and the
// record alone.

/// What the hook does with a launch (set by python/gparity when a recorder attaches or detaches).
enum class HookMode : int {
  pass = 0,           // no step recorded: the launcher, nothing else
  python = 1,         // python/gparity's hook (the Python backend, or a site the hook must learn)
  known = 2,          // the C++ recorder: known sites here, others through python/gparity's hook
  known_batched = 3,  // the same, with batches of hashes: only sites a recorder with batches learnt
};
HookMode hook_mode = HookMode::pass;

/// A call site as the hook finds it: the autotuner (CachingAutotuner) launched, the code object
/// and bytecode offset of the call. The map holds a reference to each (a site's objects cannot
/// be freed and their addresses taken by others while it is known).
struct LaunchSite {
  PyObject* autotuner;
  PyObject* code;
  int offset;
  bool operator==(const LaunchSite& o) const = default;
};
struct LaunchSiteHash {
  std::size_t operator()(const LaunchSite& k) const {
    const auto a = reinterpret_cast<std::uintptr_t>(k.autotuner),
               c = reinterpret_cast<std::uintptr_t>(k.code);
    return std::hash<std::uintptr_t>()(a ^ (c * 0x9E3779B97F4A7C15ULL) ^
                                       (static_cast<std::uintptr_t>(k.offset) << 1));
  }
};
/// What a known site launches: its registered site id, while the autotuner's one launcher is
/// `launcher` (a reference), and whether python/gparity's hook has watched its caller for
/// batches of hashes (kernel_launches.py, _Batches.watch: a recorder with batches learnt it).
struct KnownLaunch {
  PyObject* launcher;
  std::int64_t site;
  bool watched;
};
// Touched only with the GIL held (the hook and remember are called from Python). Bounded.
std::unordered_map<LaunchSite, KnownLaunch, LaunchSiteHash> known_launches;
constexpr std::size_t kMaxKnownLaunches = std::size_t{1} << 14;
PyObject* launchers_name = nullptr;  // "launchers"

void forget_launches() {
  for (auto& [k, v] : known_launches) {
    Py_DECREF(k.autotuner);
    Py_DECREF(k.code);
    Py_DECREF(v.launcher);
  }
  known_launches.clear();
}

/// The site at the calling Python frame (the frame that called the hook).
bool calling_site(PyObject* autotuner, PyFrameObject* f, LaunchSite& site) {
  if (!f) return false;
  PyCodeObject* code = PyFrame_GetCode(f);
  site = {autotuner, reinterpret_cast<PyObject*>(code), bytecode_offset(f)};
  Py_DECREF(code);  // the frame holds it; the map takes its own reference
  return true;
}

/// The one launcher `autotuner` launches with now (borrowed; null: none chosen yet, or several).
PyObject* only_launcher(PyObject* autotuner) {
  PyObject* launchers = PyObject_GetAttr(autotuner, launchers_name);
  if (!launchers) {
    PyErr_Clear();
    return nullptr;
  }
  PyObject* one = nullptr;
  if (PyList_Check(launchers) && PyList_GET_SIZE(launchers) == 1)
    one = PyList_GET_ITEM(launchers, 0);
  else if (PyTuple_Check(launchers) && PyTuple_GET_SIZE(launchers) == 1)
    one = PyTuple_GET_ITEM(launchers, 0);
  Py_DECREF(launchers);  // the autotuner holds the list, and the list its item
  return one;
}

/// The registered site id of a launch of `autotuner` from the current Python frame, or -1: not
/// known here (python/gparity's hook decides).
std::int64_t known_site(PyObject* autotuner) {
  PyFrameObject* f = PyThreadState_GetFrame(PyThreadState_Get());
  LaunchSite at{};
  const bool found = calling_site(autotuner, f, at);
  Py_XDECREF(f);
  if (!found) return -1;
  const auto it = known_launches.find(at);
  if (it == known_launches.end()) return -1;
  if (hook_mode == HookMode::known_batched && !it->second.watched) return -1;
  PyObject* launcher = only_launcher(autotuner);
  return launcher && launcher == it->second.launcher ? it->second.site : -1;
}

/// Calls `run` with the hook's arguments; after it, kernel_end(index): the launch's exception,
/// if any, is the one raised (an error of the record's then only when the launch succeeded).
PyObject* launch_recorded(PyObject* run, std::int64_t index, PyObject* const* args, Py_ssize_t nargs,
                          PyObject* kwnames) {
  PyObject* out = PyObject_Vectorcall(run, args, static_cast<std::size_t>(nargs), kwnames);
#if PY_VERSION_HEX >= 0x030C0000
  PyObject* raised = out ? nullptr : PyErr_GetRaisedException();
#else
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  if (!out) PyErr_Fetch(&type, &value, &traceback);
#endif
  try {
    kernel_end(index, out != nullptr);  // always: it also ends the launch's exemption from op records
  } catch (const std::exception& e) {
    if (out) {
      Py_DECREF(out);
      PyErr_SetString(PyExc_RuntimeError, e.what());
      return nullptr;
    }
  }
#if PY_VERSION_HEX >= 0x030C0000
  if (raised) PyErr_SetRaisedException(raised);
#else
  if (!out) PyErr_Restore(type, value, traceback);
#endif
  return out;
}

/// The hook, bound to the autotuner: hook(autotuner, *args, **kwargs) with `self` (run, python):
/// the launcher and python/gparity's hook. Keyword arguments (Inductor's `stream=`) go to the
/// launcher as they came; the tensors are found among the positional ones, as the Python hook
/// finds them.
PyObject* launch_hook(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* run = PyTuple_GET_ITEM(self, 0);
  PyObject* python_hook = PyTuple_GET_ITEM(self, 1);
  const auto as_given = static_cast<std::size_t>(nargs);
  if (hook_mode == HookMode::pass) return PyObject_Vectorcall(run, args, as_given, kwnames);
  if (hook_mode == HookMode::python || nargs < 1)
    return PyObject_Vectorcall(python_hook, args, as_given, kwnames);
  const std::int64_t site = known_site(args[0]);
  if (site < 0) return PyObject_Vectorcall(python_hook, args, as_given, kwnames);
  std::int64_t index = -1;
  if (!begin_launch(site, args + 1, nargs - 1, index)) return nullptr;
  // Another pattern of tensors at this site: python/gparity registers its signature.
  if (index == kSignatureChanged) return PyObject_Vectorcall(python_hook, args, as_given, kwnames);
  return launch_recorded(run, index, args, nargs, kwnames);
}

PyMethodDef hook_method = {"gparity_launch_hook",
                           reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&launch_hook)),
                           METH_FASTCALL | METH_KEYWORDS,
                           "gparity's launch hook around Inductor's launcher (CachingAutotuner.run)."};

/// make_hook(run, python_hook) -> the hook as a method (an instancemethod of a builtin).
PyObject* make_hook(PyObject* /*self*/, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyCallable_Check(args[0]) || !PyCallable_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "oprec_make_launch_hook(run, python_hook): two callables");
    return nullptr;
  }
  PyObject* both = PyTuple_Pack(2, args[0], args[1]);
  PyObject* fn = both ? PyCFunction_New(&hook_method, both) : nullptr;
  Py_XDECREF(both);
  PyObject* method = fn ? PyInstanceMethod_New(fn) : nullptr;
  Py_XDECREF(fn);
  return method;
}

/// set_hook_mode(mode): 0 pass, 1 python/gparity's hook, 2 known sites here, 3 the same with
/// batches (HookMode).
PyObject* set_hook_mode(PyObject* /*self*/, PyObject* arg) {
  const long mode = PyLong_AsLong(arg);
  if (mode == -1 && PyErr_Occurred()) return nullptr;
  if (mode < 0 || mode > 3) {
    PyErr_SetString(PyExc_ValueError, "oprec_set_launch_hook_mode: 0, 1, 2 or 3");
    return nullptr;
  }
  hook_mode = static_cast<HookMode>(mode);
  Py_RETURN_NONE;
}

/// remember(autotuner, frame, launcher, site, watched): a launch of `autotuner` from `frame`'s
/// current call, with `launcher` the autotuner's one launcher, is the registered `site`.
PyObject* remember_launch(PyObject* /*self*/, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 5 || !PyFrame_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "oprec_remember_launch(autotuner, frame, launcher, site, watched)");
    return nullptr;
  }
  const long long site = PyLong_AsLongLong(args[3]);
  if (site == -1 && PyErr_Occurred()) return nullptr;
  const int watched = PyObject_IsTrue(args[4]);
  if (watched < 0) return nullptr;
  LaunchSite at{};
  calling_site(args[0], reinterpret_cast<PyFrameObject*>(args[1]), at);
  if (known_launches.size() >= kMaxKnownLaunches) forget_launches();
  auto [it, added] = known_launches.try_emplace(at, KnownLaunch{args[2], site, watched != 0});
  if (added) {
    Py_INCREF(at.autotuner);
    Py_INCREF(at.code);
  } else {
    Py_DECREF(it->second.launcher);
    it->second = KnownLaunch{args[2], site, watched != 0};
  }
  Py_INCREF(args[2]);
  Py_RETURN_NONE;
}

PyMethodDef launch_methods[] = {
    {"oprec_launch_begin", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&launch_begin)),
     METH_FASTCALL, "A Triton launch's record before it runs (the site's id, the launch's arguments)."},
    {"oprec_launch_end", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&launch_end)),
     METH_FASTCALL, "After the launch: what it wrote, hashed (the record's index, whether it launched)."},
    {"oprec_make_launch_hook", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&make_hook)),
     METH_FASTCALL, "The launch hook as a method: make_hook(run, python_hook)."},
    {"oprec_set_launch_hook_mode", &set_hook_mode, METH_O,
     "What the launch hooks do: 0 pass, 1 Python's hook, 2 known sites here, 3 the same, batched."},
    {"oprec_remember_launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&remember_launch)),
     METH_FASTCALL, "A call site the hook records itself: (autotuner, frame, launcher, site, watched)."},
};

}  // namespace

void* launch_functions(void* tensor_object) {
  auto* tensor = static_cast<PyObject*>(tensor_object);
  if (!tensor || !PyType_Check(tensor)) {
    PyErr_SetString(PyExc_TypeError, "gparity_oprec_launch_functions: torch.Tensor expected");
    return nullptr;
  }
  if (!cdata_name) cdata_name = PyUnicode_InternFromString("_cdata");
  if (!cdata_name) return nullptr;
  Py_INCREF(tensor);
  Py_XDECREF(tensor_type);
  tensor_type = tensor;
  PyObject* begin = PyCFunction_New(&launch_methods[0], nullptr);
  PyObject* end = begin ? PyCFunction_New(&launch_methods[1], nullptr) : nullptr;
  PyObject* both = end ? PyTuple_Pack(2, begin, end) : nullptr;
  Py_XDECREF(begin);
  Py_XDECREF(end);
  return both;
}

void* launch_hook_functions() {
  if (!launchers_name) launchers_name = PyUnicode_InternFromString("launchers");
  if (!launchers_name || !tensor_type) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_RuntimeError, "gparity_oprec_launch_hook_functions: launch functions first");
    return nullptr;
  }
  PyObject* out = PyTuple_New(3);
  for (Py_ssize_t i = 0; out && i < 3; ++i) {
    PyObject* f = PyCFunction_New(&launch_methods[2 + i], nullptr);
    if (!f) {
      Py_DECREF(out);
      return nullptr;
    }
    PyTuple_SET_ITEM(out, i, f);
  }
  return out;
}

}  // namespace gparity::torchops::oprec_detail
#endif  // GPARITY_OPREC_PYTHON
