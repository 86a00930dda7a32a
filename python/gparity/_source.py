"""Source lines and library frames for gparity's op records (op_recorder.py, kernel_launches.py):
which frames are library code (the user frame is the innermost one outside them), a file's line
as the record quotes it, and compact JSON."""

import os
import sys

import torch

# Frames in these trees are library code: the user frame is the innermost one outside them.
_LIBRARY_DIRS = tuple(
    os.path.dirname(os.path.abspath(m.__file__)) + os.sep
    for m in [torch] + [sys.modules[n] for n in ("functorch",) if n in sys.modules]
) + (os.path.dirname(os.path.abspath(__file__)) + os.sep, os.path.dirname(os.__file__) + os.sep) + (
    # This package as its code objects name it: a sys.path entry with ".." in it is not normalized.
    (os.path.dirname(__file__) + os.sep,) if os.path.dirname(__file__) != os.path.dirname(os.path.abspath(__file__))
    else ())


def _is_library(filename, cache={}):
    hit = cache.get(filename)
    if hit is None:
        hit = filename.startswith(_LIBRARY_DIRS) or filename.startswith("<") or "/functorch/" in filename
        cache[filename] = hit
    return hit


def _dumps(obj):
    import json
    return json.dumps(obj, separators=(",", ":"))


_lines_cache = {}


def _code_line(filename, lineno):
    lines = _lines_cache.get(filename)
    if lines is None:
        try:
            with open(filename, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            lines = []
        _lines_cache[filename] = lines
    return lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
