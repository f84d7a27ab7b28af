"""The child-process helper stops a child that runs past its limit and says where it was."""

from __future__ import annotations

import pytest
from children import ChildHung, run_python


def test_a_child_past_its_limit_is_stopped_with_every_threads_stack() -> None:
    code = """
        import threading, time
        def wait_forever():
            threading.Event().wait()
        threading.Thread(target=wait_forever, name="helper").start()
        print("started", flush=True)
        time.sleep(600)
        """
    with pytest.raises(ChildHung) as caught:
        run_python(code, timeout=3)
    message = str(caught.value)
    assert "ran past 3 s" in message
    assert "started" in message  # what it printed before
    # faulthandler's dump: the main thread in its sleep, the other in its wait
    assert "in wait_forever" in message, message
    assert 'File "<string>", line 7 in <module>' in message, message


def test_what_a_hung_child_forked_is_stopped_with_it() -> None:
    # A forked grandchild keeps the pipes open: without stopping it too, reading the child's
    # output would wait for it.
    code = """
        import os, time
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        print("forked", flush=True)
        time.sleep(600)
        """
    with pytest.raises(ChildHung) as caught:
        run_python(code, timeout=3)
    assert "forked" in str(caught.value)
