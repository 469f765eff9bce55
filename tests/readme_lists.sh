#!/usr/bin/env bash
# The README's lists are the code's: its exit-code table holds exactly the codes of core/exit_codes.h, and its
# decoders block names every decoder `vispec decoders` lists (and no other), so neither goes stale. And the
# binary lists as many decoders as decoding/ registers (a DecoderRegistration each): a decoder file that the
# linker dropped (a static library linked without WHOLE_ARCHIVE) would vanish from both lists without a word.
set -euo pipefail
vispec=$1 src=$2
py=${VISPEC_TEST_PYTHON:-/usr/bin/python3}
"$vispec" decoders > "${TMPDIR:-/tmp}/vispec_decoders.$$"
trap 'rm -f "${TMPDIR:-/tmp}/vispec_decoders.$$"' EXIT
"$py" - "$src/README.md" "$src/core/exit_codes.h" "${TMPDIR:-/tmp}/vispec_decoders.$$" "$src/decoding" <<'PY'
import glob, re, sys
readme, header, listed = (open(p).read() for p in sys.argv[1:4])
registrations = sum(len(re.findall(r"^const DecoderRegistration k\w+\(", open(f).read(), re.M))
                    for f in glob.glob(f"{sys.argv[4]}/**/*.cpp", recursive=True))
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
assert registrations == len(in_code), f"decoding/ registers {registrations} decoders, vispec decoders lists {len(in_code)}"
print(f"ok: exit codes {coded} and decoders {sorted(in_code)} as the code has them")
PY
