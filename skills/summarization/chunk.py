#!/usr/bin/env python3
"""Split a long text file into numbered chunks of about N words, with overlap.

Usage: python3 skills/summarization/chunk.py DOC.txt [--words 1500] [--overlap 100] [--out DIR]

Writes DIR/<stem>-chunk-001.txt, -002.txt, ... (DIR defaults to
<stem>-chunks in the current directory) and prints one line per chunk:
its path, its word range and its first words. Chunks end at a paragraph or
sentence boundary when one is near. Exit status: 0 done; 1 the file is
missing, empty or binary; 2 usage. Standard library only.
"""

import argparse
import os
import re
import sys

WORD = re.compile(r"\S+")
SENTENCE_END = re.compile(r"[.!?…][\"')\]]*$")


def fail(code, message):
    print(f"chunk.py: {message}", file=sys.stderr)
    sys.exit(code)


def read(path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        fail(1, f"cannot read {path}: {exc.strerror}")
    if b"\x00" in raw[:8192]:
        fail(1, f"{path} is binary; convert it to text first (e.g. pdftotext, or read_file)")
    text = raw.decode("utf-8", errors="replace")
    if not text.strip():
        fail(1, f"{path} is empty")
    return text


def boundaries(text):
    """Returns the words as (start, end) offsets and, per word, whether a
    paragraph (2) or a sentence (1) ends after it."""
    spans, ends = [], []
    for m in WORD.finditer(text):
        spans.append((m.start(), m.end()))
    for i, (s, e) in enumerate(spans):
        nxt = spans[i + 1][0] if i + 1 < len(spans) else len(text)
        if "\n\n" in text[e:nxt] or re.search(r"\n\s*\n", text[e:nxt]):
            ends.append(2)
        elif SENTENCE_END.search(text[s:e]):
            ends.append(1)
        else:
            ends.append(0)
    return spans, ends


def cut(ends, start, size, total):
    """The end (exclusive) of the chunk starting at word start: at most size
    words, pulled back to a paragraph, else a sentence end in its last fifth."""
    hard = min(start + size, total)
    if hard == total:
        return total
    floor = start + max(1, size * 4 // 5)
    for level in (2, 1):
        for i in range(hard - 1, floor - 1, -1):
            if ends[i] >= level:
                return i + 1
    return hard


def main():
    p = argparse.ArgumentParser(description="Split a text file into numbered chunks of about N words.")
    p.add_argument("file")
    p.add_argument("--words", type=int, default=1500, help="target words per chunk (default 1500)")
    p.add_argument("--overlap", type=int, default=100, help="words repeated from the end of the previous chunk (default 100)")
    p.add_argument("--out", help="output directory (default: <stem>-chunks)")
    args = p.parse_args()
    if args.words < 50:
        p.error("--words must be at least 50")
    if not 0 <= args.overlap < args.words // 2:
        p.error("--overlap must be between 0 and half of --words")

    text = read(args.file)
    spans, ends = boundaries(text)
    stem = os.path.splitext(os.path.basename(args.file))[0] or "doc"
    out = args.out or f"{stem}-chunks"
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        fail(1, f"cannot create {out}: {exc.strerror}")

    total, start, n = len(spans), 0, 0
    while start < total:
        end = cut(ends, start, args.words, total)
        n += 1
        path = os.path.join(out, f"{stem}-chunk-{n:03d}.txt")
        body = text[spans[start][0]:spans[end - 1][1]]
        with open(path, "w", encoding="utf-8") as f:
            f.write(body + "\n")
        preview = " ".join(w for w in WORD.findall(body)[:8])
        print(f"{path}\twords {start + 1}-{end}\t{preview} …")
        if end == total:
            break
        start = max(end - args.overlap, start + 1)
    print(f"{n} chunks of up to {args.words} words ({total} words, overlap {args.overlap})")


if __name__ == "__main__":
    main()
