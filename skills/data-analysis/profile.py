#!/usr/bin/env python3
"""Profile a CSV beyond the first look: correlations, group summaries, outliers.

Usage: python3 skills/data-analysis/profile.py DATA.csv [--by COLUMN] [--out DIR]

Writes DIR/<stem>-profile.md (DIR defaults to the current directory) and
prints its path and the strongest correlations. Exit status: 0 done; 1 bad
input; 2 usage; 4 pandas missing.
"""

import argparse
import os
import sys

RUNTIME_HINT = "needs the wick-sandbox-runtime image (python3, pandas, matplotlib)"
MAX_GROUPS = 20
TOP_PAIRS = 5


def fail(code, message):
    print(f"profile.py: {message}", file=sys.stderr)
    sys.exit(code)


try:
    import pandas as pd
except ImportError as exc:
    fail(4, f"{exc.name or 'a module'} is not installed: this script {RUNTIME_HINT}")


def load(path):
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as exc:
        fail(1, f"cannot read {path}: {exc.strerror}")
    if not head.strip():
        fail(1, f"{path} is empty")
    if b"\x00" in head:
        fail(1, f"{path} is not a CSV file (it holds binary data)")
    try:
        # sep=None lets pandas' python engine sniff the delimiter.
        df = pd.read_csv(path, sep=None, engine="python", encoding_errors="replace")
    except pd.errors.EmptyDataError:
        fail(1, f"{path} is empty")
    except (pd.errors.ParserError, ValueError, UnicodeDecodeError) as exc:
        fail(1, f"{path} is not a CSV file ({str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__})")
    df.columns = [str(c).strip() for c in df.columns]
    if df.empty:
        fail(1, f"{path} has no data rows")
    return df


def fmt(v):
    if isinstance(v, float):
        return "" if pd.isna(v) else f"{v:.4g}"
    return str(v).replace("|", "\\|")


def table(frame, index_name):
    cols = [str(c) for c in frame.columns]
    out = ["| " + " | ".join([index_name] + cols) + " |", "|" + "---|" * (len(cols) + 1)]
    for idx, row in frame.iterrows():
        out.append("| " + " | ".join([fmt(idx)] + [fmt(v) for v in row.tolist()]) + " |")
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description="Correlations, group summaries and outliers of a CSV file, as Markdown.")
    p.add_argument("csv")
    p.add_argument("--by", help="categorical column to group by (default: the first non-numeric one whose 2 to 20 distinct values repeat)")
    p.add_argument("--out", default=".", help="output directory (default: the current directory)")
    args = p.parse_args()

    df = load(args.csv)
    numeric = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])]
    other = [c for c in df.columns if c not in numeric]
    if args.by is not None and args.by not in df.columns:
        fail(1, f"no column {args.by!r}; columns are: {', '.join(df.columns)}")
    # A default group column must repeat its values: an id or a date per row groups nothing.
    by = args.by or next((c for c in other if 2 <= df[c].nunique() <= min(MAX_GROUPS, len(df) / 2)), None)

    name = os.path.basename(args.csv)
    md = [f"# Profile of {name}", "", f"{len(df)} rows, {len(df.columns)} columns; numeric: {', '.join(numeric) or 'none'}.", ""]

    pairs = []
    md += ["## Correlations", ""]
    if len(numeric) >= 2:
        corr = df[numeric].corr(method="pearson")
        md += ["Pearson correlation of the numeric columns (rows with both values):", "", table(corr, "column"), ""]
        for i, a in enumerate(numeric):
            for b in numeric[i + 1:]:
                r = corr.loc[a, b]
                if pd.notna(r):
                    pairs.append((abs(r), r, a, b))
        pairs.sort(reverse=True)
        md.append("Strongest pairs (|r| ≥ 0.7 strong, 0.4 to 0.7 moderate; correlation is not causation):")
        md.append("")
        for _, r, a, b in pairs[:TOP_PAIRS]:
            md.append(f"- {a} ~ {b}: r = {r:.3f}")
        md.append("")
    else:
        md += ["Fewer than two numeric columns: no correlations.", ""]

    md += ["## Groups", ""]
    if by and numeric:
        groups = df.groupby(by, dropna=False)[numeric]
        summary = groups.agg(["count", "mean", "sum"])
        summary.columns = [f"{c} {s}" for c, s in summary.columns]
        if len(summary) > MAX_GROUPS:
            summary = summary.head(MAX_GROUPS)
            md.append(f"(first {MAX_GROUPS} groups)")
        md += [f"Numeric columns per value of **{by}**:", "", table(summary, by), ""]
    elif not numeric:
        md += ["No numeric column to summarise per group.", ""]
    else:
        md += ["No categorical column with 2 to 20 repeating values to group by (pass --by).", ""]

    md += ["## Outliers", "", "Values outside 1.5 × IQR of each numeric column:", ""]
    for c in numeric:
        s = df[c].dropna()
        if s.empty:
            continue
        q1, q3 = s.quantile(0.25), s.quantile(0.75)
        lo, hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
        n = int(((s < lo) | (s > hi)).sum())
        md.append(f"- {c}: {n} outside [{lo:.4g}, {hi:.4g}]")
    if not numeric:
        md.append("- no numeric column")
    md += ["", "## Missing values", ""]
    missing = df.isna().sum()
    missing = missing[missing > 0]
    if missing.empty:
        md.append("None.")
    else:
        for c, n in missing.items():
            md.append(f"- {c}: {int(n)} ({100 * n / len(df):.1f} %)")

    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as exc:
        fail(1, f"cannot create output directory {args.out}: {exc.strerror}")
    stem = os.path.splitext(name)[0] or "data"
    out = os.path.join(args.out, f"{stem}-profile.md")
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(md) + "\n")
    print(f"profile: {out}")
    if by:
        print(f"grouped by: {by}")
    for _, r, a, b in pairs[:TOP_PAIRS]:
        print(f"correlation {a} ~ {b}: {r:.3f}")


if __name__ == "__main__":
    main()
