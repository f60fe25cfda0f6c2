"""Programs dropped after a paused collector are still freed: a process that keeps loading and compiling does not
grow without bound (gradc.gcpause)."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import gc, json, sys
sys.path.insert(0, sys.argv[1])
from perf_models import deep_mlp
import gradc
from gradc.io import parse_program, serialize
data = serialize(deep_mlp(100).program)
tracked = []
for _ in range(30):
    program = parse_program(data)
    gradc.append_backward(program, gradc.backward.default_loss(program))
    serialize(program)
    del program
    tracked.append(len(gc.get_objects()))
print(json.dumps(tracked))
"""


def test_a_process_compiling_program_after_program_frees_the_dropped_ones():
    benchmarks = Path(__file__).parent.parent / "benchmarks"
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(benchmarks)], capture_output=True, text=True,
                            check=True)
    tracked = json.loads(result.stdout)
    # each program left about 8,000 objects behind before: 30 of them grew the heap past seven times the first's
    assert max(tracked[5:]) < 3 * tracked[0], tracked


FROZEN = """
import gc, sys
sys.path.insert(0, sys.argv[1])
from perf_models import deep_mlp
import gradc
from gradc.io import parse_program, serialize
data = serialize(deep_mlp(20).program)
gc.collect()
gc.freeze()   # as a fork server does before forking, to keep its heap's pages shared
frozen = gc.get_freeze_count()
tracked = []
for _ in range(40):
    program = parse_program(data)
    gradc.append_backward(program, gradc.backward.default_loss(program))
    serialize(program)
    del program
    tracked.append(len(gc.get_objects()))
# the heap outside the frozen part saw-tooths as the interpreter's collections free the dropped programs (kept, it
# would double from the first 20 to the last)
print(frozen, gc.get_freeze_count(), max(tracked[20:]) < 1.5 * max(tracked[:20]))
"""


def test_a_callers_frozen_objects_stay_frozen_and_dropped_programs_are_still_freed():
    benchmarks = Path(__file__).parent.parent / "benchmarks"
    result = subprocess.run([sys.executable, "-c", FROZEN, str(benchmarks)], capture_output=True, text=True,
                            check=True)
    frozen, after, bounded = result.stdout.split()
    assert int(frozen) > 10_000 and after == frozen and bounded == "True", result.stdout
