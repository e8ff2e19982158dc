#!/bin/bash
# Second round: ES from the shipped policy (warm start), and a larger ES from
# the clone; 1 worker each, side by side (2 workers in total).
cd /work/wt/inl4
export PYTHONPATH=$PWD/python RAY_AUTH_MODE=disabled RAY_worker_niceness=5
common="--workers 1 --max-train 60 --max-validation 24 --iterations 16 --pairs 8 --modules-per-iteration 12 --eval-every 4 --lr 0.05 --cache build/runs/cache --build-dir build/corpus-ir --quiet"
nice -n 10 .venv/bin/python -m mlbridge.train inliner --out build/runs/es-shipped --warm-start models/plugins/inliner_policy.json $common > build/runs/es-shipped.log 2>&1 &
A=$!
# the second starts once the first has built the IR (its Ray session exists)
until ls /tmp/ray | grep -q "_$A\$" || ! kill -0 $A 2>/dev/null; do sleep 5; done
nice -n 10 .venv/bin/python -m mlbridge.train inliner --out build/runs/es-clone-big --change 0.01 $common > build/runs/es-clone-big.log 2>&1
echo "clone-big rc=$?" >> build/runs/status
wait $A; echo "shipped rc=$?" >> build/runs/status
