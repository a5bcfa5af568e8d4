"""`make run`'s job, run as `make run` runs it: the whole exchange succeeds end to end."""

import subprocess
import sys


def test_the_main_job_runs_end_to_end() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "magi_code.demo"], capture_output=True, timeout=120, check=False
    )
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert "[edit_file completed]" in out and "[shell completed]" in out
    assert out.count("-> the client allows it") == 2
    assert 'hello.py now reads: print("Hello, world!")' in out
    assert "(complete: True)" in out
    assert out.count("exit 0") == 2
