"""One page's ``python manage.py shell``, driven by the docs runner (tests/adoption/docs_runner.py).

This file's text is what the runner passes to ``python manage.py shell -c`` in the reader's
project, so the blocks run in the namespace a reader's shell has (Django 5.2's automatic model
imports included). It reads one JSON request a line on stdin, ``{"kind": "python" | "pycon",
"code", "path", "line"}``, runs it in that one namespace and answers one JSON line,
``{"output", "error"}``. Standard library only: it runs in the reader's virtualenv.

The answers go to the process's original stdout, which is then pointed at stderr (the shell's
log): a handler or thread that kept the original ``sys.stdout`` (a logging handler made before
the block, a library printing from a thread) cannot write into the answer stream.
"""

import contextlib
import doctest
import io
import json
import os
import sys
import traceback

_namespace = globals()
sys.stdout.flush()
_answers = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)

for _request_line in sys.stdin:
    _request = json.loads(_request_line)
    _captured = io.StringIO()
    _error = None
    try:
        with contextlib.redirect_stdout(_captured), contextlib.redirect_stderr(_captured):
            if _request["kind"] == "pycon":
                _test = doctest.DocTestParser().get_doctest(
                    _request["code"],
                    _namespace,
                    _request["path"],
                    _request["path"],
                    _request["line"] - 1,
                )
                _runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
                _runner.run(_test, clear_globs=False, out=_captured.write)
                if _runner.failures:
                    _error = "the session's shown output differs (above)"
            else:
                _code = "\n" * (_request["line"] - 1) + _request["code"]
                exec(compile(_code, _request["path"], "exec"), _namespace)
    except BaseException:  # the reader sees the traceback; the runner reports it
        _error = traceback.format_exc()
    _answers.write(json.dumps({"output": _captured.getvalue(), "error": _error}) + "\n")
    _answers.flush()
