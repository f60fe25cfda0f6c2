"""Programs dropped after a paused collector are still freed: a process that keeps loading and compiling does not
grow without bound (gradc.gcpause), also when it froze its own heap first, which the pauses leave frozen."""

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
layers, freeze, rounds = int(sys.argv[2]), sys.argv[3] == "freeze", int(sys.argv[4])
data = serialize(deep_mlp(layers).program)
if freeze:   # as a fork server does before forking, to keep its heap's pages shared
    gc.collect()
    gc.freeze()
frozen = gc.get_freeze_count()
tracked = []
for _ in range(rounds):
    program = parse_program(data)
    gradc.append_backward(program, gradc.backward.default_loss(program))
    serialize(program)
    del program
    tracked.append(len(gc.get_objects()))
print(json.dumps({"frozen": [frozen, gc.get_freeze_count()], "tracked": tracked}))
"""


def compile_repeatedly(layers: int, freeze: bool, rounds: int) -> dict:
    benchmarks = Path(__file__).parent.parent / "benchmarks"
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(benchmarks), str(layers),
                             "freeze" if freeze else "no", str(rounds)], capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def test_a_process_compiling_program_after_program_frees_the_dropped_ones():
    tracked = compile_repeatedly(100, False, 30)["tracked"]
    # each program left about 8,000 objects behind before: 30 of them grew the heap past seven times the first's
    assert max(tracked[5:]) < 3 * tracked[0], tracked


def test_a_callers_frozen_objects_stay_frozen_and_dropped_programs_are_still_freed():
    report = compile_repeatedly(20, True, 40)
    (before, after), tracked = report["frozen"], report["tracked"]
    assert before > 10_000 and after == before, report["frozen"]   # gcpause's unfreeze thawed them all before
    # the heap outside the frozen part saw-tooths as the interpreter's passes free the dropped programs (kept, it
    # would double from the first 20 to the last)
    assert max(tracked[20:]) < 1.5 * max(tracked[:20]), tracked
