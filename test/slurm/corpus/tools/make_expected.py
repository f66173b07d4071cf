#!/usr/bin/env python3
"""Build expected.tsv from the scripts with sbatch_header.py's reading.
calls_srun / uses_scontrol_hostnames: a non-comment line uses the word `srun`
/ the text `scontrol show hostname(s)` (checked by hand afterwards)."""
import json, os, re, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "scripts")
COLS = ["file", "nodes", "ntasks", "ntasks_per_node", "cpus_per_task", "gpus",
        "gpus_per_node", "gpus_per_task", "mem", "mem_per_cpu", "mem_per_gpu",
        "array", "exclusive", "constraint", "other_directives", "calls_srun",
        "uses_scontrol_hostnames"]
MAP = {"nodes": "nodes", "ntasks": "ntasks", "ntasks-per-node": "ntasks_per_node",
       "tasks-per-node": "ntasks_per_node", "cpus-per-task": "cpus_per_task",
       "gpus": "gpus", "gpus-per-node": "gpus_per_node", "gpus-per-task": "gpus_per_task",
       "mem": "mem", "mem-per-cpu": "mem_per_cpu", "mem-per-gpu": "mem_per_gpu",
       "array": "array", "constraint": "constraint"}

files = sorted(f for f in os.listdir(SCRIPTS) if f.endswith(".sh"))
out = subprocess.run([sys.executable, os.path.join(HERE, "sbatch_header.py")] +
                     [os.path.join(SCRIPTS, f) for f in files],
                     capture_output=True, text=True, check=True).stdout
rows = ["\t".join(COLS)]
for line in out.splitlines():
    d = json.loads(line)
    row = {c: "" for c in COLS}
    row["file"] = d["file"]
    row["exclusive"] = "no"
    other = []
    for n, name, val, orig in d["options"]:
        if name == "exclusive":
            row["exclusive"] = "yes" if val in (None, "") else val
        elif name == "gres" and re.fullmatch(r"(gres/)?gpu(:[^:,]+)?:\d+", val or ""):
            row["gpus_per_node"] = re.sub(r"^(gres/)?gpu:", "", val)
        elif name in MAP:
            row[MAP[name]] = val
        else:
            other.append(orig)
    for n, text in d["ignored"]:
        other.append("IGNORED: " + text[len("#SBATCH"):].strip())
    text_lines = open(os.path.join(SCRIPTS, d["file"]), encoding="utf-8",
                      errors="replace").read().split("\n")
    for e in d["errors"]:
        ln = int(re.match(r"line (\d+):", e).group(1))
        other.append("INVALID: " + text_lines[ln - 1].strip() + " -> sbatch: " + e.split(": ", 1)[1])
    row["other_directives"] = " ; ".join(other)
    body = [l for l in open(os.path.join(SCRIPTS, d["file"]), encoding="utf-8",
                            errors="replace").read().split("\n")
            if not l.lstrip().startswith("#")]
    row["calls_srun"] = "yes" if any(re.search(r"\bsrun\b", l) for l in body) else "no"
    row["uses_scontrol_hostnames"] = "yes" if any(
        re.search(r"scontrol\s+show\s+hostnames?\b", l) for l in body) else "no"
    for c in COLS:
        assert "\t" not in row[c] and "\n" not in row[c], (d["file"], c)
    rows.append("\t".join(row[c] for c in COLS))
open(os.path.join(HERE, "..", "expected.tsv"), "w").write("\n".join(rows) + "\n")
print(len(rows) - 1, "rows")
