# Two commands: `make run` and `make test` set up whatever is missing, then do their job.
# `make setup` does the set-up alone (idempotent; quick when nothing changed).
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMPS := .build
SCENARIO ?= waypoints
SEED ?= 1
OUT ?= reports/$(SCENARIO)

# Debian packages: node for the MicroPython tier, the AVR toolchain and simavr for
# firmware-in-the-loop, Python headers/venv for the Cython build.
# node/npm come from Debian only where no node is installed (a nodesource node bundles npm).
NODE_APT := $(if $(shell command -v node && command -v npm),,nodejs npm)
APT_PACKAGES := python3-venv python3-dev build-essential pkg-config $(NODE_APT) \
	gcc-avr avr-libc binutils-avr arduino-core-avr simavr libsimavr2 libelf-dev avrdude

.PHONY: help setup setup-train run test test-fast bench clean firmware train-grading train-swarm train-soil train-alexi
help:
	@echo "make run    - set up, then run the default scenario ($(SCENARIO)) into $(OUT)/"
	@echo "make test   - set up, then run the whole test suite"
	@echo "make setup  - set up only (Debian packages, .venv with the project installed: harness,"
	@echo "              onboard-deploy, onboard-rpi, onboard-crazyflie commands; node packages, Cython build)"
	@echo "make bench  - run the benchmarks in bench/ (writes bench/results/*.json)"
	@echo "make firmware - build the AVR firmware (Uno + 32U4) and the simavr bridge, print flash/RAM"

SETUP_STAMPS = $(STAMPS)/apt $(STAMPS)/venv $(STAMPS)/install $(STAMPS)/node $(STAMPS)/cython $(STAMPS)/firmware
# the set-up steps that do not wait for each other (the Cython build beside the pip installs, the firmware and the
# node packages) run side by side in SETUP_JOBS make jobs: about a minute less on a fresh 2-core machine. The pip
# installs into .venv stay one after another (order-only prerequisites below).
SETUP_JOBS ?= 2
setup:
	@$(MAKE) --no-print-directory -j$(SETUP_JOBS) $(SETUP_STAMPS)

# setup and the torch extra, side by side in the same way
setup-train:
	@$(MAKE) --no-print-directory -j$(SETUP_JOBS) $(SETUP_STAMPS) $(STAMPS)/train-venv

$(STAMPS)/apt: Makefile scripts/ensure_apt.sh
	@mkdir -p $(STAMPS)
	scripts/ensure_apt.sh $(APT_PACKAGES)
	@touch $@

$(STAMPS)/venv: requirements.lock | $(STAMPS)/apt
	@mkdir -p $(STAMPS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.lock
	@touch $@

# the project itself, editable, with its console scripts (harness, onboard-deploy, onboard-rpi,
# onboard-crazyflie) in .venv/bin: they work from any folder
$(STAMPS)/install: pyproject.toml $(STAMPS)/venv
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -e .
	@touch $@

$(STAMPS)/node: package.json package-lock.json | $(STAMPS)/apt
	@mkdir -p $(STAMPS)
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

CYTHON_SOURCES := $(wildcard cython_ext/*.pyx cython_ext/*.pxd cython_ext/*.h) cython_ext/setup.py \
	$(wildcard cython_ext/uwb/*.pxd onboard/comms/uwb/*.py) harness/sim/radio/uwb_channel_frame.py \
	harness/sim/radio/uwb_channel_truth.py
$(STAMPS)/cython: $(CYTHON_SOURCES) $(STAMPS)/venv
	$(PY) cython_ext/setup.py -q build_ext --inplace -j $(shell nproc)
	@touch $@

# AVR firmware (firmware/arduino, Debian avr-gcc + arduino-core-avr) and the simavr bridge
# (firmware/simavr_bridge, libsimavr) for the firmware-in-the-loop tier.
FIRMWARE_SOURCES := $(wildcard firmware/arduino/Makefile firmware/arduino/robot_link/*) \
	$(wildcard firmware/simavr_bridge/Makefile firmware/simavr_bridge/*.c) \
	$(wildcard firmware/optiboot/Makefile firmware/optiboot/*.c)
$(STAMPS)/firmware: $(FIRMWARE_SOURCES) | $(STAMPS)/apt
	@mkdir -p $(STAMPS)
	$(MAKE) -j1 -s -C firmware/arduino sim
	$(MAKE) -j1 -s -C firmware/simavr_bridge
	$(MAKE) -j1 -s -C firmware/optiboot
	@touch $@

firmware: | $(STAMPS)/apt
	$(MAKE) -s -C firmware/arduino sim
	$(MAKE) -s -C firmware/simavr_bridge
	$(MAKE) -s -C firmware/optiboot
	@mkdir -p $(STAMPS) && touch $(STAMPS)/firmware

run: setup
	$(PY) -m harness run $(SCENARIO) --seed $(SEED) --out $(OUT)

# the tests include the training smoke runs (torch 2.13.0, CPU build; requirements-train.txt). They run in
# TEST_WORKERS processes (pytest-xdist), a test file per process at a time (--dist loadfile: a file's
# module fixtures are built once); TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= 2
test: setup-train
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25

test-fast: setup-train
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not slow and not fil"

bench: setup
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# Training (long, needs the torch extra, which `make test` also installs for the training smoke tests; committed models
# make it unnecessary for run).
$(STAMPS)/train-venv: requirements-train.txt $(STAMPS)/venv | $(STAMPS)/install
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-train.txt
	@touch $@

# The committed agents: agent1 with the defaults below on a 2-core x86 host (torch 2.13.0+cpu, 63 min); agent2 with
# GRADING_DEVICE=cuda GRADING_WORKERS=5 GRADING_THREADS=1 on one NVIDIA H200 (torch 2.11.0+cu130, 4.5 min). The weights
# depend on the device, the thread count and the torch version (float rounding); the data do not
GRADING_DEVICE ?= cpu
GRADING_WORKERS ?= 2
GRADING_THREADS ?= 2
GRADING_RECIPE = --channels 64 --episodes 1200 --epochs 8 --dagger-rounds 5 --dagger-episodes 30 --dagger-epochs 3 \
	--dagger-max-legs 16 --threads $(GRADING_THREADS) --seed 1 --aiding-error constant --start placed --label-sigma-cells 1.0 \
	--wall-height-m 0.3 --workers $(GRADING_WORKERS) --device $(GRADING_DEVICE)

train-grading: setup-train
	# Per agent 1200 expert episodes (cached in build/grading/; ~18 min each on 2 cores), 8 epochs of behaviour cloning
	# and 5 DAgger rounds of 30 episodes; the paper's 64 channels. agent1 learns from the noise-free trajectory (ag2u IV-B:
	# the expert's episodes and the DAgger rounds without noise); agent2 from sensor-fusion episodes with eq. 1 pose
	# samples, its DAgger rounds alternating sensor fusion and noise-less (SF, NL, SF, NL, SF). ~1 h per agent on 2 CPU cores
	$(PY) -m harness.training.grading_policy.train_policy $(GRADING_RECIPE) --agents agent1 --data-noise noise_less \
		--data build/grading/data1200-placed-nl.npz
	$(PY) -m harness.training.grading_policy.train_policy $(GRADING_RECIPE) --agents agent2 --dagger-noise sensor_fusion,noise_less \
		--data build/grading/data1200-placed.npz
	$(PY) -m harness.training.grading_policy.export_int8 --agent agent1
	$(PY) -m harness.training.grading_policy.export_int8 --agent agent2

# swarm (issue 11): shared DQN (-> int8 .tflite), GRU estimator (float weights -> int8 .tflite);
# deterministic (fixed iterations / stop step)
train-swarm: setup-train
	$(PY) -m harness.training.swarm_policy.train_dqn --env-steps 60000 --stop-at 5000 --batch 30 --lr 1.5e-4 --est-noise 0.2 --critical 0.6 --goal-scale 1.0 --shaping 5 --seed 1
	$(PY) -m harness.training.swarm_policy.export_dqn --seed 1
	# the float estimator learns from drones flown by that DQN (flight-like motion, pocket V-C.1); ~42 min CPU
	$(PY) -m harness.training.swarm_policy.train_bearing --hidden 128 --iters 30000 --batch 64 --seq-len 120 --data-scale 16 --data-policy models/swarm/dqn --seed 1
	$(PY) -m harness.training.swarm_policy.export_bearing --dir models/swarm/bearing

# soil: the learned physics-informed estimator (soil paper 2.1, Fig. 3): 268 episodes (cached in build/soil/; ~10 min
# on 2 cores), networks trained through the FEE: 3 reading the force as well (the default model) ->
# models/soil/estimator/, and the paper's 5 without the force (soil-ood) -> models/soil/estimator_kinematic/
train-soil: setup-train
	$(PY) -m harness.training.soil_estimator.train --episodes 268 --data-seed 1 --epochs 150 --hidden 128 128 --weight-decay 1e-3 \
		--members 3 --seed 1 --workers 2 --inputs force --out models/soil/estimator
	$(PY) -m harness.training.soil_estimator.train --episodes 268 --data-seed 1 --epochs 150 --hidden 128 128 --weight-decay 1e-3 \
		--members 5 --seed 1 --workers 2 --inputs kinematic --out models/soil/estimator_kinematic
	$(PY) -m harness.training.soil_estimator.train --episodes 268 --data-seed 1 --epochs 150 --hidden 128 128 --weight-decay 1e-3 \
		--members 5 --seed 1 --workers 2 --inputs controller --out models/soil/estimator_controller

# alexi (terrain-leveling thesis ch. 6): Sandbox sessions (test A + unseen B with seed 0; sessions on terrain A
# from other start poses: 1 and 2 train all nets, 4 (A at 5/3 of its height scale) also trains the V2 dtheta net,
# 3 is the validation session; ~3-5 min each), then the V1, V2 three-network and terrain networks (~6 min on 2
# idle cores), the V2 speed net (the epoch best on the validation session up to 300, ~12 min; then its affine
# output calibration, least squares on the validation session, into its card) and the V2 dtheta
# net (tilt-shuffle augmentation, the same selection; ~13 min idle, 20-50 min loaded)
# -> models/alexi/<net>/{model.tflite,card.json,float_layers.npz}
ALEXI_DATA = build/alexi
ALEXI_SETS = --seed 1 --train $(ALEXI_DATA)/train_1/sandbox_A.npz $(ALEXI_DATA)/train_2/sandbox_A.npz \
	--test $(ALEXI_DATA)/test/sandbox_A.npz --out models/alexi
ALEXI_DYAW = --seed 1 --train $(ALEXI_DATA)/train_1/sandbox_A.npz $(ALEXI_DATA)/train_2/sandbox_A.npz \
	$(ALEXI_DATA)/train_4/sandbox_A.npz --val $(ALEXI_DATA)/train_3/sandbox_A.npz \
	--test $(ALEXI_DATA)/test/sandbox_A.npz --out models/alexi
train-alexi: setup-train
	$(PY) -m harness run sandbox-datagen --seed 0 --quiet --out $(ALEXI_DATA)/test
	for k in 1 2 3 4; do $(PY) -m harness run sandbox-datagen --seed $$k --quiet --out $(ALEXI_DATA)/train_$$k \
		--set config.file=harness/training/alexi/sessions/train_$$k.ini --set 'terrains=["A"]' || exit 1; done
	$(PY) -m harness.training.alexi.train $(ALEXI_SETS) --nets v1_speed,v1_dyaw,v2_dnorth,v2_deast,terrain
	$(PY) -m harness.training.alexi.train $(ALEXI_SETS) --val $(ALEXI_DATA)/train_3/sandbox_A.npz \
		--nets v2_speed --v2-epochs 300 --val-every 5
	$(PY) -m harness.training.alexi.calibrate --net v2_speed --val $(ALEXI_DATA)/train_3/sandbox_A.npz
	$(PY) -m harness.training.alexi.train $(ALEXI_DYAW) --nets v2_dyaw --v2-epochs 300 --tilt-shuffle 0.5

clean:
	rm -rf $(STAMPS) build cython_ext/build cython_ext/*.so cython_ext/*.c cython_ext/uwb/*.so reports
	rm -rf firmware/arduino/build firmware/simavr_bridge/build firmware/optiboot/build
