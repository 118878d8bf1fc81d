# scripts/plot-metrics.py as the README runs it: a Python without matplotlib (python3 -S: no
# site-packages) runs the script again with the Python of scripts/setup.sh's test
# environment when one has matplotlib (a stand-in here that prints what it was given), and
# otherwise says how to get matplotlib (exit 2). A bad metrics file is exit 1.
S=$MG_CLI_DIR/../../scripts/plot-metrics.py
printf '{"kind": "train", "iteration": 1, "loss": 5.0, "tokens_per_s": 10.0, "mfu": null}\n' > m.jsonl
mkdir -p cache/mgtools/venv-0123/bin cache/mgtools/venv-0123/lib/python3.11/site-packages/matplotlib
printf '#!/bin/sh\necho "setup python: $(basename "$1") $2 $3 (rerun=$MG_PLOT_METRICS_RERUN)"\n' \
  > cache/mgtools/venv-0123/bin/python
chmod +x cache/mgtools/venv-0123/bin/python
XDG_CACHE_HOME=$PWD/cache python3 -S "$S" m.jsonl out.png
echo "exit $?"
touch cache/mgtools/venv-0123/.complete
XDG_CACHE_HOME=$PWD/cache python3 -S "$S" m.jsonl out.png
echo "exit $?"
XDG_CACHE_HOME=$PWD/cache MG_PLOT_METRICS_RERUN=1 python3 -S "$S" m.jsonl out.png
echo "exit $?"
echo '{oops' > bad.jsonl
python3 -S "$S" bad.jsonl out.png
echo "exit $?"
