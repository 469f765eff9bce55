#!/usr/bin/env bash
# The README's lists are the code's: its exit-code table holds exactly the codes of core/exit_codes.h, and its
# decoders block names every decoder `vispec decoders` lists (and no other), so neither goes stale.
set -euo pipefail
vispec=$1 src=$2
py=${VISPEC_TEST_PYTHON:-/usr/bin/python3}
"$vispec" decoders > "${TMPDIR:-/tmp}/vispec_decoders.$$"
trap 'rm -f "${TMPDIR:-/tmp}/vispec_decoders.$$"' EXIT
"$py" - "$src/README.md" "$src/core/exit_codes.h" "${TMPDIR:-/tmp}/vispec_decoders.$$" <<'PY'
import re, sys
readme, header, listed = (open(p).read() for p in sys.argv[1:4])
table = readme[readme.index("| exit code | meaning |"):]
table = table[:table.index("\n\n")]
documented = sorted(int(m) for m in re.findall(r"^\| (\d+) \|", table, re.M))
coded = sorted(int(m) for m in re.findall(r"inline constexpr int kExit\w+ = (\d+);", header))
assert documented == coded, f"README exit codes {documented}, core/exit_codes.h {coded}"
block = readme[readme.index("## Decoders"):]
block = block[block.index("```yaml"):block.index("```\n", block.index("```yaml") + 7)]
in_readme = set(re.findall(r"decoder: \{name: (\w+)", block))
in_code = set(re.findall(r"^(\w+): ", listed, re.M))
assert in_readme == in_code, f"README decoders {sorted(in_readme)}, vispec decoders {sorted(in_code)}"
print(f"ok: exit codes {coded} and decoders {sorted(in_code)} as the code has them")
PY
