PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv test demo proto lint bench fuzz clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

test: venv
	$(BIN)/pytest

demo: venv
	$(BIN)/gradc compile examples/mlp/forward.pb -o examples/mlp/train.pb
	$(BIN)/gradc run examples/mlp/train.pb --feed examples/mlp/feed.npz --params examples/mlp/params.npz \
		--fetch mean_0.tmp_0 --fetch fc_0.w_0@GRAD --out examples/mlp/results.npz
	$(BIN)/gradc compile examples/mlp/forward.pb -o examples/mlp/train_adam.pb --optimizer adam --lr 0.01
	$(BIN)/gradc train examples/mlp/train_adam.pb --startup examples/mlp/train_adam.startup.pb \
		--params examples/mlp/params.npz --feed examples/mlp/feed.npz --steps 50 --log-every 10 --fetch mean_0.tmp_0

# Regenerates the committed protobuf code from proto/gradc/framework.proto.
proto: venv
	rm -rf build/proto && mkdir -p build/proto
	$(BIN)/python -m grpc_tools.protoc -Iproto --python_out=build/proto proto/gradc/framework.proto
	mv build/proto/gradc/framework_pb2.py src/gradc/proto/framework_pb2.py

lint: venv
	$(BIN)/ruff check src tests benchmarks

# Speed and memory targets live here, not in the tests; each script compares side by side in one run.
bench: venv
	$(BIN)/python benchmarks/compile_scaling.py --out benchmarks/results/compile_scaling.txt
	$(BIN)/python benchmarks/conv2d.py --out benchmarks/results/conv2d.txt
	$(BIN)/python benchmarks/while_memory.py --out benchmarks/results/while_memory.txt
	$(BIN)/python benchmarks/viewer.py --out benchmarks/results/viewer.txt

# Hostile inputs through every CLI command (tests/fuzzing.py); about 5 minutes on 2 cores.
fuzz: venv
	$(BIN)/python tests/fuzz_run.py --count 10000 --out fuzz-results.txt

clean:
	rm -rf $(VENV) build
