#!/usr/bin/env python3
"""Puts recorded results into the README, so that no figure there is typed by hand.

Every block
    <!-- results: NAME -->
    ...
    <!-- /results -->
in the README is replaced by RESULTS_DIR/NAME.md (written by `vispec bench` or `vispec eval-floors`).
With --check, changes nothing and exits 1 if any block differs from its file (CI runs this).
"""
import re
import sys
from pathlib import Path

BLOCK = re.compile(r"(<!-- results: ([A-Za-z0-9._-]+) -->\n)(.*?)(<!-- /results -->)", re.S)


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    readme, results = Path(args[0]), Path(args[1])
    text = readme.read_text()
    stale = []

    def fill(m):
        source = results / (m.group(2) + ".md")
        if not source.exists():
            sys.exit(f"{readme}: results block '{m.group(2)}': {source} does not exist")
        body = source.read_text()
        if body != m.group(3):
            stale.append(m.group(2))
        return m.group(1) + body + m.group(4)

    new = BLOCK.sub(fill, text)
    if check:
        if stale:
            print(f"{readme}: results blocks differ from {results}: {', '.join(stale)} "
                  f"(run: python3 bench/splice_readme.py {readme} {results})", file=sys.stderr)
            return 1
        return 0
    if new != text:
        tmp = readme.with_name(readme.name + ".tmp")
        tmp.write_text(new)
        tmp.replace(readme)
    print(f"{readme}: {len(stale)} results block(s) updated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
