PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
BASE := $(VENV)/.installed-base
STAMP := $(VENV)/.installed
DIGITS := examples/digits

.PHONY: venv base test gradcheck demo digits proto lint bench fuzz compat clean

# gradc alone (protobuf, numpy, click): what `make demo` needs
base: $(BASE)

$(BASE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(BASE)

# with the test and development extras
venv: $(STAMP)

$(STAMP): $(BASE)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# bytecode cached even where the environment says not to (PYTHONDONTWRITEBYTECODE): the suite starts many
# interpreters, and each would compile every gradc module it imports from source again
test: venv
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -n 2

# the registry walk again, comparing every element of every gradient with central differences (make test compares
# each along three random directions, a sixth of the runs); CI runs both
gradcheck: venv
	GRADC_GRADCHECK=every-element PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -n 2 tests/test_gradcheck_registry.py

# the suite under Pythons 3.10, 3.12 and 3.13 (venvs in build/compat/), and under 3.10 with every runtime dependency
# at pyproject's floor: about 25 minutes (docs/tools.md, "Python and dependency versions")
compat: venv
	$(BIN)/python tools/compat.py --python 3.10 --python 3.12 --python 3.13 --oldest 3.10

demo: base
	$(BIN)/gradc compile examples/mlp/forward.pb -o examples/mlp/train.pb
	$(BIN)/gradc run examples/mlp/train.pb --feed examples/mlp/feed.npz --params examples/mlp/params.npz \
		--fetch mean_0.tmp_0 --fetch fc_0.w_0@GRAD --out examples/mlp/results.npz
	$(BIN)/gradc compile examples/mlp/forward.pb -o examples/mlp/train_adam.pb --optimizer adam --lr 0.01
	$(BIN)/gradc train examples/mlp/train_adam.pb --startup examples/mlp/train_adam.startup.pb \
		--params examples/mlp/params.npz --feed examples/mlp/feed.npz --steps 50 --log-every 10 --fetch mean_0.tmp_0

# A CNN for 8x8 handwritten digits (examples/digits, built with Paddle's layers): compile with Adam and a cosine
# schedule as ops, train 5 epochs with evaluation, export for inference, run the export on ten test images.
digits: base
	$(BIN)/pip install --quiet -e '.[plot]'
	$(BIN)/gradc compile $(DIGITS)/forward.pb -o $(DIGITS)/train.pb --optimizer adam --lr 0.01 \
		--lr-schedule cosine --decay-steps 115 --warmup-steps 10
	$(BIN)/gradc train $(DIGITS)/train.pb --startup $(DIGITS)/startup.pb --startup $(DIGITS)/train.startup.pb \
		--data $(DIGITS)/train.npz --eval $(DIGITS)/test.npz --epochs 5 --batch-size 64 --shuffle --seed 0 \
		--fetch mean_0.tmp_0 --fetch accuracy_0.tmp_2 --save-params $(DIGITS)/trained.npz --plot $(DIGITS)/loss.png
	$(BIN)/gradc export $(DIGITS)/train.pb --params $(DIGITS)/trained.npz --input img --fetch softmax_0.tmp_0 \
		-o $(DIGITS)/model
	$(BIN)/gradc evaluate $(DIGITS)/model.pdmodel --params $(DIGITS)/model.pdiparams --data $(DIGITS)/test.npz
	$(BIN)/gradc run $(DIGITS)/model.pdmodel --params $(DIGITS)/model.pdiparams --feed $(DIGITS)/sample.npz \
		--out $(DIGITS)/predictions.npz

# Regenerates the committed protobuf code from proto/gradc/framework.proto.
proto: venv
	rm -rf build/proto && mkdir -p build/proto
	$(BIN)/python -m grpc_tools.protoc -Iproto --python_out=build/proto proto/gradc/framework.proto
	mv build/proto/gradc/framework_pb2.py src/gradc/proto/framework_pb2.py

lint: venv
	$(BIN)/ruff check src tests benchmarks

# Speed and memory targets live here, not in the tests. benchmarks/perf.py measures issue 13's table side by side
# in one run: Paddle where PADDLE_PYTHON imports paddle (skipped with a message otherwise), and an older gradc
# alongside with BASELINE=<git ref>. Results go to the untracked benchmarks/results/; benchmarks/README.md
# records the latest figures by hand.
PADDLE_PYTHON ?= $(BIN)/python
BASELINE ?=
bench: venv
	$(if $(BASELINE),rm -rf build/baseline && mkdir -p build/baseline && git archive $(BASELINE) src | tar -x -C build/baseline)
	$(BIN)/python benchmarks/perf.py --paddle-python $(PADDLE_PYTHON) $(if $(BASELINE),--baseline build/baseline/src) \
		--out benchmarks/results/perf.txt
	$(BIN)/python benchmarks/compile_scaling.py --out benchmarks/results/compile_scaling.txt
	$(BIN)/python benchmarks/conv2d.py --out benchmarks/results/conv2d.txt
	$(BIN)/python benchmarks/while_memory.py --out benchmarks/results/while_memory.txt
	$(BIN)/python benchmarks/viewer.py --out benchmarks/results/viewer.txt
	$(BIN)/python benchmarks/lstm.py $(if $(PADDLE_PYTHON),--paddle-python $(PADDLE_PYTHON)) --out benchmarks/results/lstm.txt
	$(BIN)/python benchmarks/models.py $(if $(PADDLE_PYTHON),--paddle-python $(PADDLE_PYTHON)) --out benchmarks/results/models.txt
	$(BIN)/python benchmarks/memory.py --out benchmarks/results/memory.txt
	$(BIN)/python benchmarks/validation_cost.py --out benchmarks/results/validation_cost.txt
	$(BIN)/python benchmarks/pir_io.py --out benchmarks/results/pir_io.txt
	$(BIN)/python benchmarks/tool_scaling.py --out benchmarks/results/tool_scaling.txt

# Hostile inputs through every CLI command (tests/fuzzing.py); about 5 minutes on 2 cores.
fuzz: venv
	$(BIN)/python tests/fuzz_run.py --count 10000 --out fuzz-results.txt

clean:
	rm -rf $(VENV) build
