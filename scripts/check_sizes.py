#!/usr/bin/env python3
"""Lists the functions in src/ longer than 70 lines and the files longer than 600 (after
TigerBeetle's TIGER_STYLE: a function a reader can hold, a file a reader can hold).

Exits 1 when an offender is not in ALLOWED below, or when an entry of ALLOWED is no longer an
offender (so the list only ever shrinks, and says what is left). --list prints every function
and file over the limits, allowed or not, with its length.

A function is measured from the first line of its signature to its closing brace, blank lines
and comments included. The parser is a brace counter that knows comments, strings, raw strings
and character literals, not a C++ parser: a block at namespace or class scope whose header has a
closing parenthesis is a function (constructors and lambdas bound at namespace scope included);
lambdas inside a function count towards that function."""
import pathlib
import re
import sys

FUNCTION_LINES_MAX = 70
FILE_LINES_MAX = 600

# Offenders that stay, each with its reason. Keys are "path" for a file and "path: name" for a
# function, the name as --list prints it.
ALLOWED = {
    # Data tables: one entry a line, read as a table, not as steps.
    "src/domain/config.cpp: key_rows": "the config-key table",
    "src/report/glossary.cpp: add_service_terms": "glossary entries",
    "src/report/glossary.cpp: add_delivery_terms": "glossary entries",
}

root = pathlib.Path(__file__).resolve().parent.parent / "src"


def blank_out(text):
    """Returns text with comments, string and character literals and preprocessor lines replaced
    by spaces (newlines kept), so braces and parentheses inside them do not count."""
    out = []
    i = 0
    n = len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            while i < n and text[i] != "\n":
                # A preprocessor line continued with a backslash goes on.
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        if c == "\n":
            at_line_start = True
            out.append(c)
            i += 1
            continue
        if not c.isspace():
            at_line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        raw = re.match(r'R"([^(\s]*)\(', text[i:i + 20]) if c == "R" else None
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            closing = ")" + raw.group(1) + '"'
            end = text.find(closing, i + raw.end())
            end = n if end < 0 else end + len(closing)
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:end - 1]) + '"')
            i = end
            continue
        if c in "\"'":
            # A quote between digits is a digit separator (1'000), not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def function_name(header):
    """The name before the parameter list of a function header: the identifier (with its
    Class:: qualifiers) before the first '(' at depth 0, or 'operator...'."""
    depth = 0
    for index, c in enumerate(header):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth <= 0:
            name = r"((?:[A-Za-z_]\w*(?:<[^()]*>)?::)*~?(?:operator\s*\S+|[A-Za-z_]\w*))\s*$"
            match = re.search(name, header[:index])
            if match:
                return re.sub(r"\s+", "", match.group(1))
            return "(lambda)"
    return "(unnamed)"


def functions(text):
    """Yields (name, first_line, last_line) of each function defined at namespace or class
    scope."""
    blank = blank_out(text)
    line_of = []
    line = 1
    for c in blank:
        line_of.append(line)
        if c == "\n":
            line += 1
    stack = []  # per open brace: "namespace", "class", "function" or "block"
    header_start = 0
    function_start = None
    parentheses = 0  # open parentheses of the header being read
    for index, c in enumerate(blank):
        if c not in "(){};:":
            continue
        if "function" not in stack and c in "()":
            parentheses += 1 if c == "(" else -1
            continue
        if parentheses > 0:
            continue  # a brace inside a header's parentheses: a braced argument, not a block
        if c in ";{}":
            if c == "{":
                header = blank[header_start:index]
                inside_function = "function" in stack
                if inside_function:
                    kind = "block"
                elif re.search(r"\bnamespace\b", header) or re.search(r'\bextern\s+"', header):
                    kind = "namespace"
                elif re.search(r"\b(class|struct|union|enum)\b", header) and ")" not in header:
                    kind = "class"
                elif ")" in header and "=" not in re.sub(r"\boperator.*", "", header.split("(")[0]):
                    kind = "function"
                elif ")" in header and re.search(r"\]\s*\(", header):
                    kind = "function"  # a lambda bound at namespace scope
                else:
                    kind = "block"
                stack.append(kind)
                if kind == "function":
                    first = header_start + len(header) - len(header.lstrip())
                    function_start = (function_name(header.strip()), line_of[first])
            elif c == "}":
                kind = stack.pop() if stack else "block"
                if kind == "function" and "function" not in stack and function_start:
                    name, first_line = function_start
                    yield name, first_line, line_of[index]
                    function_start = None
            if "function" not in stack:
                header_start = index + 1
        elif c == ":" and "function" not in stack:
            # An access label (public:) ends a header; a constructor's initializer list does not
            # (its header already has its parameter list).
            before = blank[header_start:index]
            if re.fullmatch(r"\s*(public|private|protected)\s*", before):
                header_start = index + 1


def offenders():
    """Returns {key: lines} for every file and function over the limits."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".h", ".cpp"):
            continue
        relative = str(path.relative_to(root.parent))
        text = path.read_text()
        file_lines = text.count("\n")
        if file_lines > FILE_LINES_MAX:
            found[relative] = file_lines
        for name, first, last in functions(text):
            lines = last - first + 1
            if lines > FUNCTION_LINES_MAX:
                found[f"{relative}: {name}"] = lines
    return found


def main():
    found = offenders()
    if "--list" in sys.argv[1:]:
        for key, lines in sorted(found.items(), key=lambda item: -item[1]):
            mark = "  (allowed)" if key in ALLOWED else ""
            print(f"{lines:5d}  {key}{mark}")
        return 0
    problems = []
    for key, lines in sorted(found.items()):
        if key not in ALLOWED:
            limit = FILE_LINES_MAX if ":" not in key else FUNCTION_LINES_MAX
            problems.append(f"{key}: {lines} lines, over {limit}; split it (docs/architecture.md)")
    for key in sorted(ALLOWED):
        if key not in found:
            problems.append(f"{key}: allowed in scripts/check_sizes.py but no longer over the "
                            "limit; remove it from ALLOWED")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
