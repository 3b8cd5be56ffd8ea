#!/bin/sh
# Prints the path of a Python 3 that can import matplotlib, or exits 1 when none can.
# Debian's python3-matplotlib (what scripts/setup.sh installs) is importable only by Debian's own
# /usr/bin/python3; a python3 found earlier on PATH (pyenv, a virtualenv) does not see it. So the
# charting tools (scripts/plot.py, scripts/trace.py, scripts/test_tools.py) run under whichever
# of the two has it: `python3` first, so a user's own install wins.
for py in python3 /usr/bin/python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import matplotlib' >/dev/null 2>&1; then
        command -v "$py"
        exit 0
    fi
done
exit 1
