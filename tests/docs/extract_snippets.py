#!/usr/bin/env python3
"""Writes every fenced code block in the given Markdown files whose language
is cpp, c or fortran to OUT_DIR as a source file, and prints one line per
snippet: "<name> <language> <file>:<line>". tests/doc_snippets.cmake builds
each one as a program and runs it, so the documentation cannot rot.

Every such block must be a complete program. A block that is deliberately
not one says so with a different language tag (e.g. `c++`, `text`)."""
import pathlib
import re
import sys

EXT = {"cpp": ".cpp", "c": ".c", "fortran": ".f90"}


def main() -> int:
    out = pathlib.Path(sys.argv[1])
    root = pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for rel in sys.argv[3:]:
        lines = (root / rel).read_text().splitlines()
        stem = re.sub(r"[^A-Za-z0-9]+", "_", pathlib.Path(rel).with_suffix("").as_posix()).strip("_")
        k, i = 0, 0
        while i < len(lines):
            m = re.match(r"^```(\w+)\s*$", lines[i])
            if not m or m.group(1) not in EXT:
                i += 1
                continue
            lang, start = m.group(1), i + 1
            j = start
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            if j == len(lines):
                print(f"{rel}:{start}: unterminated code block", file=sys.stderr)
                return 1
            k += 1
            name = f"doc_{stem}_{k}"
            body = "\n".join(lines[start:j]) + "\n"
            path = out / (name + EXT[lang])
            if not path.exists() or path.read_text() != body:  # keep timestamps: no needless rebuilds
                path.write_text(body)
            print(f"{name} {lang} {rel}:{start}")
            i = j + 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
