"""What every --json test asks of a command's output: one strict JSON document (or, for gradc train, strict JSON
lines), or after bad input an empty stdout and one `gradc: error:` line."""

import json


def _refuse(constant):
    raise ValueError(f"{constant} is not strict JSON")


def strict(line: str):
    return json.loads(line, parse_constant=_refuse)   # NaN or Infinity would be refused


def document(done, code: int = 0) -> dict:
    assert done.returncode == code, done.stderr
    assert done.stderr == "" and len(done.stdout.splitlines()) == 1, (done.stdout, done.stderr)
    return strict(done.stdout)


def refused(done, code: int = 1) -> str:
    """Bad input: nothing on stdout, one error line on stderr."""
    assert (done.returncode, done.stdout) == (code, ""), (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gradc: error: "), done.stderr
    return lines[0]
