"""Makes the hostile and not-what-it-seems inputs of tests/data/reliability (make_pickles.py) with Python's own
pickle module (run with /usr/bin/python3 from this folder; the outputs are committed):

  hello.pkl          {'hello': [1, 2, 3]}: a pickle, but no Flight Recorder dump
  list.pkl           [1, 2, 3]: a pickle whose top level is not even a dict
  entries_reduce.pkl {'entries': [obj]} where obj's __reduce__ calls os.system: a reader that
                     executes pickles would create /tmp/gparity-reliability-pickle-executed
  empty_dump.pkl     a Flight Recorder dump (version, pg_config) with no entries
"""

import os
import pickle

MARKER = "/tmp/gparity-reliability-pickle-executed"


class RunsACommand:
    def __reduce__(self):
        return (os.system, ("touch " + MARKER,))


def write(name, obj):
    with open(name, "wb") as f:
        pickle.dump(obj, f, protocol=4)


write("hello.pkl", {"hello": [1, 2, 3]})
write("list.pkl", [1, 2, 3])
write("entries_reduce.pkl", {"entries": [RunsACommand()]})
write("empty_dump.pkl", {"version": "2.10", "pg_config": {}, "entries": []})
