"""A benchmark's worker: a subprocess answering one JSON line per JSON request line (perf.py's gradc and Paddle
workers, models.py's Paddle worker). Its stderr is kept so that a worker that stops can say why."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile


class WorkerError(RuntimeError):
    pass


class Worker:
    def __init__(self, name: str, command: list[str], env: dict[str, str]):
        self.name = name
        self.errors = tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors,
                                        text=True, env={**os.environ, **env})

    def answer(self, what: str) -> dict:
        """The next JSON line the worker prints (Paddle may print lines of its own first)."""
        for line in self.process.stdout:
            if line.startswith("{"):
                return json.loads(line)
        raise WorkerError(f"{self.name} exited while answering {what}")

    def request(self, message: dict, what: str) -> dict:
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except OSError:   # the worker died: answer() finds nothing more
            pass
        return self.answer(what)

    def last_error(self) -> str:
        """The last line the worker wrote to stderr, else its exit status."""
        self.errors.seek(0)
        return (self.errors.read().strip().splitlines() or [f"exit status {self.process.poll()}"])[-1]

    def close(self) -> None:
        try:
            self.process.stdin.close()
        except OSError:
            pass
        self.process.wait(timeout=60)
        self.errors.close()
