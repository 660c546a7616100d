#!/usr/bin/env python3
"""The size rules of docs/architecture.md, measured on src/: no file over MAX_FILE lines and no
function over MAX_FUNCTION lines (a function: a braced body opened at namespace or class scope
after a parameter list; a kernel's or symbolic's registered lambda counts as one). Prints each
breach as FILE:LINE and exits 1 if any; --list prints the longest functions instead."""
import os
import re
import sys

MAX_FILE = 600
MAX_FUNCTION = 150


def strip(text):
    """The text with comments, string and character literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j, n - 1) - i + 1))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, line count) of each function body in the file."""
    text = strip(open(path, encoding="utf-8", errors="replace").read())
    stack = []  # per open brace: "container", "function" or "block"
    header_start = 0  # where the text before the next brace at this level begins
    result = []
    line = 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            header = text[header_start:i]
            inside_function = "function" in stack
            if inside_function:
                kind = "block"
            elif re.search(r"\b(namespace|class|struct|union|enum)\b[^()]*$", header) or re.search(r'extern\s*$', header):
                kind = "container"
            elif ")" in header or "]" in header:
                kind = "function"
                name = re.sub(r"\s+", " ", header.strip().splitlines()[-1] if header.strip() else "?")[:80]
                start = line
            else:
                kind = "block"  # an initializer list at namespace scope
            stack.append((kind, line, header))
            header_start = i + 1
        elif c == "}":
            if stack:
                kind, start_line, header = stack.pop()
                if kind == "function":
                    name = re.sub(r"\s+", " ", " ".join(header.split())[-80:])
                    result.append((name, start_line, line - start_line + 1))
            header_start = i + 1
        elif c == ";" and not any(k == "function" for k, _, _ in stack):
            header_start = i + 1
    return result


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    src = os.path.join(root, "src")
    listing = "--list" in sys.argv
    breaches, found = [], []
    for folder, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".cpp", ".h")):
                continue
            path = os.path.join(folder, f)
            rel = os.path.relpath(path, root)
            lines = sum(1 for _ in open(path, encoding="utf-8", errors="replace"))
            if lines > MAX_FILE:
                breaches.append(f"{rel}: {lines} lines, over {MAX_FILE}: cut it by idea")
            for name, start, count in functions(path):
                found.append((count, rel, start, name))
                if count > MAX_FUNCTION:
                    breaches.append(f"{rel}:{start}: a function of {count} lines, over {MAX_FUNCTION}: {name}")
    if listing:
        for count, rel, start, name in sorted(found, reverse=True)[:40]:
            print(f"{count:5d} {rel}:{start} {name}")
        return 0
    for b in breaches:
        print("code shape:", b)
    if not breaches:
        print(f"code shape: every file under src/ is at most {MAX_FILE} lines and every function at most {MAX_FUNCTION}")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
