"""A fake fast run for the live view's tmux test (test_progress_tmux.py): ``python
progress_fake_run.py CELLS RUNNING`` drives make_progress on this terminal through CELLS matrix
cells, the first RUNNING - 1 done (every third failed, every fifth with a warning), cell RUNNING
left running until the process is killed."""

from __future__ import annotations

import sys
import time

from nasplan.progress import Place, make_progress


def main(cells: int, running: int) -> None:
    progress = make_progress()
    progress.host("nas", "ok, debian")
    progress.host("ws", "ok, debian")
    for cell in range(1, running + 1):
        test_id = f"smb[link=p2p{cell:02d},size=1GiB]"
        left = float((cells - cell + 1) * 6)
        progress.place(Place(test_id, cell, cells, "3", "941.2 Mbit/s", (left, left), "cell"))
        for repetition in (1, 2, 3):
            progress.test(test_id, repetition, 3, 6.0, "write")
            if cell == running:
                progress.rate(test_id, 941.2e6, 1.0)
                break
        if cell == running:
            break
        status = "failed" if cell % 3 == 0 else "ok"
        summary = "median 941.2 Mbit/s" + (" ⚠ wide spread" if cell % 5 == 0 else "")
        progress.test_done(test_id, status, "iperf3: refused" if status == "failed" else summary)
    time.sleep(600)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
