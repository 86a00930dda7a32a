// The op recorder: CPython frames (the innermost user source line, autograd's backward, the
// profiler's bookkeeping) and a collective's group, through the Python that loads the library
// (op_recorder_state.hpp). Built only with Python's headers (GPARITY_OPREC_PYTHON).

#if GPARITY_OPREC_PYTHON
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include "core/torchops/op_recorder_state.hpp"

namespace gparity::torchops::oprec_detail {
namespace {

enum class CodeKind : std::uint8_t { library, user, backward, bookkeeping };
struct CodeEntry {
  CodeKind kind = CodeKind::library;
  int index = -1;  // into State::codes (user code)
};
// Touched only with the GIL held (the callbacks take it; begin/end are called from Python).
std::unordered_map<PyObject*, CodeEntry> code_cache;  // holds a reference to each code object
std::vector<PyObject*> backward_codes;                // torch.autograd.backward, .grad (references)
// record_function.__enter__/__exit__: the profiler:: ops they call are not observed by
// RecordFunction, so the allocations inside them (an uninitialized handle) would look outermost.
std::vector<PyObject*> bookkeeping_codes;
// The Python recorder's group of a collective (op_recorder.py, _collective_group): called with the
// op's name and its string and int-list arguments, on the step's thread while the collective's
// caller (distributed_c10d.py) is on the Python stack; returns the record's group fields.
PyObject* group_fn = nullptr;

// The line of each call site (code object, bytecode offset) a record came from, kept across steps
// (a reference to each code object): PyFrame_GetLineNumber walks the code's line table from its
// start, and Inductor's generated `call`, where a compiled step's records come from, is hundreds
// of lines long (~25 us a lookup near its end on this project's CI machine). Bounded.
std::unordered_map<PyObject*, std::unordered_map<int, int>> site_lines;
std::size_t site_line_count = 0;
constexpr std::size_t kMaxSiteLines = std::size_t{1} << 16;

int frame_line(PyFrameObject* f, PyCodeObject* code) {
  auto* key = reinterpret_cast<PyObject*>(code);
  const int at = bytecode_offset(f);
  auto it = site_lines.find(key);
  if (it != site_lines.end())
    if (const auto l = it->second.find(at); l != it->second.end()) return l->second;
  const int line = PyFrame_GetLineNumber(f);
  if (site_line_count >= kMaxSiteLines) {
    for (auto& [c, lines] : site_lines) Py_DECREF(c);
    site_lines.clear();
    site_line_count = 0;
    it = site_lines.end();
  }
  if (it == site_lines.end()) {
    Py_INCREF(key);
    it = site_lines.emplace(key, std::unordered_map<int, int>{}).first;
  }
  it->second.emplace(at, line);
  ++site_line_count;
  return line;
}

std::string utf8(PyObject* s) {
  const char* p = s ? PyUnicode_AsUTF8(s) : nullptr;
  if (!p) {
    PyErr_Clear();
    return {};
  }
  return p;
}

bool library_file(const State& s, const std::string& file) {
  if (file.empty() || file[0] == '<' || file.find("/functorch/") != std::string::npos) return true;
  for (const auto& prefix : s.options.library_prefixes)
    if (starts_with(file, prefix)) return true;
  return false;
}

const CodeEntry& code_entry(State& s, PyCodeObject* code) {
  auto* key = reinterpret_cast<PyObject*>(code);
  if (auto it = code_cache.find(key); it != code_cache.end()) return it->second;
  CodeEntry e;
  for (auto* b : backward_codes)
    if (b == key) e.kind = CodeKind::backward;
  for (auto* b : bookkeeping_codes)
    if (b == key) e.kind = CodeKind::bookkeeping;
  if (e.kind == CodeKind::library) {
    auto file = utf8(code->co_filename);
    if (!library_file(s, file)) {
      e.kind = CodeKind::user;
      std::lock_guard lock(s.mutex);
      e.index = static_cast<int>(s.codes.size());
      s.codes.push_back({std::move(file), utf8(code->co_name)});
    }
  }
  Py_INCREF(key);
  return code_cache.emplace(key, e).first->second;
}

}  // namespace

int bytecode_offset(PyFrameObject* f) {
#if PY_VERSION_HEX >= 0x030B0000
  return PyFrame_GetLasti(f);
#else
  return f->f_lasti;
#endif
}

/// The innermost user frame (code index, line) and whether autograd's backward is on the stack;
/// false: the op is the profiler's bookkeeping (not a record).
bool python_caller(State& s, int& code, int& line, bool& in_backward) {
  const SectionTimer timer(Section::python_frames);
  if (!Py_IsInitialized()) return true;
  const PyGILState_STATE gil = PyGILState_Ensure();
  PyFrameObject* f = PyThreadState_GetFrame(PyThreadState_Get());
  bool keep = true;
  while (f) {
    PyCodeObject* c = PyFrame_GetCode(f);
    const CodeEntry e = code_entry(s, c);
    if (e.kind == CodeKind::bookkeeping) {
      keep = false;
      Py_DECREF(c);
      Py_DECREF(f);
      break;
    }
    if (e.kind == CodeKind::backward) {
      in_backward = true;
    } else if (e.kind == CodeKind::user) {
      code = e.index;
      line = frame_line(f, c);
      Py_DECREF(c);
      Py_DECREF(f);
      break;
    }
    Py_DECREF(c);
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  PyGILState_Release(gil);
  return keep;
}

void release_codes() {
  for (auto& [code, entry] : code_cache) Py_DECREF(code);
  code_cache.clear();
  for (auto* b : backward_codes) Py_DECREF(b);
  backward_codes.clear();
  for (auto* b : bookkeeping_codes) Py_DECREF(b);
  bookkeeping_codes.clear();
  Py_XDECREF(group_fn);
  group_fn = nullptr;
}

/// A collective's group fields, from the Python recorder's rules (empty: none found).
std::string collective_group(const std::string& op, c10::ArrayRef<const c10::IValue> inputs) {
  if (!group_fn || !Py_IsInitialized()) return {};
  at::DisableRecordFunctionGuard no_records;  // whatever the lookup runs is not the step's
  const PyGILState_STATE gil = PyGILState_Ensure();
  std::string out;
  PyObject* args = PyList_New(0);
  for (const auto& v : inputs) {
    PyObject* item = nullptr;
    if (v.isString()) {
      item = PyUnicode_FromString(v.toStringRef().c_str());
    } else if (v.isIntList()) {
      const auto ints = v.toIntVector();
      item = PyList_New(static_cast<Py_ssize_t>(ints.size()));
      for (std::size_t i = 0; item && i < ints.size(); ++i)
        PyList_SET_ITEM(item, static_cast<Py_ssize_t>(i), PyLong_FromLongLong(ints[i]));
    }
    if (item) {
      PyList_Append(args, item);
      Py_DECREF(item);
    }
  }
  PyObject* r = args ? PyObject_CallFunction(group_fn, "sO", op.c_str(), args) : nullptr;
  if (r && PyUnicode_Check(r)) out = utf8(r);
  if (!r) PyErr_Clear();
  Py_XDECREF(r);
  Py_XDECREF(args);
  PyGILState_Release(gil);
  return out;
}

void take_codes(void* codes) {
  release_codes();
  auto* both = static_cast<PyObject*>(codes);
  const auto take = [&](Py_ssize_t which, std::vector<PyObject*>& into) {
    PyObject* t = both && PyTuple_Check(both) && PyTuple_GET_SIZE(both) > which
                      ? PyTuple_GET_ITEM(both, which)
                      : nullptr;
    if (t && PyTuple_Check(t))
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); ++i) {
        PyObject* c = PyTuple_GET_ITEM(t, i);
        Py_INCREF(c);
        into.push_back(c);
      }
  };
  take(0, backward_codes);
  take(1, bookkeeping_codes);
  if (both && PyTuple_Check(both) && PyTuple_GET_SIZE(both) > 2 &&
      PyCallable_Check(PyTuple_GET_ITEM(both, 2))) {
    group_fn = PyTuple_GET_ITEM(both, 2);
    Py_INCREF(group_fn);
  }
}

}  // namespace gparity::torchops::oprec_detail
#endif  // GPARITY_OPREC_PYTHON
