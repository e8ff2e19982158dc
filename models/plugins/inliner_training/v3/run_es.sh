#!/bin/bash
# ES runs of this session: counts only, then with IR2Vec vectors (same modules, seed).
cd /work/wt/inl4
export PYTHONPATH=$PWD/python RAY_AUTH_MODE=disabled RAY_worker_niceness=5
common="--workers 2 --max-train 60 --max-validation 24 --iterations 12 --pairs 4 --modules-per-iteration 8 --eval-every 2 --cache build/runs/cache --quiet"
nice -n 10 .venv/bin/python -m mlbridge.train inliner --out build/runs/es-counts $common > build/runs/es-counts.log 2>&1
echo "counts rc=$?" >> build/runs/status
nice -n 10 .venv/bin/python -m mlbridge.train inliner --out build/runs/es-ir2vec --embeddings $common > build/runs/es-ir2vec.log 2>&1
echo "ir2vec rc=$?" >> build/runs/status
