#!/usr/bin/env python3
"""Puts recorded results into the documentation, so that no figure there is typed by hand.

    python3 bench/splice_readme.py [--check] README.md docs bench/results

Every block
    <!-- results: NAME -->
    ...
    <!-- /results -->
in each Markdown file named (a directory names its *.md files) is replaced by RESULTS_DIR/NAME.md (written by
`vispec bench`, `vispec eval-floors` or a bench/ script); RESULTS_DIR is the last argument. With --check,
changes nothing and exits 1 if any block differs from its file (CI runs this).
"""
import re
import sys
from pathlib import Path

BLOCK = re.compile(r"(<!-- results: ([A-Za-z0-9._-]+) -->\n)(.*?)(<!-- /results -->)", re.S)


def splice(doc, results, check):
    """Fills doc's blocks from results; returns the names of the blocks that differed."""
    text = doc.read_text()
    stale = []

    def fill(m):
        source = results / (m.group(2) + ".md")
        if not source.exists():
            sys.exit(f"{doc}: results block '{m.group(2)}': {source} does not exist")
        body = source.read_text()
        if body != m.group(3):
            stale.append(m.group(2))
        return m.group(1) + body + m.group(4)

    new = BLOCK.sub(fill, text)
    if not check and new != text:
        tmp = doc.with_name(doc.name + ".tmp")
        tmp.write_text(new)
        tmp.replace(doc)
    return stale


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    results = Path(args[-1])
    docs = []
    for a in map(Path, args[:-1]):
        docs += sorted(a.glob("*.md")) if a.is_dir() else [a]
    failed = False
    for doc in docs:
        stale = splice(doc, results, check)
        if check and stale:
            print(f"{doc}: results blocks differ from {results}: {', '.join(stale)} "
                  f"(run: python3 bench/splice_readme.py {' '.join(args)})", file=sys.stderr)
            failed = True
        elif not check:
            print(f"{doc}: {len(stale)} results block(s) updated")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
