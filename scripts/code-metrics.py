#!/usr/bin/env python3
"""Size figures of src/ for the architecture notes: largest files, production functions
over 60 and 100 lines, public items, `Error::Usage` uses, CLI flags quoted below src/cli,
README lines. A function is measured from its `fn` line to its closing brace; items inside
a `#[cfg(test)]` module are not production code and are left out.

    python3 scripts/code-metrics.py [--list]
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")


def strip(line):
    """The line without string/char literals and // comments (good enough for braces)."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    return line.split("//", 1)[0]


def functions(path):
    lines = path.read_text().splitlines()
    out, i, n = [], 0, len(lines)
    test_depth = None
    depth = 0
    while i < n:
        s = strip(lines[i])
        if test_depth is None and re.match(r"\s*#\[cfg\(test\)\]", lines[i]):
            # the next `mod` line opens a test module
            j = i + 1
            if j < n and re.match(r"\s*(pub\s+)?mod\s+\w+\s*\{", lines[j]):
                test_depth = depth
        m = FN.match(lines[i])
        if m and test_depth is None:
            # find the body's opening brace (or a `;` for a declaration)
            j, opened = i, False
            while j < n:
                t = strip(lines[j])
                if "{" in t:
                    opened = True
                    break
                if t.rstrip().endswith(";"):
                    break
                j += 1
            if opened:
                d, k = 0, j
                while k < n:
                    t = strip(lines[k])
                    d += t.count("{") - t.count("}")
                    if d <= 0 and k >= j:
                        break
                    k += 1
                out.append((k - i + 1, m.group(6), i + 1))
        depth += s.count("{") - s.count("}")
        if test_depth is not None and depth <= test_depth and "}" in s:
            test_depth = None
        i += 1
    return out


def main():
    src = sorted((ROOT / "src").rglob("*.rs"))
    sizes = sorted(((len(p.read_text().splitlines()), p) for p in src), reverse=True)
    fns = [(l, name, p, line) for p in src for (l, name, line) in functions(p)]
    over60 = sorted([f for f in fns if f[0] > 60], reverse=True)
    over100 = [f for f in over60 if f[0] > 100]
    pub = sum(
        len(re.findall(r"^\s*pub\s+(fn|async fn|struct|enum|trait|type|const|static|mod|use)\b",
                       p.read_text(), re.M))
        for p in src
    )
    usage = sum(p.read_text().count("Error::Usage(") + p.read_text().count("Usage(String)") for p in src)
    flags = sum(
        1
        for p in src
        if "src/cli" not in str(p) and "src/bin" not in str(p)
        for l in p.read_text().splitlines()
        if re.search(r"`?--[a-z][a-z0-9-]+", l)
    )
    # In messages only: string literals outside src/cli naming a flag, a quoted `lineage …`
    # command aside (what a command line a message shows is, is the CLI's to say).
    literal = re.compile(r'"((?:[^"\\]|\\.)*)"')
    quoted_cmd = re.compile(r"`lineage [^`]*`")
    flag = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]+")
    flags_in_messages = sum(
        1
        for p in src
        if "src/cli" not in str(p) and "src/bin" not in str(p)
        for l in p.read_text().splitlines()
        if not l.strip().startswith("//")
        and any(flag.search(quoted_cmd.sub("", m)) for m in literal.findall(l))
    )
    readme = len((ROOT / "README.md").read_text().splitlines())
    print(f"src lines: {sum(s for s, _ in sizes)} in {len(src)} files")
    print("largest files: " + ", ".join(f"{p.relative_to(ROOT)} {s}" for s, p in sizes[:5]))
    print(f"production functions: {len(fns)}; over 60 lines: {len(over60)}; over 100: {len(over100)}")
    print(f"pub items (pub fn/struct/enum/trait/type/const/static/mod/use lines): {pub}")
    print(f"Error::Usage uses: {usage}")
    print(f"lines outside src/cli quoting a --flag: {flags}, in string literals: {flags_in_messages}")
    print(f"README lines: {readme}")
    if "--list" in sys.argv:
        for l, name, p, line in over60:
            print(f"  {l:4} {p.relative_to(ROOT)}:{line} {name}")


main()
