#!/usr/bin/env python3
"""Summarise a CSV file as Markdown and draw one chart of it.

Usage: python3 skills/csv-analyzer/analyze.py DATA.csv [--out DIR]
           [--x COLUMN] [--y COLUMN] [--kind auto|bar|line|hist|scatter]

Writes DIR/<stem>-summary.md and DIR/<stem>-chart.png (DIR defaults to the
current directory), prints their paths and a short summary. Exit status:
0 done; 1 bad input (not a CSV, empty, unknown column); 2 usage; 3 the
summary was written but there is no numeric column to chart; 4 pandas or
matplotlib missing.
"""

import argparse
import csv
import os
import sys

RUNTIME_HINT = "needs the wick-sandbox-runtime image (python3, pandas, matplotlib)"
SNIFF_BYTES = 64 * 1024
TOP_VALUES = 5
MAX_BARS = 20
MAX_COLUMNS_IN_TABLE = 30


def fail(code, message):
    print(f"analyze.py: {message}", file=sys.stderr)
    sys.exit(code)


try:
    import pandas as pd
    import matplotlib

    matplotlib.use("Agg")  # no display in a sandbox
    import matplotlib.pyplot as plt
except ImportError as exc:
    fail(4, f"{exc.name or 'a module'} is not installed: this script {RUNTIME_HINT}")


def sniff(path):
    """Returns (delimiter, has_header) of path, or fails on non-CSV input."""
    try:
        with open(path, "rb") as f:
            raw = f.read(SNIFF_BYTES)
    except OSError as exc:
        fail(1, f"cannot read {path}: {exc.strerror}")
    if not raw.strip():
        fail(1, f"{path} is empty")
    if b"\x00" in raw:
        fail(1, f"{path} is not a CSV file (it holds binary data)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            text = raw.decode("latin-1")
        except UnicodeDecodeError:
            fail(1, f"{path} is not a CSV file (not text)")
    if len(raw) == SNIFF_BYTES:
        text = text[: text.rfind("\n") + 1] or text  # whole lines only
    sample = "\n".join(text.splitlines()[:50])
    try:
        dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
        delimiter = dialect.delimiter
    except csv.Error:
        lines = [l for l in sample.splitlines() if l.strip()]
        if len(lines) == 1 or not any(d in l for l in lines for d in ",;\t|"):
            delimiter = ","  # a single line, or a single column
        else:
            fail(1, f"{path} is not a CSV file (no consistent delimiter among , ; tab |)")
    return delimiter, has_header(sample, delimiter)


def has_header(sample, delimiter):
    """A first row is a header unless it holds a number and the sniffer,
    which compares it with the rows below, also thinks it is data: the
    sniffer alone takes the header of an all-text table for data."""
    first = next(csv.reader([sample.splitlines()[0]], delimiter=delimiter), [])
    if not any(is_number(cell) for cell in first):
        return True
    try:
        return csv.Sniffer().has_header(sample)
    except csv.Error:
        return True


def is_number(cell):
    try:
        float(cell.strip())
        return True
    except ValueError:
        return False


def load(path):
    delimiter, header = sniff(path)
    try:
        df = pd.read_csv(path, sep=delimiter, header=0 if header else None,
                         encoding_errors="replace", skipinitialspace=True)
    except pd.errors.EmptyDataError:
        fail(1, f"{path} is empty")
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        fail(1, f"{path} is not a CSV file ({first})")
    if not header:
        df.columns = [f"column_{i + 1}" for i in range(len(df.columns))]
    df.columns = [str(c).strip() for c in df.columns]
    if df.empty or len(df.columns) == 0:
        fail(1, f"{path} has a header but no data rows")
    # Dates are easier to chart as dates; try object columns that look like them.
    for col in df.columns:
        if df[col].dtype == object and looks_like_dates(df[col]):
            df[col] = pd.to_datetime(df[col], errors="coerce")
    return df, delimiter, header


def looks_like_dates(series):
    sample = series.dropna().astype(str).head(20)
    if sample.empty or not sample.str.contains(r"\d{4}-\d{1,2}|\d{1,2}/\d{1,2}/\d{2,4}").all():
        return False
    parsed = pd.to_datetime(sample, errors="coerce")
    return parsed.notna().mean() >= 0.9


def md_table(frame, index_name=""):
    """A pandas frame as a Markdown table, without the tabulate dependency."""
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join([index_name] + cols) + " |", "|" + "---|" * (len(cols) + 1)]
    for idx, row in frame.iterrows():
        cells = [fmt(v) for v in row.tolist()]
        lines.append("| " + " | ".join([str(idx)] + cells) + " |")
    return "\n".join(lines)


def fmt(v):
    if isinstance(v, float):
        if pd.isna(v):
            return ""
        return f"{v:.4g}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def kinds(df):
    numeric = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])]
    dates = [c for c in df.columns if pd.api.types.is_datetime64_any_dtype(df[c])]
    categorical = [c for c in df.columns if c not in numeric and c not in dates]
    return numeric, categorical, dates


def summary_markdown(df, path, delimiter, header, numeric, categorical, dates):
    name = os.path.basename(path)
    delim_name = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}.get(delimiter, repr(delimiter))
    out = [f"# Summary of {name}", ""]
    out.append(f"- Rows: {len(df)}")
    out.append(f"- Columns: {len(df.columns)}")
    out.append(f"- Delimiter: {delim_name}; header row: {'yes' if header else 'no (columns named column_1 …)'}")
    out.append(f"- Numeric columns: {', '.join(numeric) or 'none'}")
    out.append(f"- Categorical columns: {', '.join(categorical) or 'none'}")
    if dates:
        out.append(f"- Date columns: {', '.join(dates)}")
    out += ["", "## Columns", "", "| column | dtype | non-null | missing | missing % | unique |", "|---|---|---|---|---|---|"]
    for col in df.columns[:MAX_COLUMNS_IN_TABLE]:
        s = df[col]
        miss = int(s.isna().sum())
        out.append(f"| {fmt(col)} | {s.dtype} | {int(s.notna().sum())} | {miss} | {100 * miss / len(df):.1f} | {int(s.nunique(dropna=True))} |")
    if len(df.columns) > MAX_COLUMNS_IN_TABLE:
        out.append(f"\n({len(df.columns) - MAX_COLUMNS_IN_TABLE} more columns not shown)")
    if numeric:
        desc = df[numeric].describe().T
        out += ["", "## Numeric columns", "", md_table(desc, "column")]
    if categorical:
        out += ["", "## Categorical columns", ""]
        for col in categorical[:MAX_COLUMNS_IN_TABLE]:
            top = df[col].astype("string").value_counts(dropna=True).head(TOP_VALUES)
            shown = ", ".join(f"{fmt(k)} ({v})" for k, v in top.items()) or "(all missing)"
            out.append(f"- **{fmt(col)}**: {int(df[col].nunique(dropna=True))} distinct; top: {shown}")
    if dates:
        out += ["", "## Date columns", ""]
        for col in dates:
            s = df[col].dropna()
            if not s.empty:
                out.append(f"- **{fmt(col)}**: {s.min().date()} to {s.max().date()}")
    return "\n".join(out) + "\n"


def choose_chart(df, numeric, categorical, dates, x, y, kind):
    """Returns (kind, x, y) for the chart; x is None for a histogram."""
    for col in (x, y):
        if col is not None and col not in df.columns:
            fail(1, f"no column {col!r}; columns are: {', '.join(map(str, df.columns))}")
    if y is not None and y not in numeric:
        fail(1, f"--y {y!r} is not numeric; numeric columns are: {', '.join(numeric) or 'none'}")
    if y is None:
        y = numeric[0] if numeric else None
        if x is not None and y == x and len(numeric) > 1:
            y = numeric[1]
    if y is None:
        return None, None, None
    if kind == "hist":
        return "hist", None, y
    if x is None and kind == "auto":
        if dates:
            return "line", dates[0], y
        if categorical:
            return "bar", categorical[0], y
        return "hist", None, y
    if x is None:
        x = (dates or categorical or [c for c in numeric if c != y] or [None])[0]
        if x is None:
            return "hist", None, y
    if kind == "auto":
        if x in dates or x in numeric:
            kind = "line" if x in dates or df[x].is_monotonic_increasing else "scatter"
        else:
            kind = "bar"
    return kind, x, y


def draw(df, kind, x, y, png):
    fig, ax = plt.subplots(figsize=(9, 5), dpi=100)
    if kind == "hist":
        df[y].dropna().plot.hist(ax=ax, bins=min(30, max(5, int(df[y].nunique()))), color="#4c72b0", edgecolor="white")
        ax.set_xlabel(y)
        title = f"Distribution of {y}"
    elif kind == "bar":
        grouped = df.groupby(x, dropna=True)[y].sum().sort_values(ascending=False)
        note = ""
        if len(grouped) > MAX_BARS:
            grouped, note = grouped.head(MAX_BARS), f" (top {MAX_BARS})"
        grouped.plot.bar(ax=ax, color="#4c72b0")
        ax.set_xlabel(x)
        ax.set_ylabel(f"sum of {y}")
        title = f"{y} by {x}{note}"
        plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    elif kind == "line":
        data = df[[x, y]].dropna()
        label = y
        # Rows that share an x (two regions in one month) are summed: one
        # point per x, not a line zigzagging between the rows.
        if data[x].duplicated().any():
            data = data.groupby(x)[y].sum().reset_index()
            label = f"sum of {y}"
        data = data.sort_values(x)
        ax.plot(data[x], data[y], marker="o" if len(data) <= 50 else None, color="#4c72b0")
        ax.set_xlabel(x)
        ax.set_ylabel(label)
        title = f"{label} over {x}"
        fig.autofmt_xdate()
    else:  # scatter
        ax.scatter(df[x], df[y], s=12, alpha=0.7, color="#4c72b0")
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        title = f"{y} against {x}"
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)
    return title


def main():
    p = argparse.ArgumentParser(description="Summarise a CSV file (Markdown) and chart it (PNG).")
    p.add_argument("csv", help="the CSV file to analyse")
    p.add_argument("--out", default=".", help="directory for the outputs (default: the current directory)")
    p.add_argument("--x", help="column for the x axis / the groups of a bar chart")
    p.add_argument("--y", help="numeric column to plot (default: the first numeric column)")
    p.add_argument("--kind", choices=["auto", "bar", "line", "hist", "scatter"], default="auto",
                   help="chart kind (default auto: line over a date column, else bar by the first categorical column, else histogram)")
    args = p.parse_args()

    df, delimiter, header = load(args.csv)
    numeric, categorical, dates = kinds(df)
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as exc:
        fail(1, f"cannot create output directory {args.out}: {exc.strerror}")
    stem = os.path.splitext(os.path.basename(args.csv))[0] or "data"
    summary_path = os.path.join(args.out, f"{stem}-summary.md")
    chart_path = os.path.join(args.out, f"{stem}-chart.png")

    kind, x, y = choose_chart(df, numeric, categorical, dates, args.x, args.y, args.kind)
    text = summary_markdown(df, args.csv, delimiter, header, numeric, categorical, dates)
    if kind is not None:
        text += f"\n## Chart\n\n![{kind} chart]({os.path.basename(chart_path)})\n"
    with open(summary_path, "w", encoding="utf-8") as f:
        f.write(text)

    print(f"summary: {summary_path}")
    print(f"rows: {len(df)}, columns: {len(df.columns)} ({len(numeric)} numeric, {len(categorical)} categorical, {len(dates)} date)")
    print(f"columns: {', '.join(map(str, df.columns))}")
    if kind is None:
        fail(3, f"no numeric column to chart in {args.csv}; the summary was written to {summary_path}")
    title = draw(df, kind, x, y, chart_path)
    print(f"chart: {chart_path} ({kind}: {title})")


if __name__ == "__main__":
    main()
