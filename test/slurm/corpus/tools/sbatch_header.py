#!/usr/bin/env python3
"""Read the #SBATCH header of a batch script the way sbatch does (rules
re-stated from SchedMD/slurm src/sbatch/opt.c, _opt_batch_script/get_argument):

* lines are split on '\n' only;
* a line is a directive only if it starts, at column 0, with "#SBATCH"
  (or the legacy "#SLURM");
* any other line whose first non-blank character is not '#' is a command:
  parsing stops there and every later #SBATCH line is ignored;
  blank lines and other comment lines (incl. "#!", "# SBATCH", "##SBATCH",
  and indented "  #SBATCH") are skipped;
* a directive line is split into words like a tiny shell: whitespace
  separates words, '...' and "..." group, backslash escapes, and an
  unquoted '#' ends the line (trailing comment);
* all words are fed to getopt_long with optstring "+..." (stop at first
  non-option; an unknown option or stray word is an sbatch error);
  long options may be abbreviated to any unambiguous prefix; options with
  optional arguments (--exclusive, --requeue, ...) take one only as '=value'.

Usage: sbatch_header.py FILE...  -> one JSON object per file on stdout.
"""
import json, os, sys

OPTS = json.load(open(os.path.join(os.path.dirname(__file__), "sbatch_options.json")))
SHORT = {v["short"]: k for k, v in OPTS.items() if v["short"]}


def get_argument(s):
    """Return (word or None, rest, raw text of the word)."""
    i = 0
    while i < len(s) and s[i].isspace():
        i += 1
    if i >= len(s):
        return None, "", ""
    start = i
    out, quoted, q, esc = [], False, "", False
    started = False
    while i < len(s) and (quoted or not s[i].isspace()) and s[i] != "\n":
        c = s[i]
        if esc:
            esc = False
        elif c == "\\":
            i += 1
            if i < len(s) and s[i] == " ":
                out.append(" "); i += 1; started = True
            else:
                esc = True
            continue
        elif quoted:
            if c == q:
                quoted = False; i += 1; continue
        elif c in "\"'":
            quoted, q = True, c; i += 1; continue
        elif c == "#":
            break
        out.append(c); started = True; i += 1
    if quoted:
        raise ValueError("unmatched quote")
    return ("".join(out) if started else None), s[i:], s[start:i]


def header(text):
    words, ignored, stop_line = [], [], None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for n, line in enumerate(lines, 1):
        if stop_line is not None:
            if line.startswith("#SBATCH") or line.startswith("#SLURM"):
                ignored.append((n, line))
            continue
        if line.startswith("#SBATCH"):
            rest = line[7:]
        elif line.startswith("#SLURM"):
            rest = line[6:]
        else:
            st = line.lstrip()
            if st and not st.startswith("#"):
                stop_line = n
            continue
        while True:
            w, rest, raw = get_argument(rest)
            if w is None:
                break
            words.append((n, w, raw))
    return words, ignored, stop_line


def getopt(words):
    """Return list of (line, canonical_long_name, value or None, original_text), errors."""
    res, errs, i = [], [], 0
    while i < len(words):
        n, w, raw = words[i]
        if w.startswith("--") and len(w) > 2:
            name, eq, val = w[2:].partition("=")
            cands = [k for k in OPTS if k == name] or [k for k in OPTS if k.startswith(name)]
            if len(cands) != 1:
                errs.append(f"line {n}: unknown/ambiguous option {w}"); i += 1; continue
            k = cands[0]; ha = OPTS[k]["has_arg"]
            if ha == "required_argument" and not eq:
                if i + 1 >= len(words):
                    errs.append(f"line {n}: {w} needs an argument"); i += 1; continue
                val = words[i + 1][1]; orig = f"{raw} {words[i + 1][2]}"; i += 2
            else:
                orig = raw; i += 1
                if ha == "no_argument" and eq:
                    errs.append(f"line {n}: {w} takes no argument")
                if not eq:
                    val = None
            res.append((n, k, val, orig))
        elif w.startswith("-") and len(w) > 1:
            j = 1
            while j < len(w):
                c = w[j]
                if c not in SHORT:
                    errs.append(f"line {n}: unknown option -{c}"); break
                k = SHORT[c]; ha = OPTS[k]["has_arg"]
                if ha == "no_argument":
                    res.append((n, k, None, "-" + c)); j += 1; continue
                if j + 1 < len(w):
                    val = w[j + 1:]; orig = raw if j == 1 else "-" + c + val
                    res.append((n, k, val, orig)); break
                if ha == "optional_argument":
                    res.append((n, k, None, "-" + c)); break
                if i + 1 >= len(words):
                    errs.append(f"line {n}: -{c} needs an argument"); break
                val = words[i + 1][1]; rawv = words[i + 1][2]; i += 1
                res.append((n, k, val, (raw if j == 1 else "-" + c) + " " + rawv)); break
            i += 1
        else:
            errs.append(f"line {n}: Invalid directive found in batch script: {w}")
            break
    return res, errs


def main():
    for f in sys.argv[1:]:
        text = open(f, encoding="utf-8", errors="surrogateescape").read()
        words, ignored, stop = header(text)
        opts, errs = getopt(words)
        print(json.dumps({"file": os.path.basename(f), "first_command_line": stop,
                          "options": opts, "ignored": ignored, "errors": errs}))


if __name__ == "__main__":
    main()
